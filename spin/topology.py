"""Topologies as plain, picklable data: hosts (each with one NIC port), switches, links.

Hosts get node ids 0..H-1 in the order they are added; that id is the NIC's address on the wire
(MAC/IP derive from it). A switch carries a role (``leaf``, ``spine``, ``edge``, ``agg``,
``core``, ``accelerator``, ...) and may override the pipeline latency of ``[switch]``; a link
carries a kind, the tier it belongs to (``host``, ``edge-agg``, ``mesh``, ...), for inventories.
Routing (every equal-cost next hop) is computed from the graph; ready-made topologies are built by
the registry in ``spin.topologies``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

from .config import LinkConfig
from .engine.device_kinds import BUMP, NIC, SWITCH, DeviceKind, check_kind
from .errors import ConfigError, TopologyError

HOST_LINK = "host"


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    config: LinkConfig
    kind: str = HOST_LINK


@dataclass(frozen=True)
class PortArrays:
    """Every engine port as arrays (``Topology.port_arrays``): its device, its index among the
    device's ports, the port it faces; both ports of every link (``link_ports[i]``), each
    device's first port (``first[d]``, and ``first[-1]`` = ports) and which switches transit."""

    port_dev: Any
    port_local: Any
    peer: Any
    link_ports: Any
    first: Any
    transit: Any


