"""Pods of leaves and spines, joined by planes of top switches: the switching part of a
leaf-spine-superspine fabric and of a rail-optimised DGX SuperPOD (rail leaves, spines, cores).
Builders attach their hosts to the leaves.

Every leaf has ``leaf_uplinks`` links, spread evenly over the ``spines_per_pod`` spines of its
pod (two links to each of 16 spines is how the DGX SuperPOD joins a leaf's 32 uplinks). With more
than one pod, spine j of every pod has ``spine_uplinks`` links spread evenly over the
``tops_per_plane`` switches of plane j, so traffic between pods climbs to plane j and comes down
at spine j of the other pod. Defaults are non-blocking: a leaf has as many uplinks as hosts, a
spine as many uplinks as leaf links, and one link to each switch above it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config import LinkConfig
from ..topology import Topology
from .declare import ParamError


@dataclass(frozen=True)
class PodShape:
    """Switch counts of a pod fabric; ``spine_uplinks`` and ``tops_per_plane`` are 0 with a
    single pod (no top tier)."""

    pods: int
    leaves_per_pod: int
    leaf_uplinks: int
    spines_per_pod: int
    spine_uplinks: int
    tops_per_plane: int

    @property
    def leaves(self) -> int:
        return self.pods * self.leaves_per_pod

    @property
    def spines(self) -> int:
        return self.pods * self.spines_per_pod

    @property
    def tops(self) -> int:
        return self.spines_per_pod * self.tops_per_plane


def pod_shape(pods: int, leaves_per_pod: int, down_per_leaf: int, leaf_uplinks: int | None,
              spines_per_pod: int | None, spine_uplinks: int | None,
              tops_per_plane: int | None, names: dict[str, str]) -> PodShape:
    """Fill in the defaults and check that links spread evenly; ``names`` maps the roles
    (``leaf_uplinks``, ``spines_per_pod``, ``spine_uplinks``, ``tops_per_plane``) to the
    builder's parameter names, for errors."""
    up = down_per_leaf if leaf_uplinks is None else leaf_uplinks
    spines = up if spines_per_pod is None else spines_per_pod
    if up % spines:
        raise ParamError(names["spines_per_pod"], spines, f"must divide the {up} uplinks of a "
                         f"leaf ({names['leaf_uplinks']}) so that every spine gets as many")
    if pods == 1:
        for role, value in (("spine_uplinks", spine_uplinks), ("tops_per_plane", tops_per_plane)):
            if value is not None:
                raise ParamError(names[role], value, "a single pod has no tier above its "
                                 "spines; give more pods or leave it out")
        return PodShape(1, leaves_per_pod, up, spines, 0, 0)
    spine_down = leaves_per_pod * up // spines
    s_up = spine_down if spine_uplinks is None else spine_uplinks
    tops = s_up if tops_per_plane is None else tops_per_plane
    if s_up % tops:
        raise ParamError(names["tops_per_plane"], tops, f"must divide the {s_up} uplinks of a "
                         f"spine ({names['spine_uplinks']}) so that every switch above gets "
                         f"as many")
    return PodShape(pods, leaves_per_pod, up, spines, s_up, tops)


def build_pods(t: Topology, shape: PodShape, leaf_name: Callable[[int, int], str],
               leaf_role: str, spine_role: str, top_role: str, leaf_link: LinkConfig,
               top_link: LinkConfig) -> list[list[str]]:
    """Add the leaves (``leaf_name(pod, i)``), spines ``<pod>s<j>`` (``spine<j>`` with one pod)
    and top switches ``<top_role><plane>.<i>``, and the links between them; return the leaves
    of every pod."""
    leaves = [[t.add_switch(leaf_name(p, i), role=leaf_role) for i in range(shape.leaves_per_pod)]
              for p in range(shape.pods)]
    one = shape.pods == 1
    spines = [[t.add_switch(f"spine{j}" if one else f"pod{p}s{j}", role=spine_role)
               for j in range(shape.spines_per_pod)] for p in range(shape.pods)]
    per_spine = shape.leaf_uplinks // shape.spines_per_pod
    for p in range(shape.pods):
        for leaf in leaves[p]:
            for spine in spines[p]:
                for _ in range(per_spine):
                    t.add_link(leaf, spine, leaf_link, kind=f"{leaf_role}-{spine_role}")
    if not one:
        per_top = shape.spine_uplinks // shape.tops_per_plane
        for j in range(shape.spines_per_pod):
            tops = [t.add_switch(f"{top_role}{j}.{i}", role=top_role)
                    for i in range(shape.tops_per_plane)]
            for p in range(shape.pods):
                for top in tops:
                    for _ in range(per_top):
                        t.add_link(spines[p][j], top, top_link, kind=f"{spine_role}-{top_role}")
    return leaves


def pod_links(shape: PodShape) -> int:
    """Links between the switches of a pod fabric (leaf-spine and spine-top)."""
    return shape.leaves * shape.leaf_uplinks + shape.spines * shape.spine_uplinks


def pod_bisection(shape: PodShape, down_per_leaf_gbps: float, leaf_gbps: float,
                  top_gbps: float) -> float | None:
    """Bisection bandwidth (Gb/s) with half the pods on each side (half the leaves with one
    pod): each side passes what its leaves take in and send up, and what its spines send to
    the planes. None when the halves are not whole pods (whole leaves with one pod)."""
    leaf = min(down_per_leaf_gbps, shape.leaf_uplinks * leaf_gbps)
    if shape.pods == 1:
        return shape.leaves_per_pod // 2 * leaf if shape.leaves_per_pod % 2 == 0 else None
    if shape.pods % 2:
        return None
    per_pod = min(shape.leaves_per_pod * leaf,
                  shape.spines_per_pod * shape.spine_uplinks * top_gbps)
    return shape.pods // 2 * per_pod
