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


@dataclass(frozen=True)
class Locality:
    """Ranks (indices into the collective's hosts) in local groups, each in rank order, and
    the slowest link rate on the way to a group peer and to the nearest rank of another group
    (Gb/s): the hierarchy pays where the first is the larger (``faster_inside``)."""

    groups: tuple[tuple[int, ...], ...]
    local_gbps: int
    remote_gbps: int

    @property
    def size(self) -> int:
        """Ranks per group (g)."""
        return len(self.groups[0])

    @property
    def rails(self) -> tuple[tuple[int, ...], ...]:
        """Rail i: the i-th rank of every group, in group order."""
        return tuple(tuple(g[i] for g in self.groups) for i in range(self.size))

    @property
    def faster_inside(self) -> bool:
        """Whether a group's ranks reach each other over faster links than those between
        groups (NVLink inside a server, a 400 Gb/s NIC out of it), so a hierarchical
        collective moves most of its bytes where they are cheap. On a fat tree the host's
        one link carries both, and a flat ring is as good."""
        return self.local_gbps > self.remote_gbps


def _search(topology, adjacency, hosts: set[str], source: str, wanted: set[str]):
    """Hosts of ``wanted`` in order of least cost from host ``source``, with each one's cost
    and the slowest link rate on its path (hosts never forward; a switch that forwards only
    its own hosts' traffic is left only towards hosts, unless it is the source's own)."""
    own = {peer for peer, _, _ in adjacency[source]}
    best = {source: (Fraction(0), 1 << 30)}
    heap = [(Fraction(0), 0, source)]
    tie = 1
    while heap:
        d, _, u = heapq.heappop(heap)
        if d > best[u][0]:
            continue
        if u != source and u in wanted:
            yield u, d, best[u][1]
        if u != source and u in hosts:           # a host: no forwarding
            continue
        for v, cost, rate in adjacency[u]:
            if u in topology.no_transit and u not in own and v not in hosts:
                continue
            nd = d + cost
            if v not in best or nd < best[v][0]:
                best[v] = (nd, min(best[u][1], rate))
                heapq.heappush(heap, (nd, tie, v))
                tie += 1


def _group_of(topology, adjacency, hosts, source, wanted) -> tuple[set[str], int, int]:
    """The hosts of ``wanted`` nearest ``source``, the slowest link to them, and the slowest
    link to the next-nearest host (0: none)."""
    group: set[str] = set()
    nearest, local = None, 0
    for host, cost, rate in _search(topology, adjacency, hosts, source, wanted):
        if nearest is None or cost == nearest:
            nearest, local = cost, min(local, rate) if group else rate
            group.add(host)
        else:
            return group, local, rate
    return group, local, 0


_CACHE: dict[tuple, tuple] = {}
CACHE_ENTRIES = 64


def local_groups(topology, hosts: tuple[int, ...]) -> Locality | None:
    """The local groups of the ranks on ``hosts`` (node ids, rank order), or None where they
    form no hierarchy (see the module's docstring). Remembered per topology and hosts: a
    replay asks once per collective call."""
    key = (id(topology), len(topology.links), tuple(hosts))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is topology:
        return hit[1]
    found = _local_groups(topology, tuple(hosts))
    if len(_CACHE) >= CACHE_ENTRIES:
        _CACHE.clear()
    _CACHE[key] = (topology, found)
    return found


def _local_groups(topology, hosts: tuple[int, ...]) -> Locality | None:
    n = len(hosts)
    if n < 4:
        return None
    adjacency: dict[str, list[tuple[str, Fraction, int]]] = {
        d: [] for d in topology.device_names()}
    for link in topology.links:
        rate = link.config.rate_gbps
        adjacency[link.a].append((link.b, Fraction(1, rate), rate))
        adjacency[link.b].append((link.a, Fraction(1, rate), rate))
    names = [topology.hosts[h] for h in hosts]
    rank_of = {name: r for r, name in enumerate(names)}
    wanted, every_host = set(names), set(topology.hosts)
    groups: dict[int, tuple[int, ...]] = {}
    local, remote = 1 << 30, 1 << 30
    for r, name in enumerate(names):
        if r in groups:
            continue
        near, local_r, remote_r = _group_of(topology, adjacency, every_host, name, wanted)
        group = tuple(sorted({r} | {rank_of[h] for h in near}))
        local, remote = min(local, local_r), min(remote, remote_r or remote)
        for member in group:
            if member in groups and groups[member] != group:
                return None                      # nearness is not a partition
            groups[member] = group
    distinct = sorted(set(groups.values()))
    size = len(distinct[0])
    if (len(distinct) < 2 or size < 2 or any(len(g) != size for g in distinct)
            or sum(len(g) for g in distinct) != n):
        return None
    return Locality(tuple(distinct), local, remote)


def groups_or_whole(topology, hosts: tuple[int, ...]) -> Locality:
    """``local_groups``, or all ranks as one group where they form no hierarchy (a
    hierarchical collective is then its flat ring, as NCCL's within a single server)."""
    found = local_groups(topology, hosts)
    return found if found is not None else Locality((tuple(range(len(hosts))),), 0, 0)
