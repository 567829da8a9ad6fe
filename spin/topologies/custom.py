"""Any graph: an edge list, or a networkx graph, with hosts and switches named.

From Python::

    build_topology("custom", hosts=["a", "b"], switches=["s"], edges=[("a", "s"), ("b", "s")])
    build_topology("custom", graph=g)   # nodes with kind="host" are hosts; edge/node attributes
                                        # rate_gbps, latency_ns, kind; switch attribute role

In a scenario file, ``devices = [{name, kind = "host" | "switch", role?, latency_ns?}]`` and
``links = [{a, b, rate_gbps?, latency_ns?, kind?}]`` say the same. Hosts get node ids in the
order listed. Without a ``switches`` list every endpoint that is not a host is a switch.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from ..config import LinkConfig
from ..errors import ConfigError
from ..topology import Topology
from .declare import ParamError, TopologyParams, builder, link_config

DEVICE_KEYS = ("name", "kind", "role", "latency_ns")
EDGE_KEYS = ("a", "b", "rate_gbps", "latency_ns", "kind")


class CustomParams(TopologyParams):
    hosts: list[str] | None = None
    switches: list[Any] | None = None
    edges: list[Any] | None = None
    devices: list[dict[str, Any]] | None = Field(None, min_length=1)
    links: list[dict[str, Any]] | None = None
    graph: Any = None             # a networkx.Graph (networkx imported only when one is given)

    @field_validator("graph")
    @classmethod
    def _networkx_graph(cls, g: Any) -> Any:
        if g is None:
            return g
        import networkx as nx
        if not isinstance(g, nx.Graph):
            raise ValueError(f"expected a networkx.Graph, got {type(g).__name__}")
        return g


def _switch_entries(p: CustomParams) -> tuple[list[str], list[dict[str, Any]] | None]:
    """(hosts, switch tables or None for "derive from the edges")."""
    if p.devices is not None:
        if p.hosts is not None or p.switches is not None:
            raise ParamError("devices", p.devices, "give devices, or hosts and switches, not both")
        hosts, switches = [], []
        for i, d in enumerate(p.devices):
            bad = sorted(set(d) - set(DEVICE_KEYS))
            if bad or "name" not in d or d.get("kind") not in ("host", "switch"):
                raise ParamError(f"devices[{i}]", d, f"expected {{name, kind = 'host' | "
                                 f"'switch', role?, latency_ns?}}")
            (hosts.append(d["name"]) if d["kind"] == "host" else switches.append(d))
        return hosts, switches
    if p.graph is not None:
        hosts = p.hosts if p.hosts is not None else \
            [n for n, k in p.graph.nodes(data="kind") if k == "host"]
        if p.switches is not None:
            return hosts, [s if isinstance(s, dict) else {"name": s} for s in p.switches]
        return hosts, [{"name": n, **{k: v for k, v in a.items() if k in ("role", "latency_ns")}}
                       for n, a in p.graph.nodes(data=True) if n not in set(hosts)]
    if p.hosts is None:
        raise ParamError("hosts", None, "required: the host names, in node-id order")
    if p.switches is None:
        return p.hosts, None
    return p.hosts, [s if isinstance(s, dict) else {"name": s} for s in p.switches]


def _edge_entries(p: CustomParams) -> tuple[str, list[dict[str, Any]]]:
    given = [k for k in ("edges", "links", "graph") if getattr(p, k) is not None]
    if len(given) != 1:
        raise ParamError("edges", p.edges, f"give exactly one of edges, links or graph (got "
                         f"{', '.join(given) or 'none'})")
    if p.graph is not None:
        return "graph.edges", [{"a": a, "b": b, **attrs}
                               for a, b, attrs in p.graph.edges(data=True)]
    name = given[0]
    out = []
    for i, e in enumerate(getattr(p, name)):
        if isinstance(e, dict):
            entry = dict(e)
        elif isinstance(e, (list, tuple)) and (len(e) == 2 or len(e) == 3
                                               and isinstance(e[2], dict)):
            entry = {"a": e[0], "b": e[1], **(e[2] if len(e) == 3 else {})}
        else:
            raise ParamError(f"{name}[{i}]", e, "expected (a, b), (a, b, {attrs}) or {a, b, ...}")
        bad = sorted(set(entry) - set(EDGE_KEYS))
        if bad or "a" not in entry or "b" not in entry:
            raise ParamError(f"{name}[{i}]", e, f"valid keys: {', '.join(EDGE_KEYS)} (a and b "
                             f"required)")
        out.append(entry)
    return name, out


@builder("custom", CustomParams)
def custom(p: CustomParams, link: LinkConfig) -> Topology:
    """Any graph, from an edge list, a networkx graph or devices and links tables. Hosts in the
    order given, then switches, then links in order. The builder cannot know
    the worst-case bisection of an arbitrary graph; list the hosts so that the first half and
    the second half are the two sides you care about."""
    hosts, switches = _switch_entries(p)
    where, edges = _edge_entries(p)
    if not hosts:
        raise ParamError("hosts", hosts, "no host: a topology needs at least one")
    if switches is None:
        seen = set(hosts)
        switches = []
        for e in edges:
            for end in (e["a"], e["b"]):
                if end not in seen:
                    seen.add(end)
                    switches.append({"name": end})
    t = Topology()
    for i, h in enumerate(hosts):
        try:
            t.add_host(str(h))
        except ConfigError as exc:
            raise ParamError(f"hosts[{i}]", h, str(exc)) from None
    for i, s in enumerate(switches):
        try:
            t.add_switch(str(s["name"]), role=s.get("role", "switch"),
                         latency_ns=s.get("latency_ns"))
        except (ConfigError, KeyError) as exc:
            raise ParamError(f"switches[{i}]", s, str(exc)) from None
    for i, e in enumerate(edges):
        try:
            cfg = link_config(link, e.get("rate_gbps"), e.get("latency_ns"))
            t.add_link(str(e["a"]), str(e["b"]), cfg, kind=e.get("kind"))
        except ConfigError as exc:
            raise ParamError(f"{where}[{i}]", {"a": e["a"], "b": e["b"]},
                             " ".join(str(exc).split())) from None
    return t
