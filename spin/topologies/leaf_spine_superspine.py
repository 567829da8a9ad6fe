"""Three-tier leaf-spine-superspine fabric: pods of leaves and spines (a leaf-spine each), joined
by planes of superspines, as in Facebook's data-center fabric (A. Andreyev, "Introducing data
center fabric, the next-generation Facebook data center network", 2014: server pods of racks
and fabric switches, spine planes of spine switches) and the five-stage Clos fabrics built
after it.

Pod p has ``leaves_per_pod`` leaves with ``hosts_per_leaf`` hosts each and ``spines_per_pod``
spines; every leaf has ``leaf_uplinks`` links spread evenly over its pod's spines. Spine j of
every pod belongs to plane j and has ``spine_uplinks`` links spread evenly over the
``superspines_per_plane`` superspines of that plane. Oversubscription is a ratio of capacities:
at a leaf ``hosts_per_leaf * host_rate_gbps / (leaf_uplinks * fabric_rate_gbps)``, at a spine
``leaves_per_pod * leaf_uplinks / (spines_per_pod * spine_uplinks)`` (spine links at
``superspine_rate_gbps``). Defaults are non-blocking. 64-port switches, non-blocking:
``pods = 64, leaves_per_pod = 32, hosts_per_leaf = 32`` is 65,536 hosts on 5,120 switches.
"""
from __future__ import annotations

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .pods import PodShape, build_pods, pod_bisection, pod_links, pod_shape
from .declare import TopologyParams, builder, link_config


class LeafSpineSuperspineParams(TopologyParams):
    pods: int = Field(2, ge=1, le=512, description="pods (a leaf-spine each)")
    leaves_per_pod: int = Field(2, ge=1, le=512)
    hosts_per_leaf: int = Field(2, ge=1, le=512)
    leaf_uplinks: int | None = Field(None, ge=1, le=512, description="links per leaf; "
                                     "default hosts_per_leaf (non-blocking)")
    spines_per_pod: int | None = Field(None, ge=1, le=512, description="default leaf_uplinks; "
                                       "divides leaf_uplinks")
    spine_uplinks: int | None = Field(None, ge=1, le=512, description="links per spine; "
                                      "default its leaf links (non-blocking)")
    superspines_per_plane: int | None = Field(None, ge=1, le=512, description="default "
                                              "spine_uplinks; divides spine_uplinks")
    host_rate_gbps: int | None = Field(None, gt=0, le=1600)
    fabric_rate_gbps: int | None = Field(None, gt=0, le=1600, description="leaf-spine links")
    superspine_rate_gbps: int | None = Field(None, gt=0, le=1600, description="spine-"
                                             "superspine links; default fabric_rate_gbps")
    host_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    fabric_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)


_NAMES = {"leaf_uplinks": "leaf_uplinks", "spines_per_pod": "spines_per_pod",
          "spine_uplinks": "spine_uplinks", "tops_per_plane": "superspines_per_plane"}


def _resolve(p: LeafSpineSuperspineParams, link: LinkConfig) -> tuple[PodShape, int, int, int]:
    host = p.host_rate_gbps or link.rate_gbps
    fabric = p.fabric_rate_gbps or link.rate_gbps
    top = p.superspine_rate_gbps or fabric
    shape = pod_shape(p.pods, p.leaves_per_pod, p.hosts_per_leaf, p.leaf_uplinks,
                      p.spines_per_pod, p.spine_uplinks, p.superspines_per_plane, _NAMES)
    return shape, host, fabric, top


def _bisection(p: LeafSpineSuperspineParams, link: LinkConfig) -> float | None:
    """Half the pods on each side (half the leaves with one pod); a lone leaf: half its
    hosts."""
    shape, host, fabric, top = _resolve(p, link)
    if p.pods == 1 and p.leaves_per_pod == 1:
        return float(p.hosts_per_leaf // 2 * host)
    value = pod_bisection(shape, p.hosts_per_leaf * host, fabric, top)
    return None if value is None else float(value)


def _counts(p: LeafSpineSuperspineParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links)."""
    shape = _resolve(p, link)[0]
    hosts = shape.leaves * p.hosts_per_leaf
    return hosts, shape.leaves + shape.spines + shape.tops, hosts + pod_links(shape)


@builder("leaf_spine_superspine", LeafSpineSuperspineParams, _bisection, _counts)
def leaf_spine_superspine(p: LeafSpineSuperspineParams, link: LinkConfig) -> Topology:
    """Three-tier leaf-spine-superspine: pods of leaf-spines joined by superspine planes.
    Leaves ``pod<p>l<i>``, spines ``pod<p>s<j>`` (``spine<j>`` with one pod), superspines
    ``superspine<j>.<i>`` of plane j. Hosts are numbered pod by pod, so the first half of the
    host ids is the first half of the pods: all traffic between the halves crosses the
    superspines, the worst-case bisection."""
    shape, host, fabric, top = _resolve(p, link)
    host_link = link_config(link, host, p.host_latency_ns)
    leaf_link = link_config(link, fabric, p.fabric_latency_ns)
    top_link = link_config(link, top, p.fabric_latency_ns)
    t = Topology()
    pods = build_pods(t, shape, lambda pod, i: f"pod{pod}l{i}", "leaf", "spine", "superspine",
                      leaf_link, top_link)
    for leaves in pods:
        for leaf in leaves:
            for _ in range(p.hosts_per_leaf):
                t.add_link(t.add_host(), leaf, host_link)
    return t
