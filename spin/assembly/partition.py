"""Automatic partition of a fabric's devices over workers: a METIS k-way cut (``pymetis``) of the
device graph, weighted by the traffic the host programs will send and by link latency.

What a cut costs a multi-worker run:
* every frame crossing it is copied, sent and validated (so: cut links that carry little);
* the lookahead is the *smallest* bound among cut links (latency, plus the pipeline of a switch
  at the receiving end: ``link_lookahead_ps``), and the number of sync rounds is about the
  virtual duration over that (so: cut long links, never a short one if avoidable).
Edge weight = (1 + expected frames on the link) x (longest link bound / this link's bound),
so METIS, minimising the summed weight of cut edges, prefers long, low-traffic links.
Vertex weight = expected frames a device handles (its events), so workers get balanced work.

Traffic is estimated, not simulated: every ``send`` of every host program is routed from source
to destination over the topology's shortest paths (transiting switches only, as forwarding
does), split evenly over equal-cost next hops (what per-flow ECMP does on average). Handler-made
traffic is not known beforehand; every link carries a base weight of one frame.

Deterministic: the same scenario gives the same graph, and METIS runs with a fixed seed.
"""
from __future__ import annotations

import numpy as np

from ..engine import state as S
from ..errors import ConfigError
from ..units import ns

_SEED = 12345
_MAX_WEIGHT = 1 << 24  # keeps METIS's integer sums (idx_t) far from overflow


def link_lookahead_ps(scenario) -> np.ndarray:
    """Per link, the earliest a frame sent over it now can be handled at the far end: its
    latency plus, towards a switch, that switch's pipeline latency (the engine's arrival times
    include it); the smaller of the two directions."""
    topo = scenario.topology
    switches = set(topo.switches)

    def towards(dev: str) -> int:
        return ns(topo.switch_latency_ns(dev, scenario.switch.latency_ns)) if dev in switches else 0

    return np.array([ns(l.config.latency_ns) + min(towards(l.a), towards(l.b)) for l in topo.links],
                    np.int64)


