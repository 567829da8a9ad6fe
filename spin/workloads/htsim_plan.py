"""Turn a parsed htsim connection matrix into host programs (see ``htsim_cm`` for the mapping).

Every send, wait and notification is a node of a dependency graph; a topological order that
prefers earlier estimated times (Kahn's algorithm on a heap) is one global order, and each host
runs its own ops in that order. A host's op never waits for an op later in the order, so the
programs cannot deadlock, and the estimates keep them from waiting needlessly.
"""
from __future__ import annotations

import heapq
from collections import defaultdict

from ..errors import ConfigError
from ..units import US, serialization_ps
from .common import Flow, Workload, check_memory, prepare

SEND, RECV, NOTIFY, TRIG = 1, 0, 1, 0        # waits sort before sends at equal estimates
NOTIFY_BYTES, SCRATCH_BYTES = 1, 8
EST_BASE_PS = 2 * US                         # rough one-way latency for the estimates


def plan(m, sc) -> Workload:
    n, conns = sc.n_hosts, m.connections
    for c in conns:
        if max(c.src, c.dst) >= n:
            raise ConfigError(f"{m.path}:{c.line}: {c.src}->{c.dst}: the topology has {n} "
                              f"hosts (0..{n - 1})")
    sources, targets = defaultdict(list), defaultdict(list)
    for c in conns:
        for t in c.done_triggers:
            sources[t].append(c)
        if c.trigger is not None:
            targets[c.trigger].append(c)
    need = {}
    for tid, t in m.triggers.items():
        k = 1 if t.kind != "barrier" else (t.count or len(sources[tid]))
        if targets[tid] and k > len(sources[tid]):
            raise ConfigError(f"{m.path}:{t.line}: trigger {tid} ({t.kind}) needs {k} "
                              f"completions but only {len(sources[tid])} connections fire it: "
                              f"its flows would never start")
        need[tid] = k
    t_hosts = {tid: sorted({c.src for c in targets[tid]}) for tid in m.triggers}

    # QPs: m.qp is shared by flows nobody waits for; every other receive gets its own.
    next_qp: dict[int, int] = defaultdict(lambda: m.qp + 1)

    def alloc(host: int) -> int:
        next_qp[host] += 1
        return next_qp[host] - 1

    trig_qp = {(tid, h): alloc(h) for tid in sorted(m.triggers) for h in t_hosts[tid]}
    qp_of, pairs = {}, set()
    for c in conns:
        own = [t for t in c.done_triggers if c.dst in t_hosts[t]]
        if len(own) > 1:
            raise ConfigError(f"{m.path}:{c.line}: the flow fires triggers {own[0]} and "
                              f"{own[1]}, both starting flows on its receiver {c.dst}: not "
                              f"supported (fire one trigger that starts both)")
        if own:
            t = own[0]
            if len(sources[t]) > 1 and len(t_hosts[t]) > 1:
                raise ConfigError(f"{m.path}:{c.line}: trigger {t} has several sources and "
                                  f"starts flows on several hosts, one of them this flow's "
                                  f"receiver: not supported")
            qp_of[c.flow_id] = trig_qp[(t, c.dst)]
        elif c.done_triggers or (c.src, c.dst) in pairs:
            qp_of[c.flow_id] = alloc(c.dst)
        else:
            qp_of[c.flow_id] = m.qp
        pairs.add((c.src, c.dst))
    top = max(next_qp.values(), default=m.qp + 1)
    if top > sc.host.qps:
        raise ConfigError(f"{m.path}: the matrix needs {top} QPs on some host (one per waited "
                          f"flow and trigger); host.qps = {sc.host.qps}: set [host] qps >= {top}")

    # The dependency graph. Node: (kind, key); edges parent -> children.
    nodes: dict[tuple, dict] = {}
    kids: dict[tuple, list] = defaultdict(list)
    indeg: dict[tuple, int] = defaultdict(int)

    def node(key, host, order, **info):
        nodes.setdefault(key, dict(host=host, order=order, **info))
        return key

    def edge(a, b):
        kids[a].append(b)
        indeg[b] += 1

    for c in conns:
        s = node(("send", c.flow_id), c.src, SEND, conn=c)
        if c.trigger is not None:
            edge(node(("trig", c.trigger, c.src), c.src, TRIG, tid=c.trigger), s)
        for tid in c.done_triggers:
            for h in t_hosts[tid]:
                w = node(("trig", tid, h), h, TRIG, tid=tid)
                if h == c.dst:
                    edge(s, w)
                    continue
                via = (("trig", tid, c.dst) if c.dst in t_hosts[tid]
                       else node(("recv", c.flow_id), c.dst, RECV, conn=c))
                if via[0] == "recv":
                    edge(s, via)
                nt = node(("notify", c.flow_id, tid, h), c.dst, NOTIFY, to=h, tid=tid)
                edge(via, nt)
                edge(nt, w)

    rate = _host_rates(sc)
    est: dict[tuple, int] = {}
    arrivals: dict[tuple, list] = defaultdict(list)
    depth: dict[tuple, int] = defaultdict(int)
    heap = [(0 if k[0] != "send" else (nodes[k]["conn"].start_ps or 0), nodes[k]["order"],
             str(k), k) for k in nodes if indeg[k] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        t, _, _, k = heapq.heappop(heap)
        est[k] = t
        order.append(k)
        info = nodes[k]
        done = t
        if k[0] == "send":
            c = info["conn"]
            done = t + serialization_ps(c.size_bytes, min(rate[c.src], rate[c.dst])) + EST_BASE_PS
        elif k[0] == "notify":
            done = t + EST_BASE_PS
        for ch in kids[k]:
            arrivals[ch].append(done)
            depth[ch] = max(depth[ch], depth[k] + (k[0] == "send"))
            indeg[ch] -= 1
            if indeg[ch] == 0:
                a = sorted(arrivals[ch])
                when = a[need[ch[1]] - 1] if ch[0] == "trig" else a[-1]
                if ch[0] == "send" and nodes[ch]["conn"].start_ps is not None:
                    when = max(when, nodes[ch]["conn"].start_ps)
                heapq.heappush(heap, (when, nodes[ch]["order"], str(ch), ch))
    if len(order) != len(nodes):
        stuck = sorted({k[1] for k in nodes if k not in est and k[0] == "trig"})
        raise ConfigError(f"{m.path}: triggers {stuck[:8]} depend on each other in a cycle: "
                          f"their flows can never start")
    return _emit(m, sc, nodes, order, qp_of, trig_qp, need, sources, depth)


def _host_rates(sc) -> dict[int, int]:
    """Node id -> rate of the host's first link, in one pass over the links (a search of
    the links per host was quadratic: 0.4 s at 1,024 hosts)."""
    node_of = {name: h for h, name in enumerate(sc.topology.hosts)}
    rates: dict[int, int] = {}
    for link in sc.topology.links:
        for end in (link.a, link.b):
            if end in node_of:
                rates.setdefault(node_of[end], link.config.rate_gbps)
    return rates


def _emit(m, sc, nodes, order, qp_of, trig_qp, need, sources, depth) -> Workload:
    conns = m.connections
    hosts = sorted({h for c in conns for h in (c.src, c.dst)})
    send_bytes = max(c.size_bytes for c in conns)
    recv_off: dict[int, int] = defaultdict(int)
    remote = {}
    for c in conns:
        remote[c.flow_id] = send_bytes + SCRATCH_BYTES + recv_off[c.dst]
        recv_off[c.dst] += c.size_bytes
    check_memory(sc, "the htsim matrix", send_bytes + SCRATCH_BYTES + max(recv_off.values()),
                 f"a {send_bytes:,} B send buffer and every flow received by one host")
    wl = Workload("htsim_cm", m.label, tuple(hosts), 1, send_bytes=send_bytes,
                  recv_addr=send_bytes + SCRATCH_BYTES, fill=m.fill)
    prepare(sc, wl, sorted({c.src for c in conns}))
    landing: dict[tuple[int, int], int] = defaultdict(int)     # (host, qp) -> messages
    for c in conns:
        landing[(c.dst, qp_of[c.flow_id])] += 1
    for k, info in nodes.items():
        if k[0] == "notify":
            landing[(info["to"], trig_qp[(info["tid"], info["to"])])] += 1
    waited: dict[tuple[int, int], int] = defaultdict(int)
    progs = {h: sc.host_program(h).mark(wl.start_label(0)) for h in hosts}
    clock = defaultdict(int)
    o_send = int(round(sc.host.send_overhead_ns * 1000))
    for k in order:
        info = nodes[k]
        h, prog = info["host"], progs[info["host"]]
        if k[0] == "send":
            c = info["conn"]
            if c.start_ps is not None and c.start_ps > clock[h]:
                prog.compute((c.start_ps - clock[h]) / 1000)
                clock[h] = c.start_ps
            q = qp_of[c.flow_id]
            prog.send(c.dst, c.size_bytes, qp=q, local_addr=0, remote_addr=remote[c.flow_id])
            clock[h] += o_send
            wl.flows.append(Flow(c.src, c.dst, q, c.size_bytes, 0, remote[c.flow_id], 0,
                                 depth[k]))
        elif k[0] == "notify":
            prog.send(info["to"], NOTIFY_BYTES, qp=trig_qp[(info["tid"], info["to"])],
                      local_addr=0, remote_addr=send_bytes)
            clock[h] += o_send
        else:
            q = qp_of[info["conn"].flow_id] if k[0] == "recv" else trig_qp[(info["tid"], h)]
            count = 1 if k[0] == "recv" else need[info["tid"]]
            prog.wait_recv(qp=q, count=count)
            waited[(h, q)] += count
    for (h, q), total in sorted(landing.items()):
        if total > waited[(h, q)]:
            progs[h].wait_recv(qp=q, count=total - waited[(h, q)])
    for h in hosts:
        progs[h].mark(wl.end_label(0))
    return wl
