"""Topologies as plain, picklable data: hosts (each with one NIC), switches, links.

Hosts get node ids 0..H-1 in the order they are added; that id is the NIC's address on the wire
(MAC/IP derive from it). Routing tables are computed from the graph with networkx.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .config import LinkConfig
from .errors import TopologyError


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    config: LinkConfig


@dataclass
class Topology:
    """Describe first: names and links only. ``spin.simulation`` builds devices from it."""

    hosts: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)

    def add_host(self, name: str | None = None) -> str:
        name = name or f"h{len(self.hosts)}"
        self._check_new(name)
        self.hosts.append(name)
        return name

    def add_switch(self, name: str | None = None) -> str:
        name = name or f"s{len(self.switches)}"
        self._check_new(name)
        self.switches.append(name)
        return name

    def add_link(self, a: str, b: str, config: LinkConfig | None = None) -> None:
        for end in (a, b):
            if end not in self.hosts and end not in self.switches:
                raise TopologyError(f"link endpoint {end!r} is not a device; devices: "
                                    f"{', '.join(self.hosts + self.switches)}")
        if a == b:
            raise TopologyError(f"link from {a!r} to itself")
        for end in (a, b):
            if end in self.hosts and any(end in (l.a, l.b) for l in self.links):
                raise TopologyError(f"host {end!r} already has a link (a NIC has one port)")
        self.links.append(Link(a, b, config or LinkConfig()))

    def _check_new(self, name: str) -> None:
        if name in self.hosts or name in self.switches:
            raise TopologyError(f"device name {name!r} is used twice")

    # --- library topologies --------------------------------------------------------------
    @classmethod
    def pair(cls, link: LinkConfig | None = None) -> "Topology":
        """Two hosts connected back to back."""
        t = cls()
        a, b = t.add_host(), t.add_host()
        t.add_link(a, b, link)
        return t

    @classmethod
    def star(cls, n_hosts: int, link: LinkConfig | None = None) -> "Topology":
        """``n_hosts`` hosts on one switch."""
        if n_hosts < 1:
            raise TopologyError(f"star needs at least 1 host, got n_hosts={n_hosts}")
        t = cls()
        s = t.add_switch()
        for _ in range(n_hosts):
            t.add_link(t.add_host(), s, link)
        return t

    # --- derived views -------------------------------------------------------------------
    def device_names(self) -> list[str]:
        """Device order used by the engine: hosts (= node ids) first, then switches."""
        return self.hosts + self.switches

    def ports(self) -> dict[str, list[tuple[int, str]]]:
        """For every device, its ports in link order as (link index, peer name)."""
        out: dict[str, list[tuple[int, str]]] = {d: [] for d in self.device_names()}
        for i, l in enumerate(self.links):
            out[l.a].append((i, l.b))
            out[l.b].append((i, l.a))
        return out

    def global_ports(self) -> dict[tuple[str, int], int]:
        """Engine port number of (device, link index): devices in ``device_names`` order, each
        device's ports in link order. Workers and pcap writers all number ports this way."""
        numbering: dict[tuple[str, int], int] = {}
        ports = self.ports()
        for name in self.device_names():
            for link_idx, _peer in ports[name]:
                numbering[(name, link_idx)] = len(numbering)
        return numbering

    def link_ports(self) -> dict[int, tuple[int, int]]:
        """Engine port numbers of both ends of every link."""
        gp = self.global_ports()
        return {i: (gp[(l.a, i)], gp[(l.b, i)]) for i, l in enumerate(self.links)}

    def graph(self) -> nx.Graph:
        g = nx.Graph()
        g.add_nodes_from(self.device_names())
        for l in self.links:
            g.add_edge(l.a, l.b)
        return g

    def switch_routes(self) -> dict[str, dict[int, int]]:
        """For each switch, destination node id -> output port on a shortest path (the lowest
        such port; hosts never forward, so paths only transit switches)."""
        g = self.graph()
        core = g.subgraph(self.switches).copy()
        ports = self.ports()
        routes: dict[str, dict[int, int]] = {s: {} for s in self.switches}
        for node, h in enumerate(self.hosts):
            attached = [p for _, p in ports[h]]
            if not attached or attached[0] not in self.switches:
                continue
            dist = nx.single_source_shortest_path_length(core, attached[0])
            for s in self.switches:
                if s not in dist:
                    continue
                for port, (_, peer) in enumerate(ports[s]):
                    if peer == h or (peer in dist and dist[peer] == dist[s] - 1):
                        routes[s][node] = port
                        break
        return routes
