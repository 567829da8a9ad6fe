"""What a topology costs and what it carries: device and port counts, links by rate and tier,
and the bisection bandwidth, so topologies can be set side by side by ports per Tb/s of
bisection, the way the HammingMesh paper compares them.

The bisection is a max-flow between the first half of the hosts and the second half (node ids
0..H/2-1 against H/2..H-1, every builder numbers hosts so that this is its worst case), with each
link a capacity of its rate in both directions. Links of kind ``internal`` (a NIC to its own
accelerator router) are on-package and get unbounded capacity.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from ..topology import Topology
from .catalog import formula_bisection_gbps

INTERNAL = "internal"
ACCELERATOR = "accelerator"
# Above this many hosts the max-flow (networkx, pure Python) takes minutes to hours (65,536
# hosts: ~30 s; 262,144: not done in 400 s); where the builder has a formula, it stands in.
MAX_FLOW_HOSTS = 65_536


@dataclass(frozen=True)
class Inventory:
    kind: str
    hosts: int
    switches_by_role: tuple[tuple[str, int], ...]
    switch_ports: int                   # ports of switches other than accelerator routers
    accelerator_ports: int              # mesh/plane/network ports of accelerator routers
    links_by_rate_kind: tuple[tuple[int, str, int], ...]   # (rate Gb/s, kind, count)
    capacity_gbps: float                # sum of link rates (one direction), internal excluded
    bisection_gbps: float               # max-flow between the two host halves
    bisection_formula_gbps: float | None   # the builder's analytic figure, where it has one
    bisection_method: str = "max-flow"  # or "formula": max-flow skipped (MAX_FLOW_HOSTS)

    @property
    def switches(self) -> int:
        return sum(n for _, n in self.switches_by_role)

    @property
    def cables(self) -> int:
        return sum(n for _, kind, n in self.links_by_rate_kind if kind != INTERNAL)

    @property
    def ports_per_tbps(self) -> float:
        """Switch and accelerator ports (host NIC ports excluded) per Tb/s of bisection."""
        if self.bisection_gbps <= 0:
            return float("inf")
        return (self.switch_ports + self.accelerator_ports) / (self.bisection_gbps / 1000)

    @property
    def bisection_per_host_gbps(self) -> float:
        return self.bisection_gbps / max(self.hosts // 2, 1)

    def to_dict(self) -> dict:
        d = asdict(self)
        per_tbps = self.ports_per_tbps
        d.update(switches=self.switches, cables=self.cables,
                 ports_per_tbps=per_tbps if per_tbps != float("inf") else None,
                 bisection_per_host_gbps=self.bisection_per_host_gbps)
        return d


def bisection_gbps(topo: Topology) -> float:
    """Max-flow (Gb/s) from hosts[:H//2] to hosts[H//2:]; parallel links add up."""
    import networkx as nx   # ~0.2 s to import: only when a graph is asked for
    g = nx.DiGraph()
    for l in topo.links:
        cap = float("inf") if l.kind == INTERNAL else float(l.config.rate_gbps)
        for u, v in ((l.a, l.b), (l.b, l.a)):
            if g.has_edge(u, v):
                g[u][v]["capacity"] += cap
            else:
                g.add_edge(u, v, capacity=cap)
    half = len(topo.hosts) // 2
    if half == 0:
        return 0.0
    src, dst = ("__first_half__", 0), ("__second_half__", 0)   # names no device can have
    for h in topo.hosts[:half]:
        g.add_edge(src, h)                   # no capacity attribute: unbounded
    for h in topo.hosts[half:]:
        g.add_edge(h, dst)
    # hosts do not forward: a host may only send from the source side or receive on the sink
    # side, so drop every edge that would carry traffic through a host
    for h in topo.hosts[:half]:
        g.remove_edges_from([(u, h) for u in list(g.predecessors(h)) if u != src])
    for h in topo.hosts[half:]:
        g.remove_edges_from([(h, v) for v in list(g.successors(h)) if v != dst])
    value, _ = nx.maximum_flow(g, src, dst, flow_func=nx.algorithms.flow.preflow_push)
    return float(value)


def topology_inventory(topo: Topology) -> Inventory:
    """What ``topo`` is made of and what it can carry (``spin topo``): hosts, switches by role,
    ports, cables, capacity and bisection bandwidth (max-flow and the builder's formula)."""
    roles = Counter(topo.switch_role(s) for s in topo.switches)
    ports = topo.ports()
    switch_ports = accel_ports = 0
    for s in topo.switches:
        n = sum(1 for i, _ in ports[s] if topo.links[i].kind != INTERNAL)
        if topo.switch_role(s) == ACCELERATOR:
            accel_ports += n
        else:
            switch_ports += n
    by = Counter((l.config.rate_gbps, l.kind) for l in topo.links)
    capacity = sum(float(l.config.rate_gbps) for l in topo.links if l.kind != INTERNAL)
    formula = formula_bisection_gbps(topo)
    if len(topo.hosts) > MAX_FLOW_HOSTS and formula is not None:
        bisection, method = formula, "formula"
    else:
        bisection, method = bisection_gbps(topo), "max-flow"
    return Inventory(
        kind=topo.kind, hosts=len(topo.hosts),
        switches_by_role=tuple(sorted(roles.items())), switch_ports=switch_ports,
        accelerator_ports=accel_ports,
        links_by_rate_kind=tuple((r, k, n) for (r, k), n in sorted(by.items())),
        capacity_gbps=capacity, bisection_gbps=bisection,
        bisection_formula_gbps=formula, bisection_method=method)