def _edges(topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed edge arrays (src, dst, link index), both directions of every link."""
    index = {n: i for i, n in enumerate(topology.device_names())}
    a = np.array([index[l.a] for l in topology.links], np.int64)
    b = np.array([index[l.b] for l in topology.links], np.int64)
    link = np.arange(len(topology.links), dtype=np.int64)
    return np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([link, link])


def _sends(scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (source host, destination host, bytes) the host programs send, summed per pair."""
    src, dst, nbytes = [], [], []
    for node, prog in scenario.host_programs.items():
        ops = prog.op_array()
        if not len(ops):
            continue
        to = ops[:, S.HO_SEND_DST]
        sends = ops[(ops[:, 0] == S.OP_SEND) & (to >= 0) & (to < scenario.n_hosts) & (to != node)]
        dsts, where = np.unique(sends[:, S.HO_SEND_DST], return_inverse=True)
        src.append(np.full(len(dsts), node, np.int64))
        dst.append(dsts.astype(np.int64))
        nbytes.append(np.bincount(where, weights=sends[:, S.HO_SEND_NBYTES], minlength=len(dsts)))
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(src), np.concatenate(dst), np.concatenate(nbytes)


def _demand(scenario, n_devices: int) -> dict[int, np.ndarray]:
    """Bytes each source host sends to each destination host: {dst: bytes by source device}
    (a dense vector per destination: for small fabrics and tests)."""
    out: dict[int, np.ndarray] = {}
    for s_, d, b in zip(*_sends(scenario)):
        out.setdefault(int(d), np.zeros(n_devices))[int(s_)] += b
    return out


def link_traffic(scenario) -> np.ndarray:
    """Expected bytes over each link (both directions summed), from the host programs' sends.

    A host that hangs off one switch is reached only through it, and every shortest path to it
    is a shortest path to its switch plus that last link: so the demand towards all hosts of a
    switch is routed once, towards the switch, and each host's own demand added to its link.
    One routing pass per switch, not per host (8,192 hosts: 42 s before, 10 s now), and one
    demand vector at a time (one per destination host was 36 GB at 65,536 hosts)."""
    topo = scenario.topology
    n = len(topo.device_names())
    src, dst, link = _edges(topo)
    forwards = np.zeros(n, bool)
    forwards[len(topo.hosts):] = True  # only switches transit traffic
    traffic = np.zeros(len(topo.links))
    single = _single_homed(src, dst, link, forwards, len(topo.hosts))
    from_host, to_host, nbytes = _sends(scenario)
    target = to_host.copy()
    if single:
        hosts = np.fromiter(single, np.int64)
        via = np.full(n, -1, np.int64)
        last_link = np.full(n, -1, np.int64)
        via[hosts] = [single[h][0] for h in hosts.tolist()]
        last_link[hosts] = [single[h][1] for h in hosts.tolist()]
        hop = via[to_host] >= 0
        np.add.at(traffic, last_link[to_host[hop]], nbytes[hop])
        target[hop] = via[to_host[hop]]
    order = np.argsort(target, kind="stable")
    bounds = np.flatnonzero(np.diff(target[order])) + 1
    for group in np.split(order, bounds) if len(order) else []:
        demand = np.zeros(n)
        np.add.at(demand, from_host[group], nbytes[group])
        _route(int(target[group[0]]), demand, src, dst, link, forwards, n, traffic)
    return traffic


def _single_homed(src, dst, link, forwards, n_hosts: int) -> dict[int, tuple[int, int]]:
    """Hosts with exactly one link, to a switch: host -> (switch, link)."""
    ends: dict[int, list[tuple[int, int]]] = {}
    for a, b, i in zip(src.tolist(), dst.tolist(), link.tolist()):
        if a < n_hosts:
            ends.setdefault(a, []).append((b, i))
    return {h: e[0] for h, e in ends.items() if len(e) == 1 and forwards[e[0][0]]}


def _route(target: int, demand: np.ndarray, src, dst, link, forwards, n: int,
           traffic: np.ndarray) -> None:
    """Add ``demand`` (bytes by source device) routed to ``target`` over shortest paths, split
    evenly over equal-cost next hops, to ``traffic``."""
    dist = _bfs_to(target, src, dst, forwards, n)
    # an edge u -> v is on a shortest path to target if v is one hop closer and u may forward
    on_path = (dist[dst] == dist[src] - 1) & (dist[src] > 0) & (forwards[src] | (demand[src] > 0))
    fanout = np.bincount(src[on_path], minlength=n).astype(float)
    flow = demand.copy()
    for level in range(int(dist[dist < n].max()), 0, -1):
        sel = on_path & (dist[src] == level)
        if not sel.any():
            continue
        share = flow[src[sel]] / fanout[src[sel]]
        np.add.at(traffic, link[sel], share)
        np.add.at(flow, dst[sel], share)


def _bfs_to(target: int, src: np.ndarray, dst: np.ndarray, forwards: np.ndarray, n: int) -> np.ndarray:
    """Hop distance of every device to ``target``, paths transiting forwarding devices only
    (unreachable: n)."""
    dist = np.full(n, n, np.int64)
    dist[target] = 0
    frontier = np.array([target])
    level = 0
    while frontier.size:
        level += 1
        # reverse edges: from a frontier device back to its neighbours (which may forward into it)
        into = np.isin(dst, frontier) & (dist[src] == n)
        nxt = np.unique(src[into])
        dist[nxt] = level
        frontier = nxt[forwards[nxt]]  # hosts are reached but are not expanded
    return dist


def auto_partition(scenario, workers: int, traffic: np.ndarray | None = None) -> tuple[int, ...]:
    """Worker id of every device (hosts first, then switches), cut by METIS as described above
    (``traffic``: ``link_traffic(scenario)`` when the caller has it already)."""
    topo = scenario.topology
    names = topo.device_names()
    if workers < 1:
        raise ConfigError(f"workers = {workers}; must be >= 1")
    if workers == 1 or not topo.links:
        return tuple([0] * len(names))
    if workers > len(names):
        raise ConfigError(f"workers = {workers} exceeds the {len(names)} devices of the topology")
    import pymetis

    mtu = scenario.engine.mtu_bytes
    frames = (link_traffic(scenario) if traffic is None else traffic) / mtu
    look = link_lookahead_ps(scenario).astype(float)
    eweight = np.minimum((1.0 + frames) * (look.max() / look), _MAX_WEIGHT).round().astype(np.int64)
    src, dst, link = _edges(topo)
    n = len(names)
    order = np.lexsort((dst, src))  # CSR: neighbours of each device, deterministic order
    xadj = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))])
    vweight = np.ones(n)
    np.add.at(vweight, src, frames[link])  # frames a device sends or receives: its events
    vweight = np.minimum(vweight, _MAX_WEIGHT).round().astype(np.int64)
    opts = pymetis.Options(seed=_SEED)
    graph = pymetis.CSRAdjacency(adj_starts=xadj.tolist(), adjacent=dst[order].tolist())
    _cuts, parts = pymetis.part_graph(workers, adjacency=graph, vweights=vweight.tolist(),
                                      eweights=eweight[link[order]].tolist(), options=opts)
    return _canonical(parts, workers)


def _canonical(parts, workers: int) -> tuple[int, ...]:
    """Renumber parts by first appearance, so device 0 is always on worker 0 (the coordinator's
    first local worker) whatever labels METIS chose."""
    relabel: dict[int, int] = {}
    for p in parts:
        if p not in relabel:
            relabel[p] = len(relabel)
    for p in range(workers):  # empty parts (tiny graphs) keep distinct ids
        relabel.setdefault(p, len(relabel))
    return tuple(relabel[p] for p in parts)