@dataclass
class Topology:
    """Describe first: names, roles and links only. ``spin.simulation`` builds devices from it.

    ``kind`` and ``params`` record which registry builder made the topology and with which
    (validated) parameters, so inventories can quote the builder's analytic figures."""

    hosts: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    latencies_ns: dict[str, float] = field(default_factory=dict)
    kind: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)
    # switches that forward only their own hosts' traffic (``add_switch(transit=False)``)
    no_transit: set[str] = field(default_factory=set)
    # hosts whose device is not a plain NIC (``add_host(kind=...)``); the others are NICs
    host_kinds: dict[str, DeviceKind] = field(default_factory=dict, repr=False)
    # devices placed among the switches that are not switches (``add_bump``)
    inline_kinds: dict[str, DeviceKind] = field(default_factory=dict, repr=False)
    # lookup indexes, rebuilt from the lists above (large fabrics add thousands of links)
    _node_of: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _linked: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for s in self.switches:
            self.roles.setdefault(s, "switch")
        self._node_of = {h: i for i, h in enumerate(self.hosts)}
        self._linked = {end for l in self.links for end in (l.a, l.b) if end in self._node_of}

    def add_host(self, name: str | None = None, *, kind: DeviceKind = NIC) -> str:
        """Add a host; ``kind``: its device's kind (``spin.engine.device_kinds``; a NIC unless
        said), a node kind (one with a host and a node id)."""
        name = name or f"h{len(self.hosts)}"
        self._check_new(name)
        self._check_size()
        if kind is not NIC:
            if not isinstance(kind, DeviceKind) or not kind.node:
                raise TopologyError(f"host {name!r}: kind = {kind!r}: must be a DeviceKind with "
                                    f"node=True (a NIC-like endpoint)")
            check_kind(kind)
            self.host_kinds[name] = kind
        self._node_of[name] = len(self.hosts)
        self.hosts.append(name)
        return name

    def add_switch(self, name: str | None = None, *, role: str = "switch",
                   latency_ns: float | None = None, transit: bool = True) -> str:
        """Add a switch; ``latency_ns`` overrides the pipeline latency of ``[switch]`` for this
        one (an accelerator's on-chip router is far faster than a datacentre switch). With
        ``transit=False`` routing sends through it only traffic from or to its own hosts: a
        GPU's router in a server, which a network switch never uses to reach another GPU."""
        name = name or f"s{len(self.switches)}"
        self._check_new(name)
        self._check_size()
        if not role or not isinstance(role, str):
            raise TopologyError(f"switch {name!r}: role = {role!r}: must be a non-empty string")
        if latency_ns is not None and not latency_ns >= 0:
            raise TopologyError(f"switch {name!r}: latency_ns = {latency_ns!r}: must be >= 0 ns")
        self.switches.append(name)
        self.roles[name] = role
        if latency_ns is not None:
            self.latencies_ns[name] = float(latency_ns)
        if not transit:
            self.no_transit.add(name)
        return name

    def add_link(self, a: str, b: str, config: LinkConfig | None = None, *,
                 kind: str | None = None) -> None:
        """Link two devices. Without ``kind`` the tier is derived: ``host`` when a host is an
        end, else the two switch roles (``leaf-spine``; ``spine`` when both are spines)."""
        for end in (a, b):
            if end not in self.roles and end not in self._node_of:
                raise TopologyError(f"link endpoint {end!r} is not a device; devices: "
                                    f"{_shown(self.hosts + self.switches)}")
        if a == b:
            raise TopologyError(f"link from {a!r} to itself")
        for end in (a, b):
            if end in self._linked:
                raise TopologyError(f"host {end!r} already has a link (a NIC has one port)")
        if kind is None:
            ra, rb = self.roles.get(a), self.roles.get(b)
            kind = HOST_LINK if ra is None or rb is None else (ra if ra == rb else f"{ra}-{rb}")
        self.links.append(Link(a, b, config or LinkConfig(), kind))
        self._linked.update(end for end in (a, b) if end in self._node_of)

    def _check_size(self) -> None:
        """Every 1024 devices: stop a build whose description and routing tables alone would
        exceed the memory limit (spin.describe.limits), before the rest of it is built."""
        if (len(self.hosts) + len(self.switches)) % 1024 == 1023:
            from .describe.limits import check_topology_size
            try:
                check_topology_size(len(self.hosts), len(self.switches), len(self.links))
            except ConfigError as exc:
                raise TopologyError(str(exc)) from None

    def _check_new(self, name: str) -> None:
        if name in self.roles or name in self._node_of:
            raise TopologyError(f"device name {name!r} is used twice")

    def __repr__(self) -> str:
        """One line: a fabric of thousands of links would otherwise print pages."""
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items()
                           if v is not None and k != "link")
        return (f"Topology(kind={self.kind!r}{', ' + params if params else ''}: "
                f"{_count(len(self.hosts), 'host')}, {_count(len(self.switches), 'switch')}, "
                f"{_count(len(self.links), 'link')})")

    def node_id(self, host: str) -> int:
        try:
            return self._node_of[host]
        except KeyError:
            raise TopologyError(f"{host!r} is not a host; hosts: {_shown(self.hosts)}") from None

    def host_label(self, node: int) -> str:
        """Host ``node`` as errors name it: ``'h1' (node 1)``."""
        return f"{self.hosts[node]!r} (node {node})" if 0 <= node < len(self.hosts) \
            else f"node {node}"

    def hosts_text(self, limit: int = 16) -> str:
        """The hosts with their node ids, for errors: ``h0 (node 0), h1 (node 1)``."""
        return _shown([f"{h} (node {i})" for i, h in enumerate(self.hosts)], limit) or "none"

    def host_node(self, host: int | str, what: str, switches_too: bool = False) -> int:
        """Node id of ``host`` given as a node id or a host name; otherwise a TopologyError
        naming ``what``, the value and the valid hosts (and switches, when ``switches_too``:
        for what may also sit on a switch, such as an execution context)."""
        if isinstance(host, str) and host in self._node_of:
            return self._node_of[host]
        if isinstance(host, Integral) and not isinstance(host, bool) \
                and 0 <= host < len(self.hosts):
            return int(host)
        raise TopologyError(f"{what}: node={host!r} is {self.not_a_node(host, switches_too)}")

    def not_a_node(self, node: object, switches_too: bool = False) -> str:
        """Why ``node`` names no host (or no device, with ``switches_too``), with the valid
        choices: the tail of an error, the same from Python and from scenario files."""
        hosts = f"hosts: {self.hosts_text()}"
        ids = f"0..{len(self.hosts) - 1}" if self.hosts else "(none)"
        if switches_too:
            return (f"not a device of this topology; give a host (node id {ids} or name) or a "
                    f"switch (name); {hosts}; switches: {_shown(self.switches) or 'none'}")
        if isinstance(node, str) and node in self.roles:
            hosts += f" ({node!r} is a switch)"
        return f"not a host of this topology; give a node id {ids} or a host name; {hosts}"

    def switch_role(self, name: str) -> str:
        try:
            return self.roles[name]
        except KeyError:
            raise TopologyError(f"{name!r} is not a switch; switches: "
                                f"{_shown(self.switches)}") from None

    def switch_latency_ns(self, name: str, default: float) -> float:
        """This switch's pipeline latency: its own override, else ``default``
        (``SwitchConfig.latency_ns``)."""
        self.switch_role(name)
        return self.latencies_ns.get(name, default)

    # --- library topologies (kept for existing callers; the registry builds them) ----------
    @classmethod
    def pair(cls, link: LinkConfig | None = None) -> "Topology":
        """Two hosts connected back to back."""
        from .topologies import build_topology
        return build_topology("pair", link=link)

    @classmethod
    def star(cls, n_hosts: int, link: LinkConfig | None = None) -> "Topology":
        """``n_hosts`` hosts on one switch."""
        from .topologies import build_topology
        return build_topology("star", link=link, hosts=n_hosts)

    # --- derived views -------------------------------------------------------------------
    def add_bump(self, name: str | None = None, *, latency_ns: float) -> str:
        """Add a two-port bump-in-the-wire device (``bump_emulator``): link it to a host and
        to that host's switch, and it forwards every frame from one to the other
        ``latency_ns`` after it arrived. Routing sees it as a switch with two ports (the
        routing tables number it among the switches), but it runs its own code."""
        name = self.add_switch(name or f"b{len(self.inline_kinds)}", role="bump",
                               latency_ns=latency_ns)
        self.inline_kinds[name] = BUMP
        return name

    def device_names(self) -> list[str]:
        """Device order used by the engine: hosts (= node ids) first, then switches."""
        return self.hosts + self.switches

    def device_kinds(self) -> list[DeviceKind]:
        """The kind of every device, in ``device_names`` order: what the state builder and the
        results read, rather than a device's place in that order."""
        kinds = self.host_kinds
        return ([kinds.get(h, NIC) for h in self.hosts]
                + [self.inline_kinds.get(s, SWITCH) for s in self.switches])

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

    def port_arrays(self) -> PortArrays:
        """The numbering of ``global_ports`` as arrays, computed without a dict per port (a
        65,536-host fabric has over a million ports)."""
        import numpy as np
        index = {n: i for i, n in enumerate(self.device_names())}
        n_links = len(self.links)
        ends = np.empty((n_links, 2), np.int64)
        ends[:, 0] = [index[l.a] for l in self.links]
        ends[:, 1] = [index[l.b] for l in self.links]
        dev = ends.ravel()                                  # link i's ends at 2i, 2i + 1
        order = np.lexsort((np.repeat(np.arange(n_links), 2), dev))
        gp = np.empty(2 * n_links, np.int64)
        gp[order] = np.arange(2 * n_links)
        port_dev = dev[order]
        starts = np.zeros(len(index) + 1, np.int64)
        np.cumsum(np.bincount(port_dev, minlength=len(index)), out=starts[1:])
        port_local = np.arange(2 * n_links) - starts[port_dev]
        link_ports = gp.reshape(n_links, 2)
        peer = np.empty(2 * n_links, np.int64)
        peer[link_ports[:, 0]] = link_ports[:, 1]
        peer[link_ports[:, 1]] = link_ports[:, 0]
        transit = np.array([s not in self.no_transit for s in self.switches], bool)
        return PortArrays(port_dev, port_local, peer, link_ports, starts, transit)

    def link_ports(self) -> dict[int, tuple[int, int]]:
        """Engine port numbers of both ends of every link."""
        gp = self.global_ports()
        return {i: (gp[(l.a, i)], gp[(l.b, i)]) for i, l in enumerate(self.links)}

    def graph(self) -> nx.Graph:
        """Devices and links as a networkx graph (parallel links merge into one edge)."""
        import networkx as nx   # ~0.2 s to import: only when a graph is asked for
        g = nx.Graph()
        g.add_nodes_from(self.device_names())
        for l in self.links:
            g.add_edge(l.a, l.b)
        return g

    # --- routing -------------------------------------------------------------------------
    def equal_cost_ports(self, down_links: frozenset[int] = frozenset()
                         ) -> dict[str, dict[int, tuple[int, ...]]]:
        """For every switch: destination node id -> sorted local port indices (into
        ``ports()[switch]``) on a shortest path to that host, through switches only (hosts never
        forward), ignoring the links in ``down_links``. Unreachable destinations are absent.

        One breadth-first search per attachment switch (a switch with hosts on it), shared by
        all of its hosts: 128 searches on a k = 16 fat tree instead of 1024."""
        return _equal_cost_ports(self, down_links)

    def switch_routes(self) -> dict[str, dict[int, int]]:
        """For each switch, destination node id -> one output port on a shortest path: the
        lowest of its equal-cost ports."""
        return {s: {h: group[0] for h, group in table.items()}
                for s, table in self.equal_cost_ports().items()}

    def validate(self) -> None:
        """Raise TopologyError naming a pair of devices that cannot reach each other when
        hosts do not forward (a host without a link, a switch island, two halves)."""
        if not self.hosts:
            raise TopologyError("the topology has no host")
        ports = self.ports()
        lonely = [h for h in self.hosts if not ports[h]]
        if lonely:
            other = next((h for h in self.hosts if h != lonely[0]), None)
            pair = f"host {other!r} cannot reach host {lonely[0]!r}: " if other else ""
            raise TopologyError(f"the topology is disconnected: {pair}host {lonely[0]!r} has "
                                f"no link")
        start = self.hosts[0]
        physical = self._reached(ports, start, respect_transit=False)
        routed = self._reached(ports, start, respect_transit=True) if self.no_transit else physical
        for name in self.device_names():
            if name not in (physical if name in self.roles else routed):
                what = "host" if name not in self.roles else "switch"
                raise TopologyError(f"the topology is disconnected: host {start!r} cannot reach "
                                    f"{what} {name!r} through switches")

    def _reached(self, ports, start: str, respect_transit: bool) -> set[str]:
        """Devices ``start`` reaches when hosts do not forward (and, with ``respect_transit``,
        a no-transit switch passes on only what is for its own hosts, or from them)."""
        seen = {start}
        queue = deque([start])
        first_hop = {v for _, v in ports[start]}
        while queue:
            u = queue.popleft()
            if u in self.roles or u == start:       # switches forward; hosts only originate
                down_only = respect_transit and u in self.no_transit and u not in first_hop
                for _, v in ports[u]:
                    if v not in seen and not (down_only and v in self.roles):
                        seen.add(v)
                        queue.append(v)
        return seen


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else ("es" if noun.endswith("h") else "s"))


