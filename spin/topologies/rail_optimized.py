"""Rail-optimised fat tree, as in the NVIDIA DGX SuperPOD reference architecture (NVIDIA, "DGX
SuperPOD: Next Generation Scalable Infrastructure for AI Leadership, Reference Architecture,
featuring NVIDIA DGX B200", Network Fabrics, https://docs.nvidia.com/dgx-superpod/reference-
architecture-scalable-infrastructure-b200/latest/network-fabrics.html): servers of
``gpus_per_server`` GPUs with one NIC each (8 in a DGX); ``servers_per_su`` servers form a
scalable unit (SU, 32 DGX B200 or H100 systems), which has one leaf per rail, and NIC i of every
server of the SU connects to leaf i. GPUs of the same rank in one SU are one switch apart;
traffic between SUs or between rails crosses the spines, which join the leaves of every rail.
Past one spine group (the RA's 16+ SU designs) SUs are grouped in pods of ``sus_per_pod`` with
their own spines, and spine j of every pod connects to core plane j (``spin.topologies.pods``).

Counts and defaults (non-blocking, one link from a leaf to each spine, and from a spine to each
core of its plane): a leaf has ``leaf_uplinks`` links (default ``servers_per_su``) spread over
``spines_per_pod`` spines, a spine ``spine_uplinks`` over ``cores_per_plane`` cores. The RA's
4-SU design (32 leaves, 16 spines, two links from each leaf to each spine) is ``servers = 128,
spines_per_pod = 16``; its 64-SU design (512 leaves, 512 spines, 256 cores) is ``servers =
2048, sus_per_pod = 4, spine_uplinks = 32, cores_per_plane = 8``. Oversubscription at a leaf is
``servers_per_su * nic_rate_gbps / (leaf_uplinks * fabric_rate_gbps)``.

How the server is modelled. With ``scale_up`` (default) each GPU is a router switch (role
``accelerator``, as in ``supernode``) owning its rail port and its NVLink port, and the GPU's NIC
is a host on an ``internal`` link to it (``internal_rate_gbps``, at most 1600 Gb/s); NVLink is one
scale-up switch per server (role ``scale-up``, the NVSwitch chips as one) with a link of
``nvlink_rate_gbps`` to every GPU of the server. This is slower than a real DGX: an H100's NVLink 4
moves 450 GB/s (3,600 Gb/s) each way (NVIDIA H100 datasheet: 900 GB/s in both directions), spin's
links carry at most 1,600 Gb/s, so intra-server transfers take up to 2.25x longer. A GPU's
router forwards only its own GPU's traffic (``transit=False``): a GPU sends other servers'
traffic by its own NIC, and network switches never route through a server, so cross-rail
traffic takes the spines, as the RA describes (NCCL's PXN, which moves data over NVLink to the
GPU on the destination's rail first, is a choice of the collective, not of the fabric). Without
``scale_up`` the NICs attach to the rail leaves directly and GPUs of one server reach each other
through the network.
"""
from __future__ import annotations

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .pods import PodShape, build_pods, pod_bisection, pod_links, pod_shape
from .declare import ParamError, TopologyParams, builder, link_config


