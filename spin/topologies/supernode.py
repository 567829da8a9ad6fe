"""Supernodes: scale-up domains of GPUs (NVLink / NVL72-style) with a scale-out network behind.

Inside a supernode every GPU has one port to each of ``planes`` switch planes. With
``layers = 1`` a plane is one switch that reaches all ``gpus`` GPUs (GB200 NVL72: 72 GPUs,
18 NVLink 5 ports per GPU, one to each of 18 NVSwitch chips, 100 GB/s per port both directions
together, i.e. ``planes = 18``, ``scale_up_rate_gbps = 400``; NVIDIA GB200 NVL72 product brief).
With ``layers = 2`` a plane is a leaf-spine of its own: leaves of ``gpus_per_leaf`` GPUs, each
with one link to each of ``plane_spines`` spines (default ``gpus_per_leaf``: non-blocking), which
is how NVLink domains beyond one rack are built. With ``scale_out``, every GPU also has one port
into a non-blocking leaf-spine (``scale_out_gpus_per_leaf`` GPUs per leaf, one uplink to each of
as many spines; a lone leaf has no spines) that joins ``supernodes`` such domains. Within a
supernode, two GPUs on one scale-out leaf are two hops apart both ways, so both are equal-cost.

How a GPU is modelled (as in ``hamming_mesh``): a router switch with ``role = "accelerator"``
owns the GPU's plane ports and its scale-out port; the GPU's NIC (node id, handlers) is a host on
an ``internal`` link to it (``internal_rate_gbps``, at most 1600 Gb/s, so one GPU injects no more
than that even when its ports add up to more). Shortest-path routing may take the scale-up hop to
a peer GPU and leave by that GPU's scale-out port, which is what NCCL's PXN does on rail-optimised
fabrics. The inventory gives internal links unbounded capacity in the bisection.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .declare import ParamError, TopologyParams, builder, link_config


class SupernodeParams(TopologyParams):
    gpus: int = Field(8, ge=2, le=1024, description="GPUs per supernode")
    planes: int = Field(4, ge=1, le=64, description="scale-up planes (ports per GPU)")
    layers: Literal[1, 2] = 1
    gpus_per_leaf: int | None = Field(None, ge=1, le=512, description="layers = 2: per leaf")
    plane_spines: int | None = Field(None, ge=1, le=512, description="layers = 2: per plane")
    supernodes: int = Field(1, ge=1, le=256)
    scale_out: bool = True
    scale_out_gpus_per_leaf: int = Field(8, ge=1, le=512)
    scale_up_rate_gbps: int | None = Field(None, gt=0, le=1600)
    scale_out_rate_gbps: int | None = Field(None, gt=0, le=1600)
    internal_rate_gbps: int = Field(1600, gt=0, le=1600)
    scale_up_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    scale_out_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    internal_latency_ns: float = Field(1.0, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    router_latency_ns: float | None = Field(None, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)


def _plane_leaf(p: SupernodeParams) -> tuple[int, int]:
    per_leaf = p.gpus_per_leaf or p.gpus
    if p.layers == 2 and (p.gpus_per_leaf is None or p.gpus % p.gpus_per_leaf):
        raise ParamError("gpus_per_leaf", p.gpus_per_leaf, f"layers = 2 needs GPUs per plane "
                         f"leaf dividing gpus = {p.gpus}")
    return per_leaf, p.plane_spines or per_leaf


def _bisection(p: SupernodeParams, link: LinkConfig) -> float | None:
    """Whole supernodes on each side when there are an even number of them: only scale-out
    crosses, (N/2) * scale_out rate. One supernode: the planes carry gpus/2 ports each, plus
    the scale-out ports of half the GPUs."""
    up = p.scale_up_rate_gbps or link.rate_gbps
    out = (p.scale_out_rate_gbps or link.rate_gbps) if p.scale_out else 0
    if p.supernodes % 2 == 0:
        return float(p.supernodes * p.gpus // 2 * out)
    if p.supernodes > 1 or p.gpus % 2:
        return None
    per_leaf, spines = _plane_leaf(p)
    plane = p.gpus // 2 * up
    if p.layers == 2 and (p.gpus // per_leaf) % 2 == 0:
        plane = min(plane, p.gpus // per_leaf // 2 * spines * up)
    elif p.layers == 2:
        return None
    return float(p.planes * plane + p.gpus // 2 * out)


def _counts(p: SupernodeParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links)."""
    per_leaf, spines = _plane_leaf(p)
    gpus = p.supernodes * p.gpus
    if p.layers == 1:
        plane_switches, plane_links = 1, p.gpus
    else:
        leaves = p.gpus // per_leaf
        plane_switches, plane_links = leaves + spines, p.gpus + leaves * spines
    switches = gpus + p.supernodes * p.planes * plane_switches
    links = gpus + p.supernodes * p.planes * plane_links
    if p.scale_out and gpus % p.scale_out_gpus_per_leaf == 0:
        leaves = gpus // p.scale_out_gpus_per_leaf
        out_spines = p.scale_out_gpus_per_leaf if leaves > 1 else 0
        switches += leaves + out_spines
        links += gpus + leaves * out_spines
    return gpus, switches, links


