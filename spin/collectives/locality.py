"""Which ranks of a collective sit close together: the groups a hierarchical collective works
within first (the GPUs of one server behind their NVLink switch, on a rail-optimised fabric)
before it crosses the slower network between them (to the same-index GPU of every other
server: one rail leaf away).

A rank's *local group* is itself and the ranks it reaches at the least cost, a path's cost
being the sum over its links of 1/rate (the time a byte takes to cross them, store and
forward): server peers over 1,600 Gb/s NVLink links cost less than a rail peer behind two
400 Gb/s NIC links, though both are four links away. The ranks form a hierarchy when these
groups partition them into equal groups of 2 or more, fewer than all (on a star every rank is
every other's nearest: no hierarchy). Within a group ranks keep their order; the *rails* are
the ranks with the same index in their groups.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from fractions import Fraction

from ..errors import ConfigError


@dataclass(frozen=True)
class Locality:
    """Ranks (indices into the collective's hosts) in local groups, each in rank order."""

    groups: tuple[tuple[int, ...], ...]

    @property
    def size(self) -> int:
        """Ranks per group (g)."""
        return len(self.groups[0])

    @property
    def rails(self) -> tuple[tuple[int, ...], ...]:
        """Rail i: the i-th rank of every group, in group order."""
        return tuple(tuple(g[i] for g in self.groups) for i in range(self.size))


def _nearest(topology, adjacency, hosts: set[str], source: str, wanted: set[str]) -> set[str]:
    """Hosts of ``wanted`` at the least cost from host ``source`` (hosts never forward; a
    switch that forwards only its own hosts' traffic is left only towards hosts, unless it is
    the source's own)."""
    own = {peer for peer, _ in adjacency[source]}
    best: Fraction | None = None
    found: set[str] = set()
    dist = {source: Fraction(0)}
    heap = [(Fraction(0), 0, source)]
    tie = 1
    while heap:
        d, _, u = heapq.heappop(heap)
        if d > dist.get(u, d) or (best is not None and d > best):
            continue
        if u != source and u in wanted:
            best = d
            found.add(u)
            continue
        if u != source and u in hosts:           # another host: no forwarding
            continue
        for v, cost in adjacency[u]:
            if u in topology.no_transit and u not in own and v not in hosts:
                continue
            nd = d + cost
            if nd < dist.get(v, nd + 1):
                dist[v] = nd
                heapq.heappush(heap, (nd, tie, v))
                tie += 1
    return found


def local_groups(topology, hosts: tuple[int, ...]) -> Locality | None:
    """The local groups of the ranks on ``hosts`` (node ids, rank order), or None where they
    form no hierarchy (see the module's docstring)."""
    n = len(hosts)
    if n < 4:
        return None
    adjacency: dict[str, list[tuple[str, Fraction]]] = {d: [] for d in topology.device_names()}
    for link in topology.links:
        cost = Fraction(1, link.config.rate_gbps)
        adjacency[link.a].append((link.b, cost))
        adjacency[link.b].append((link.a, cost))
    names = [topology.hosts[h] for h in hosts]
    rank_of = {name: r for r, name in enumerate(names)}
    wanted, every_host = set(names), set(topology.hosts)
    groups: dict[int, tuple[int, ...]] = {}
    for r, name in enumerate(names):
        if r in groups:
            continue
        group = tuple(sorted({r} | {rank_of[h] for h in _nearest(topology, adjacency, every_host,
                                                                  name, wanted)}))
        for member in group:
            groups[member] = group
    distinct = sorted(set(groups.values()))
    size = len(distinct[0])
    if (len(distinct) < 2 or size < 2 or any(len(g) != size for g in distinct)
            or sum(len(g) for g in distinct) != n):
        return None
    return Locality(tuple(distinct))


def require_groups(topology, hosts: tuple[int, ...], what: str) -> Locality:
    """``local_groups``, or a ConfigError naming ``what`` and why there are none."""
    found = local_groups(topology, hosts)
    if found is None:
        raise ConfigError(f"{what} algorithm='hierarchical' needs ranks in equal local groups "
                          f"(servers behind a faster switch, as on rail_optimized); these "
                          f"{len(hosts)} ranks have none: choose ring or auto")
    return found
