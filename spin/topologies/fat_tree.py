"""Three-tier k-ary fat tree (Al-Fares et al., SIGCOMM'08): k pods of k/2 edge and k/2
aggregation switches, (k/2)^2 core switches; k^3/4 hosts and 5k^2/4 switches when
non-blocking (k = 16: 1024 hosts, 320 switches; k = 64: 65,536 hosts, 5,120 switches).

Aggregation switch i of every pod links to the k/2 core switches of core group i. Every tier has
its own rate (default ``[link] rate_gbps``). ``oversubscription`` r puts r * k/2 hosts on each
edge switch instead of k/2 (the switches and their uplinks stay), so the edge tier is r:1
oversubscribed at equal rates, as in the 4:1 and 8:1 fat trees of the UEC htsim topologies.
"""
from __future__ import annotations

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .declare import ParamError, TopologyParams, builder, link_config


class FatTreeParams(TopologyParams):
    k: int = Field(4, ge=4, le=64, description="switch radix (ports per switch); even")
    oversubscription: int = Field(1, ge=1, le=16)
    host_rate_gbps: int | None = Field(None, gt=0, le=1600)
    edge_agg_rate_gbps: int | None = Field(None, gt=0, le=1600)
    agg_core_rate_gbps: int | None = Field(None, gt=0, le=1600)
    host_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    fabric_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)


def _rates(p: FatTreeParams, link: LinkConfig) -> tuple[int, int, int]:
    return (p.host_rate_gbps or link.rate_gbps, p.edge_agg_rate_gbps or link.rate_gbps,
            p.agg_core_rate_gbps or link.rate_gbps)


def _bisection(p: FatTreeParams, link: LinkConfig) -> float:
    """Half the pods on each side. A pod passes at most what its edge switches take in and
    send up, (k/2) * min(hosts_per_edge * host, (k/2) * edge_agg), and what its aggregation
    switches send to the core, (k/2)^2 * agg_core."""
    host, ea, ac = _rates(p, link)
    half = p.k // 2
    per_pod = min(half * min(p.oversubscription * half * host, half * ea), half * half * ac)
    return float(half * per_pod)


def _counts(p: FatTreeParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links)."""
    half = p.k // 2
    hosts = p.k * half * p.oversubscription * half
    return hosts, 5 * p.k * p.k // 4, hosts + 2 * p.k * half * half


@builder("fat_tree", FatTreeParams, _bisection, _counts)
def fat_tree(p: FatTreeParams, link: LinkConfig) -> Topology:
    """Three-tier k-ary fat tree. Pods ``p0..`` of edge switches ``p0e0..`` (with their hosts)
    and aggregation switches ``p0a0..``, then core switches ``c0..``. Hosts are numbered pod by
    pod, so the first half of the host ids is the first k/2 pods: all traffic between the
    halves crosses the core, the worst-case bisection."""
    if p.k % 2:
        raise ParamError("k", p.k, "must be even; valid: 4, 6, 8, ..., 64")
    host_rate, ea_rate, ac_rate = _rates(p, link)
    host_link = link_config(link, host_rate, p.host_latency_ns)
    ea_link = link_config(link, ea_rate, p.fabric_latency_ns)
    ac_link = link_config(link, ac_rate, p.fabric_latency_ns)
    half = p.k // 2
    t = Topology()
    for pod in range(p.k):
        edges = [t.add_switch(f"p{pod}e{e}", role="edge") for e in range(half)]
        aggs = [t.add_switch(f"p{pod}a{a}", role="agg") for a in range(half)]
        for e in edges:
            for _ in range(p.oversubscription * half):
                t.add_link(t.add_host(), e, host_link)
            for a in aggs:
                t.add_link(e, a, ea_link, kind="edge-agg")
    core = [t.add_switch(f"c{c}", role="core") for c in range(half * half)]
    for pod in range(p.k):
        for a in range(half):
            for c in core[a * half:(a + 1) * half]:
                t.add_link(f"p{pod}a{a}", c, ac_link, kind="agg-core")
    return t
