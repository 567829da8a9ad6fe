"""Import of htsim topology files (``.topo``): the tiered fat trees and leaf-spines of the UEC
htsim (``Nodes``, ``Tiers``, ``Podsize``, then per ``Tier t``: ``Downlink_speed_Gbps``,
``Radix_Down``, ``Radix_Up``, ``Downlink_Latency_ns``, ``Switch_Latency_ns``, ``Oversubscribed``,
``Bundle``, ``Queue_Down``, ``Queue_Up``; keys are case-insensitive, ``#`` comments).

Wiring follows htsim's custom fat tree: ToR switches of ``Radix_Down`` hosts each; every ToR
links to every aggregation switch of its pod (``Bundle`` of tier 1 parallel links); aggregation
switch i of each pod links to core group i (``Bundle`` of tier 2 links each). Tier t's speed
and latency are those of the links below tier t switches. A file that describes a standard
k-ary fat tree builds the registry's ``fat_tree`` (same inventory and bisection figures);
anything else builds a ``custom`` graph. Queue sizes are read and checked but not mapped:
spin's switches take one buffer size for every port (``[switch] port_buffer_bytes``).
"""
from __future__ import annotations

from pathlib import Path

from ..config import LinkConfig
from ..errors import TopologyError
from ..topologies import build_topology
from ..topology import Topology

TIER_KEYS = ("downlink_speed_gbps", "radix_down", "radix_up", "downlink_latency_ns",
             "switch_latency_ns", "oversubscribed", "bundle", "queue_down", "queue_up")
TOP_KEYS = ("nodes", "tiers", "podsize")


def _parse(path: str | Path) -> tuple[dict, list[dict], dict]:
    p = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{p}: cannot read topology file: {exc}") from None
    top: dict[str, int] = {}
    tiers: list[dict] = [{}, {}, {}]
    where: dict = {}
    cur = None
    for n, raw in enumerate(lines, 1):
        tok = raw.split()
        if not tok or tok[0].startswith("#"):
            continue
        key = tok[0].lower()
        if key not in TOP_KEYS + TIER_KEYS + ("tier",):
            raise TopologyError(f"{p}:{n}: {tok[0]!r}: unknown key; valid: Nodes, Tiers, "
                                f"Podsize, Tier, Downlink_speed_Gbps, Radix_Down, Radix_Up, "
                                f"Downlink_Latency_ns, Switch_Latency_ns, Oversubscribed, "
                                f"Bundle, Queue_Down, Queue_Up")
        if len(tok) != 2:
            raise TopologyError(f"{p}:{n}: {raw.strip()!r}: expected '<key> <integer>'")
        try:
            val = int(tok[1])
        except ValueError:
            raise TopologyError(f"{p}:{n}: {tok[0]} {tok[1]!r}: must be an integer") from None
        low, high = _RANGES.get(key, (0, 1 << 40))
        if key != "tier" and not low <= val <= high:
            shown = tok[1] if len(tok[1]) <= 24 else f"(a number of {len(tok[1]):,} digits)"
            raise TopologyError(f"{p}:{n}: {tok[0]} {shown}: must be {low:,}..{high:,}")
        if key == "tier":
            if not 0 <= val <= 2:
                raise TopologyError(f"{p}:{n}: Tier {val}: valid tiers are 0, 1, 2")
            cur = val
        elif key in TOP_KEYS:
            top[key] = val
            where[key] = n
        else:
            if cur is None:
                raise TopologyError(f"{p}:{n}: {tok[0]} before any 'Tier N' line")
            if key in tiers[cur]:
                raise TopologyError(f"{p}:{n}: {tok[0]} given twice for tier {cur}")
            tiers[cur][key] = val
            where[(cur, key)] = n
    return top, tiers, where


# What each key may hold: sizes up to the largest fabrics spin builds, rates and times that
# stay within int64 picoseconds, ratios that divide (0 would divide by zero).
_RANGES = {"nodes": (1, 1 << 20), "podsize": (1, 1 << 20), "radix_down": (0, 1 << 16),
           "radix_up": (0, 1 << 16), "downlink_speed_gbps": (0, 1_000_000),
           "downlink_latency_ns": (0, 10**12), "switch_latency_ns": (0, 10**12),
           "oversubscribed": (1, 1024), "bundle": (1, 1024)}


def htsim_host_count(path: str | Path) -> int:
    """The ``Nodes N`` an htsim ``.topo`` file states (read, nothing built)."""
    return _header(path)[0]["nodes"]


def _header(path: str | Path):
    top, tiers, where = _parse(path)
    for k in ("nodes", "tiers"):
        if k not in top:
            raise TopologyError(f"{path}: no '{k.capitalize()} N' line")
    return top, tiers, where


