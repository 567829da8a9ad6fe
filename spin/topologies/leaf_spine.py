"""Two-tier leaf-spine (folded Clos): every leaf has one uplink to every spine.

Oversubscription is the ratio of a leaf's host capacity to its uplink capacity::

    oversubscription = hosts_per_leaf * host_rate_gbps / (spines * fabric_rate_gbps)

Give any two of ``spines``, ``fabric_rate_gbps`` and ``oversubscription`` and the third follows:
with ``oversubscription`` and no ``spines`` the spine count is derived (fewer uplinks, the usual
way to build a 4:1 fabric); with ``oversubscription`` and ``spines`` the uplink rate is derived.
Derived values must be whole numbers, else the error names the parameters. With neither,
``oversubscription`` is 1 (non-blocking). Rates not given default to ``[link] rate_gbps``.
"""
from __future__ import annotations

from fractions import Fraction

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .declare import ParamError, TopologyParams, builder, link_config


class LeafSpineParams(TopologyParams):
    leaves: int = Field(2, ge=1, le=512)
    spines: int | None = Field(None, ge=1, le=512)
    hosts_per_leaf: int = Field(4, ge=1, le=512)
    host_rate_gbps: int | None = Field(None, gt=0, le=1600)
    fabric_rate_gbps: int | None = Field(None, gt=0, le=1600)
    oversubscription: float | None = Field(None, gt=0, le=64)
    host_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    fabric_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)


def resolve(p: LeafSpineParams, link: LinkConfig) -> tuple[int, int, int]:
    """(spines, host rate, fabric rate) after deriving what was left out (module docstring)."""
    host = p.host_rate_gbps or link.rate_gbps
    down = p.hosts_per_leaf * host
    if p.oversubscription is None:
        fabric = p.fabric_rate_gbps or host
        if p.spines is not None:
            return p.spines, host, fabric
        spines = Fraction(down, fabric)
        if spines.denominator != 1:
            raise ParamError("spines", None, f"cannot derive a non-blocking spine count: "
                             f"hosts_per_leaf * host_rate_gbps = {down} Gb/s is not a multiple "
                             f"of fabric_rate_gbps = {fabric}; give spines or oversubscription")
        return int(spines), host, fabric
    ratio = Fraction(p.oversubscription).limit_denominator(1000)
    if p.spines is None:
        fabric = p.fabric_rate_gbps or host
        spines = Fraction(down) / (ratio * fabric)
        if spines.denominator != 1:
            raise ParamError("oversubscription", p.oversubscription, f"needs spines = "
                             f"{down} / ({float(ratio):g} * {fabric}) = {float(spines):g}, not a "
                             f"whole number; pick a ratio that divides or give spines")
        return int(spines), host, fabric
    fabric_q = Fraction(down) / (ratio * p.spines)
    if p.fabric_rate_gbps is not None:
        if fabric_q != p.fabric_rate_gbps:
            raise ParamError("oversubscription", p.oversubscription, f"inconsistent with "
                             f"spines = {p.spines} and fabric_rate_gbps = {p.fabric_rate_gbps} "
                             f"(they give {down / (p.spines * p.fabric_rate_gbps):g}); give two "
                             f"of the three")
        return p.spines, host, p.fabric_rate_gbps
    if fabric_q.denominator != 1 or not 0 < fabric_q <= 1600:
        raise ParamError("oversubscription", p.oversubscription, f"needs fabric_rate_gbps = "
                         f"{float(fabric_q):g}, not a whole number in 1..1600")
    return p.spines, host, int(fabric_q)


def _bisection(p: LeafSpineParams, link: LinkConfig) -> float | None:
    """Half the leaves on each side; each leaf passes min(host, uplink) capacity."""
    spines, host, fabric = resolve(p, link)
    if p.leaves == 1:
        return float((p.hosts_per_leaf // 2) * host)
    if p.leaves % 2:
        return None
    return p.leaves / 2 * min(p.hosts_per_leaf * host, spines * fabric)


def _counts(p: LeafSpineParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links)."""
    spines, _, _ = resolve(p, link)
    hosts = p.leaves * p.hosts_per_leaf
    return hosts, p.leaves + spines, hosts + p.leaves * spines


@builder("leaf_spine", LeafSpineParams, _bisection, _counts)
def leaf_spine(p: LeafSpineParams, link: LinkConfig) -> Topology:
    """Two-tier leaf-spine with an oversubscription ratio and per-tier rates. Leaves ``leaf0..``
    with ``hosts_per_leaf`` hosts each and one link to each spine.

    Hosts are numbered leaf by leaf, so with an even number of leaves the first half of the
    host ids is the first half of the leaves: every byte between the halves crosses the spines,
    the worst-case bisection of a leaf-spine."""
    spines, host_rate, fabric_rate = resolve(p, link)
    host_link = link_config(link, host_rate, p.host_latency_ns)
    fabric_link = link_config(link, fabric_rate, p.fabric_latency_ns)
    t = Topology()
    spine_names = [t.add_switch(f"spine{i}", role="spine") for i in range(spines)]
    for l in range(p.leaves):
        leaf = t.add_switch(f"leaf{l}", role="leaf")
        for _ in range(p.hosts_per_leaf):
            t.add_link(t.add_host(), leaf, host_link)
        for s in spine_names:
            t.add_link(leaf, s, fabric_link, kind="leaf-spine")
    return t
