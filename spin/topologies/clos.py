"""One helper shared by builders that join a set of switch ports with a small fat tree: a
single switch when it has the ports, else a non-blocking two-level leaf-spine of ``radix``-port
switches (``radix/2`` ports down and one link to each of ``radix/2`` spines per leaf)."""
from __future__ import annotations

from ..config import LinkConfig
from ..topology import Topology
from .declare import ParamError


def join_counts(n_members: int, radix: int) -> tuple[int, int]:
    """(switches, links) ``join`` makes for ``n_members`` ports (ParamError when they do not
    fit in two levels of ``radix``-port switches)."""
    if n_members <= radix:
        return 1, n_members
    down = radix // 2
    n_leaves = -(-n_members // down)
    if n_leaves > radix:
        raise ParamError("switch_radix", radix, "too small for a two-level fat tree")
    return n_leaves + down, n_members + n_leaves * down


def join(t: Topology, prefix: str, members: list[str], radix: int, edge_link: LinkConfig,
         fabric_link: LinkConfig, edge_kind: str, fabric_kind: str = "leaf-spine",
         radix_param: str = "switch_radix") -> list[str]:
    """Link each of ``members`` (one entry per port; a name may repeat) into a new network named
    ``prefix...``; return the switches made."""
    if len(members) <= radix:
        sw = t.add_switch(prefix, role=f"{edge_kind}-switch")
        for m in members:
            t.add_link(m, sw, edge_link, kind=edge_kind)
        return [sw]
    down = radix // 2
    n_leaves = -(-len(members) // down)
    if n_leaves > radix:
        raise ParamError(radix_param, radix, f"a two-level fat tree of {radix}-port switches "
                         f"joins at most {radix * down} ports; {prefix} needs {len(members)}")
    leaves = [t.add_switch(f"{prefix}l{i}", role=f"{edge_kind}-leaf") for i in range(n_leaves)]
    spines = [t.add_switch(f"{prefix}s{i}", role=f"{edge_kind}-spine") for i in range(down)]
    for i, m in enumerate(members):
        t.add_link(m, leaves[i // down], edge_link, kind=edge_kind)
    for leaf in leaves:
        for s in spines:
            t.add_link(leaf, s, fabric_link, kind=f"{edge_kind}-{fabric_kind}")
    return leaves + spines