class RailOptimizedParams(TopologyParams):
    servers: int = Field(4, ge=1, le=8192, description="servers (DGX systems) in all")
    gpus_per_server: int = Field(8, ge=1, le=16, description="GPUs, NICs and rails per server")
    servers_per_su: int = Field(2, ge=1, le=256, description="servers per scalable unit")
    sus_per_pod: int | None = Field(None, ge=1, le=256, description="SUs per spine group; "
                                    "default all (two tiers)")
    leaf_uplinks: int | None = Field(None, ge=1, le=512, description="links per leaf; default "
                                     "servers_per_su (non-blocking)")
    spines_per_pod: int | None = Field(None, ge=1, le=512, description="default leaf_uplinks; "
                                       "divides leaf_uplinks")
    spine_uplinks: int | None = Field(None, ge=1, le=512, description="links per spine to the "
                                      "cores; default its leaf links")
    cores_per_plane: int | None = Field(None, ge=1, le=512, description="default "
                                        "spine_uplinks; divides spine_uplinks")
    scale_up: bool = True
    nic_rate_gbps: int | None = Field(None, gt=0, le=1600, description="NIC to rail leaf")
    fabric_rate_gbps: int | None = Field(None, gt=0, le=1600, description="leaf-spine-core")
    nvlink_rate_gbps: int = Field(1600, gt=0, le=1600, description="GPU to scale-up switch")
    internal_rate_gbps: int = Field(1600, gt=0, le=1600, description="NIC to its GPU router")
    nic_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    fabric_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    nvlink_latency_ns: float = Field(10.0, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    internal_latency_ns: float = Field(1.0, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    router_latency_ns: float | None = Field(None, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    nvswitch_latency_ns: float | None = Field(None, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)


_NAMES = {"leaf_uplinks": "leaf_uplinks", "spines_per_pod": "spines_per_pod",
          "spine_uplinks": "spine_uplinks", "tops_per_plane": "cores_per_plane"}


def _shape(p: RailOptimizedParams) -> PodShape:
    if p.servers % p.servers_per_su:
        raise ParamError("servers", p.servers, f"must be whole scalable units: a multiple of "
                         f"servers_per_su = {p.servers_per_su} (the RA builds a partial SU's "
                         f"leaves and cables in full)")
    sus = p.servers // p.servers_per_su
    per_pod = p.sus_per_pod or sus
    if sus % per_pod:
        raise ParamError("sus_per_pod", p.sus_per_pod, f"must divide the {sus} scalable units "
                         f"(servers / servers_per_su)")
    return pod_shape(sus // per_pod, per_pod * p.gpus_per_server, p.servers_per_su,
                     p.leaf_uplinks, p.spines_per_pod, p.spine_uplinks, p.cores_per_plane,
                     _NAMES)


def _rates(p: RailOptimizedParams, link: LinkConfig) -> tuple[int, int]:
    return p.nic_rate_gbps or link.rate_gbps, p.fabric_rate_gbps or link.rate_gbps


def _bisection(p: RailOptimizedParams, link: LinkConfig) -> float | None:
    """Half the SUs on each side when their count is even (half the pods with several pods):
    the leaves' uplinks or the spines' carry what crosses. One SU: every GPU of the first half
    of the servers reaches its same-rank peer through its rail leaf."""
    shape = _shape(p)
    nic, fabric = _rates(p, link)
    sus = p.servers // p.servers_per_su
    if sus == 1:
        return (float(p.servers // 2 * p.gpus_per_server * nic)
                if p.servers % 2 == 0 else None)
    if shape.pods == 1 and sus % 2:
        return None
    value = pod_bisection(shape, p.servers_per_su * nic, fabric, fabric)
    return None if value is None else float(value)


def _counts(p: RailOptimizedParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links): with scale_up a router and an NVLink link per GPU, and a
    scale-up switch per server."""
    shape = _shape(p)
    gpus = p.servers * p.gpus_per_server
    server = p.servers + gpus if p.scale_up else 0
    return (gpus, shape.leaves + shape.spines + shape.tops + server,
            gpus * (3 if p.scale_up else 1) + pod_links(shape))


@builder("rail_optimized", RailOptimizedParams, _bisection, _counts)
def rail_optimized(p: RailOptimizedParams, link: LinkConfig) -> Topology:
    """Rail-optimised fat tree (NVIDIA DGX SuperPOD): NIC i of every server of a scalable unit
    on leaf i, spines joining the rails, cores joining pods of SUs. GPU routers ``s<S>g<i>``
    (server S, GPU i) and scale-up switches ``s<S>nv`` (with ``scale_up``), leaves
    ``su<U>r<i>`` (rail i of SU U), spines ``pod<P>s<j>`` (``spine<j>`` with one pod), cores
    ``core<j>.<c>``. Host ``S * gpus_per_server + i`` is GPU i of server S, so the first half of
    the host ids is the first half of the SUs, the worst-case bisection."""
    shape = _shape(p)
    nic_rate, fabric_rate = _rates(p, link)
    nic = link_config(link, nic_rate, p.nic_latency_ns)
    fabric = link_config(link, fabric_rate, p.fabric_latency_ns)
    nvlink = link_config(link, p.nvlink_rate_gbps, p.nvlink_latency_ns)
    internal = link_config(link, p.internal_rate_gbps, p.internal_latency_ns)
    g, per_su = p.gpus_per_server, p.servers_per_su
    per_pod = shape.leaves_per_pod // g         # SUs per pod
    t = Topology()
    pods = build_pods(t, shape, lambda pod, i: f"su{pod * per_pod + i // g}r{i % g}", "leaf",
                      "spine", "core", fabric, fabric)
    for s in range(p.servers):
        su = s // per_su
        leaves = pods[su // per_pod][(su % per_pod) * g:(su % per_pod + 1) * g]
        if not p.scale_up:
            for i in range(g):
                t.add_link(t.add_host(), leaves[i], nic, kind="rail")
            continue
        nvswitch = t.add_switch(f"s{s}nv", role="scale-up", latency_ns=p.nvswitch_latency_ns)
        for i in range(g):
            router = t.add_switch(f"s{s}g{i}", role="accelerator",
                                  latency_ns=p.router_latency_ns, transit=False)
            t.add_link(t.add_host(), router, internal, kind="internal")
            t.add_link(router, nvswitch, nvlink, kind="nvlink")
            t.add_link(router, leaves[i], nic, kind="rail")
    return t