def _shown(names: list[str], limit: int = 16) -> str:
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _equal_cost_ports(topo: Topology, down: frozenset[int]
                      ) -> dict[str, dict[int, tuple[int, ...]]]:
    sw_index = {s: i for i, s in enumerate(topo.switches)}
    host_index = {h: i for i, h in enumerate(topo.hosts)}
    n_sw = len(topo.switches)
    # per switch: (local port, peer switch index) for live switch links; hosts hanging off it
    sw_nbrs: list[list[tuple[int, int]]] = [[] for _ in range(n_sw)]
    attached: list[list[tuple[int, int]]] = [[] for _ in range(n_sw)]   # (node id, local port)
    local = [0] * n_sw
    for i, l in enumerate(topo.links):
        ia, ib = sw_index.get(l.a), sw_index.get(l.b)
        pa = pb = -1
        if ia is not None:
            pa, local[ia] = local[ia], local[ia] + 1
        if ib is not None:
            pb, local[ib] = local[ib], local[ib] + 1
        if i in down:
            continue
        if ia is not None and ib is not None:
            sw_nbrs[ia].append((pa, ib))
            sw_nbrs[ib].append((pb, ia))
        elif ia is not None and l.b in host_index:
            attached[ia].append((host_index[l.b], pa))
        elif ib is not None and l.a in host_index:
            attached[ib].append((host_index[l.a], pb))
    tables: list[dict[int, tuple[int, ...]]] = [{} for _ in range(n_sw)]
    passes = [s not in topo.no_transit for s in topo.switches]
    for root in range(n_sw):
        if not attached[root]:
            continue
        dist = [-1] * n_sw
        dist[root] = 0
        order = [root]
        for u in order:                                  # BFS; `order` grows as we go
            if u != root and not passes[u]:              # reached, but forwards for no one
                continue
            du = dist[u] + 1
            for _, v in sw_nbrs[u]:
                if dist[v] < 0:
                    dist[v] = du
                    order.append(v)
        hosts_here: dict[int, list[int]] = {}
        for node, port in attached[root]:
            hosts_here.setdefault(node, []).append(port)
        tables[root].update((node, tuple(sorted(p))) for node, p in hosts_here.items())
        for s in order[1:]:                              # sw_nbrs lists ports in order
            want = dist[s] - 1
            group = tuple([p for p, v in sw_nbrs[s] if dist[v] == want
                           and (passes[v] or v == root)])
            tab = tables[s]
            for node in hosts_here:
                tab[node] = group
    return {s: dict(sorted(tables[i].items())) for i, s in enumerate(topo.switches)}
