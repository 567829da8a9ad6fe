"""Every topology kind, listed once: ``TOPOLOGIES`` is what a scenario's ``[topology] kind``,
``spin topo`` and ``build_topology`` accept, in alphabetical order (the order of listings)."""
from __future__ import annotations

from typing import Any

from ..config import LinkConfig
from ..errors import TopologyError
from ..registry import Registry
from ..topology import Topology
from . import (basic, custom, fat_tree, hamming_mesh, leaf_spine, leaf_spine_superspine,
               rail_optimized, supernode)
from .declare import TopologyKind

TOPOLOGIES: Registry[TopologyKind] = Registry(
    "topology", (custom.custom, fat_tree.fat_tree, hamming_mesh.hamming_mesh,
                 leaf_spine.leaf_spine, leaf_spine_superspine.leaf_spine_superspine,
                 basic.pair, rail_optimized.rail_optimized, basic.star, supernode.supernode),
    error=TopologyError)


def build_topology(name: str, *, link: LinkConfig | None = None, where: str = "topology",
                   **params: Any) -> Topology:
    """Build the topology kind ``name``; ``link`` is the default for every link whose tier has
    no rate or latency of its own. Errors name ``where``: ``topology.kind``, ``topology.k``."""
    return TOPOLOGIES.get(name, f"{where}.kind").make(link=link, where=where, **params)


def topology_kinds() -> list[str]:
    """The kinds' names, in ``TOPOLOGIES`` order."""
    return list(TOPOLOGIES.names())


def formula_bisection_gbps(topo: Topology) -> float | None:
    """The analytic bisection bandwidth of ``topo`` by its builder (None when not known or the
    topology was not built by a kind)."""
    kind = TOPOLOGIES.get(topo.kind, "topology.kind") if topo.kind in TOPOLOGIES else None
    return kind.bisection_of(topo) if kind else None