def load_htsim_topo(path: str | Path) -> Topology:
    """Build the topology an htsim ``.topo`` file describes; errors name file, line or field."""
    p = str(path)
    top, tiers, where = _header(path)
    n, nt = top["nodes"], top["tiers"]
    if nt not in (2, 3):
        raise TopologyError(f"{p}:{where['tiers']}: Tiers {nt}: valid: 2, 3")
    for t in range(nt):
        req = ["downlink_speed_gbps", "radix_down", "downlink_latency_ns"] + \
              (["radix_up"] if t < nt - 1 else [])
        for k in req:
            if not tiers[t].get(k):
                raise TopologyError(f"{p}: tier {t}: {k} is missing or 0")
    g = lambda t, k, d=0: tiers[t].get(k, d)                      # noqa: E731
    pod = top.get("podsize", n) if nt == 3 else n
    bad = lambda msg, key=None: TopologyError(                   # noqa: E731
        f"{p}:{where.get(key, '')}: {msg}".replace("::", ":"))
    if pod <= 0 or n % pod:
        raise bad(f"Podsize {pod}: must divide Nodes {n}", "podsize")
    rd0 = g(0, "radix_down")
    if pod % rd0:
        raise bad(f"Radix_Down {rd0} of tier 0 must divide the {pod} hosts of a pod",
                  (0, "radix_down"))
    pods, tors = n // pod, pod // rd0
    s0, s1 = g(0, "downlink_speed_gbps"), g(1, "downlink_speed_gbps")
    os0 = g(0, "oversubscribed", 1)
    tor_up = n * s0 // (s1 * os0)
    aggs = tor_up // (pods * g(1, "radix_down"))
    b1 = g(1, "bundle", 1)
    if aggs < 1 or aggs * b1 != g(0, "radix_up"):
        raise bad(f"tier 0 Radix_Up {g(0, 'radix_up')} does not match {aggs} aggregation "
                  f"switches per pod x tier 1 Bundle {b1} (from Nodes, speeds, Oversubscribed "
                  f"and tier 1 Radix_Down)", (0, "radix_up"))
    cores, b2 = 0, g(2, "bundle", 1)
    if nt == 3:
        agg_up = tor_up * s1 // (g(2, "downlink_speed_gbps") * g(1, "oversubscribed", 1))
        cores = agg_up // g(2, "radix_down")
        if cores < 1 or cores % aggs or cores * b2 // aggs != g(1, "radix_up"):
            raise bad(f"tier 1 Radix_Up {g(1, 'radix_up')} does not match {cores} core "
                      f"switches over {aggs} aggregation switches per pod x tier 2 Bundle {b2}",
                      (1, "radix_up"))
    lat = lambda t: float(g(t, "downlink_latency_ns"))            # noqa: E731
    sw = lambda t: float(g(t, "switch_latency_ns"))               # noqa: E731
    std = (nt == 3 and rd0 == g(0, "radix_up") == g(1, "radix_down") == g(1, "radix_up")
           == aggs == tors and b1 == b2 == 1 and g(2, "radix_down") == pods == 2 * rd0
           and 4 <= pods <= 16 and len({sw(0), sw(1), sw(2)}) == 1 and lat(1) == lat(2))
    if std:
        topo = build_topology("fat_tree", link=LinkConfig.make(rate_gbps=s0, latency_ns=lat(0)),
                              k=pods, host_rate_gbps=s0, edge_agg_rate_gbps=s1,
                              agg_core_rate_gbps=g(2, "downlink_speed_gbps"),
                              host_latency_ns=lat(0), fabric_latency_ns=lat(1))
        for s in topo.switches:
            topo.latencies_ns[s] = sw(0)
        return topo
    return _custom(n, nt, pods, tors, rd0, aggs, cores, b1, b2, tiers, lat, sw)


def _custom(n, nt, pods, tors, rd0, aggs, cores, b1, b2, tiers, lat, sw) -> Topology:
    hosts = [f"h{i}" for i in range(n)]
    devices = [{"name": h, "kind": "host"} for h in hosts]
    links = []
    role = ("edge", "agg", "core") if nt == 3 else ("leaf", "spine")

    def sw_dev(name, t):
        devices.append({"name": name, "kind": "switch", "role": role[t], "latency_ns": sw(t)})
        return name

    speed = lambda t: tiers[t]["downlink_speed_gbps"]             # noqa: E731
    agg_names: list[str] = []
    core_names = [sw_dev(f"c{x}", 2) for x in range(cores)] if nt == 3 else []
    for pd in range(pods):
        tor_names = [sw_dev(f"p{pd}t{i}", 0) for i in range(tors)]
        ag = [sw_dev(f"p{pd}a{i}" if nt == 3 else f"a{i}", 1) for i in range(aggs)] \
            if nt == 3 or pd == 0 else agg_names
        agg_names = ag
        for i, tor in enumerate(tor_names):
            for j in range(rd0):
                links.append({"a": hosts[(pd * tors + i) * rd0 + j], "b": tor,
                              "rate_gbps": speed(0), "latency_ns": lat(0)})
            for a in ag:
                links += [{"a": tor, "b": a, "rate_gbps": speed(1), "latency_ns": lat(1)}] * b1
        if nt == 3:
            per = cores // aggs
            for i, a in enumerate(ag):
                for c in range(i * per, (i + 1) * per):
                    links += [{"a": a, "b": core_names[c], "rate_gbps": speed(2),
                               "latency_ns": lat(2)}] * b2
    return build_topology("custom", devices=devices, links=links)