@builder("supernode", SupernodeParams, _bisection, _counts)
def supernode(p: SupernodeParams, link: LinkConfig) -> Topology:
    """Scale-up domains (one or two switch layers) with a scale-out leaf-spine behind them.
    GPU routers ``n<S>g<G>``, plane switches ``n<S>p<P>`` (or ``n<S>p<P>l<L>`` leaves and
    ``n<S>p<P>s<K>`` spines), scale-out ``leaf<L>``/``spine<K>``. Hosts are numbered supernode by
    supernode, so with an even count the first half of the host ids is the first half of the
    supernodes and every byte between the halves takes the scale-out network, the worst case."""
    if p.supernodes > 1 and not p.scale_out:
        raise ParamError("scale_out", p.scale_out, f"supernodes = {p.supernodes} are only "
                         f"connected through the scale-out network; set scale_out = true")
    per_leaf, spines = _plane_leaf(p)
    up = link_config(link, p.scale_up_rate_gbps, p.scale_up_latency_ns)
    out = link_config(link, p.scale_out_rate_gbps, p.scale_out_latency_ns)
    internal = link_config(link, p.internal_rate_gbps, p.internal_latency_ns)
    total = p.supernodes * p.gpus
    if p.scale_out and total % p.scale_out_gpus_per_leaf:
        raise ParamError("scale_out_gpus_per_leaf", p.scale_out_gpus_per_leaf, f"must divide "
                         f"the {total} GPUs (supernodes * gpus)")
    t = Topology()
    routers: list[str] = []
    for n in range(p.supernodes):
        mine = [t.add_switch(f"n{n}g{g}", role="accelerator", latency_ns=p.router_latency_ns)
                for g in range(p.gpus)]
        for r in mine:
            t.add_link(t.add_host(), r, internal, kind="internal")
        for plane in range(p.planes):
            if p.layers == 1:
                sw = t.add_switch(f"n{n}p{plane}", role="plane")
                for r in mine:
                    t.add_link(r, sw, up, kind="plane")
                continue
            leaves = [t.add_switch(f"n{n}p{plane}l{i}", role="plane-leaf")
                      for i in range(p.gpus // per_leaf)]
            tops = [t.add_switch(f"n{n}p{plane}s{i}", role="plane-spine") for i in range(spines)]
            for g, r in enumerate(mine):
                t.add_link(r, leaves[g // per_leaf], up, kind="plane")
            for leaf in leaves:
                for s in tops:
                    t.add_link(leaf, s, up, kind="plane-leaf-spine")
        routers += mine
    if p.scale_out:
        k = p.scale_out_gpus_per_leaf
        n_leaves = total // k
        n_spines = k if n_leaves > 1 else 0                # a lone leaf needs no spines
        so_spines = [t.add_switch(f"spine{i}", role="spine") for i in range(n_spines)]
        for i in range(n_leaves):
            leaf = t.add_switch(f"leaf{i}", role="leaf")
            for r in routers[i * k:(i + 1) * k]:
                t.add_link(r, leaf, out, kind="scale-out")
            for s in so_spines:
                t.add_link(leaf, s, out, kind="leaf-spine")
    return t
