"""The two smallest topologies: two hosts back to back, and hosts around one switch."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import LinkConfig
from ..topology import Topology
from .declare import TopologyParams, builder


class PairParams(TopologyParams):
    hosts: Literal[2] = 2


def _pair_bisection(p: PairParams, link: LinkConfig) -> float:
    return float(link.rate_gbps)


@builder("pair", PairParams, _pair_bisection, lambda p, link: (2, 0, 1))
def pair(p: PairParams, link: LinkConfig) -> Topology:
    """Two hosts connected back to back (no switch). Bisection: one link."""
    t = Topology()
    a, b = t.add_host(), t.add_host()
    t.add_link(a, b, link)
    return t


class StarParams(TopologyParams):
    hosts: int = Field(ge=1, le=4096, description="hosts on the switch")


def _star_bisection(p: StarParams, link: LinkConfig) -> float:
    return (p.hosts // 2) * float(link.rate_gbps)


@builder("star", StarParams, _star_bisection, lambda p, link: (p.hosts, 1, p.hosts))
def star(p: StarParams, link: LinkConfig) -> Topology:
    """``hosts`` hosts on one switch ``s0``. Any split is a worst case: the first half of the
    hosts reaches the second half through its own links, hosts // 2 of them."""
    t = Topology()
    s = t.add_switch(role="switch")
    for _ in range(p.hosts):
        t.add_link(t.add_host(), s, link)
    return t
