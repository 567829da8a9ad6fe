"""Turn the engine's counters and logs into a RunResult (only devices this worker owns)."""
from __future__ import annotations

import gc

import numpy as np

from ..wire import drops as D
from ..engine import layout as L
from ..engine import state as S
from ..engine.columns import RowView, Table
from ..engine.state import StateView, state_view
from ..transport_api import own_transport_layout
from .records import HandlerCalls, HostStats, LinkStats, MessageRecord, NicStats, SwitchStats
from .run_result import RunResult


def _waiting_for(st, dev: RowView, d: int) -> str:
    """Where an unfinished host program stopped, in the words of its ops ("" when finished)."""
    state, pc, target = dev.host_state, dev.host_pc, dev.wait1
    if state == S.HOST_WAIT_RECV:
        qp = dev.wait0
        return (f"waits at op {pc} (wait_recv qp={qp}): {int(st.host_recv_count[d, qp])} of "
                f"{target} messages received on qp {qp}")
    if state == S.HOST_WAIT_EVENT:
        return (f"waits at op {pc} (wait_event): {dev.host_event_count} of "
                f"{target} host events received")
    if state == S.HOST_RUNNING:
        return f"was still running at op {pc} of {dev.host_op_count}"
    return ""


# NicStats field -> transport counter (NT_* column of the NIC's counters)
_TRANSPORT_COUNTERS = {"retransmissions": "retx", "timeouts": "timeouts",
                       "acks_sent": "acks_tx", "naks_sent": "naks_tx",
                       "cnps_sent": "cnps_tx", "acks_received": "acks_rx",
                       "naks_received": "naks_rx", "cnps_received": "cnps_rx",
                       "out_of_order": "ooo", "reorder_degree": "reorder",
                       "duplicates": "dups", "min_rate_mbps": "min_rate"}


def _handler_calls(dev: RowView) -> HandlerCalls:
    return HandlerCalls(**dict(zip(S.HANDLER_KIND_NAMES, dev.hc, strict=True)))


def _columns(table: Table, rows: np.ndarray, *names: str) -> list[list[int]]:
    """Fields ``names`` of the table's ``rows`` (a 2-D block of the state), each as a list of
    Python ints: one numpy read per field, where a ``RowView`` per row and field made the
    result of 8,192 hosts cost seconds."""
    return [rows[:, table.index(n)].tolist() for n in names]


def _messages(st, sc) -> tuple[list[list[int]], list[MessageRecord]]:
    """The posts (txlog) and delivered messages (msglog) the engine logged."""
    tx = st.txlog[:sc.txlog_n]
    posts = [list(r) for r in zip(*_columns(L.TXLOG, tx, "src", "dst", "qp", "bytes",
                                            "t_post_ps", "first_psn", "t_acked_ps"))]
    messages = [MessageRecord(src=src, dst=node, qp=qp, bytes=nbytes, t_post_ps=None,
                              t_first_arrival_ps=t_first, t_done_ps=t_done,
                              handled_by_nic=bool(handled), first_psn=psn)
                for node, src, qp, nbytes, t_first, t_done, handled, psn in zip(*_columns(
                    L.MSGLOG, st.msglog[:sc.msglog_n], "node", "src", "qp", "bytes",
                    "t_first_ps", "t_done_ps", "handled", "first_psn"))]
    return posts, messages


def _unlogged(st, sc) -> dict[str, int]:
    """Delivered messages and posts the full message log left out (the engine counts them)."""
    left = {"messages": sc.msglog_n - st.msglog.shape[0], "posts": sc.txlog_n - st.txlog.shape[0]}
    return {k: int(n) for k, n in left.items() if n > 0}


def _links(sim, topo, st, now: int) -> list[LinkStats]:
    """Both directions of every link whose transmitting port this worker owns."""
    fields = ("dev", "tx_frames", "tx_bytes", "drops", "max_q_bytes", "busy_ps", "q_area",
              "q_bytes", "q_last_t", "ecn_marks", "trims", "pauses_tx", "pauses_rx")
    port = dict(zip(fields, _columns(L.PORT, st.port, *fields)))
    dev, local = port["dev"], sim.local
    links = []
    for i, link in enumerate(topo.links):
        for gp, a, b in ((sim.port_of_link[i][0], link.a, link.b),
                         (sim.port_of_link[i][1], link.b, link.a)):
            if dev[gp] not in local:
                continue
            area = port["q_area"][gp] + port["q_bytes"][gp] * max(0, now - port["q_last_t"][gp]) \
                // 1000
            links.append(LinkStats(link=i, from_device=a, to_device=b, tier=link.kind,
                                   tx_frames=port["tx_frames"][gp], tx_bytes=port["tx_bytes"][gp],
                                   drops=port["drops"][gp],
                                   max_queue_bytes=port["max_q_bytes"][gp],
                                   busy_ps=port["busy_ps"][gp], queue_byte_ns=area,
                                   ecn_marks=port["ecn_marks"][gp], trims=port["trims"][gp],
                                   pauses_sent=port["pauses_tx"][gp],
                                   pauses_received=port["pauses_rx"][gp]))
    return links


def _own_counters(kind: str, st, nodes: np.ndarray) -> dict[str, list[int]]:
    """The counters of a transport compiled apart (``spin.transport_api``), per node."""
    own = own_transport_layout(kind)
    if own is None:
        return {}
    return {name.lower(): st.apart_dev[nodes, own.dev.width + c.index].tolist()
            for name, c in own.ntr.columns.items()}


def _nics_and_hosts(sim, topo, st, view: StateView) -> tuple[list[NicStats], list[HostStats]]:
    nodes = np.array([d for d, kind in enumerate(topo.device_kinds())
                      if kind.node and d in sim.local], np.int64)
    dev = st.dev[nodes]
    fields = ("nic_dma_w_bytes", "nic_dma_r_bytes", "hpu_busy_ps", "msgs_abandoned",
              "msgs_expired", "loopback_frames", "timers", "host_busy_ps", "host_state",
              "host_event_count")
    col = dict(zip(fields, _columns(L.DEV, dev, *fields)))
    hc = L.DEV.columns["HC"]
    calls = dev[:, hc.index:hc.index + hc.width].tolist()
    ntr = L.DEV.index("NTR")
    transport = {name: dev[:, ntr + L.NT.index(c)].tolist()
                 for name, c in _TRANSPORT_COUNTERS.items()}
    own = _own_counters(sim.scenario.nic.transport.kind, st, nodes)
    received = st.host_recv_count[nodes].sum(axis=1).tolist()
    nics, hosts = [], []
    for k, d in enumerate(nodes.tolist()):
        state = col["host_state"][k]
        nics.append(NicStats(node=d, dma_write_bytes=col["nic_dma_w_bytes"][k],
                             dma_read_bytes=col["nic_dma_r_bytes"][k],
                             hpu_busy_ps=col["hpu_busy_ps"][k],
                             handler_calls=HandlerCalls(**dict(zip(S.HANDLER_KIND_NAMES,
                                                                   calls[k], strict=True))),
                             messages_abandoned=col["msgs_abandoned"][k],
                             messages_expired=col["msgs_expired"][k],
                             loopback_frames=col["loopback_frames"][k], timers=col["timers"][k],
                             name=topo.hosts[d],
                             own_counters={name: v[k] for name, v in own.items()},
                             **{name: v[k] for name, v in transport.items()}))
        hosts.append(HostStats(node=d, cpu_busy_ps=col["host_busy_ps"][k],
                               finished=state == S.HOST_DONE, messages_received=received[k],
                               events_received=col["host_event_count"][k],
                               waiting_for="" if state == S.HOST_DONE
                               else _waiting_for(st, view.dev(d), d), name=topo.hosts[d]))
    return nics, hosts


def _sample_rows(sim) -> tuple[list[list[int]], list[list[int]]]:
    """Queue and link samples as [t, link, direction, value] rows (non-zero values only)."""
    if not sim.queue_samples:
        return [], []
    n_ports = max(max(pa, pb) for pa, pb in sim.port_of_link.values()) + 1
    link_of = np.zeros(n_ports, np.int64)
    direction = np.zeros(n_ports, np.int64)
    for i, (pa, pb) in sim.port_of_link.items():
        link_of[pa], link_of[pb], direction[pb] = i, i, 1
    rows = np.concatenate(sim.queue_samples).astype(np.int64, copy=False)
    out = []
    for col in (2, 3):
        r = rows[rows[:, col] > 0]
        out.append(np.stack([r[:, 0], link_of[r[:, 1]], direction[r[:, 1]], r[:, col]],
                            axis=1).tolist())
    return out[0], out[1]


def build_result(sim) -> RunResult:
    """The run's records, made with the cyclic collector held off: they hold no cycles
    (reference counting frees them), and a collection every 700 new objects walked the
    process's live objects over and over while some 10^5 records were made (0.07 s of 0.28 s
    at 8,192 hosts)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        return _build_result(sim)
    finally:
        if was_on:
            gc.enable()


def _build_result(sim) -> RunResult:
    st, scen = sim.st, sim.scenario
    topo = scen.topology
    local = sim.local
    kinds = topo.device_kinds()
    view = state_view(st)
    sc = view.sc()
    posts, messages = _messages(st, sc)
    now = sc.now
    links = _links(sim, topo, st, now)
    nics, hosts = _nics_and_hosts(sim, topo, st, view)
    switches = []
    switch_rows = [d for d, kind in enumerate(kinds) if not kind.node]
    for d, name in zip(switch_rows, topo.switches):
        if d in local:
            dev = view.dev(d)
            switches.append(SwitchStats(name=name, drops=D.drop_counts_to_dict(st.drops[d]),
                                        hpu_busy_ps=dev.hpu_busy_ps,
                                        handler_calls=_handler_calls(dev),
                                        messages_abandoned=dev.msgs_abandoned,
                                        messages_expired=dev.msgs_expired,
                                        flowlets=dev.sw_flowlets, timers=dev.timers))
    # per reason over the local devices (reason names are distinct, so summing per code first
    # gives the same counts)
    drops = D.drop_counts_to_dict(st.drops[sorted(local)].sum(axis=0))
    host_nodes = [d for d, kind in enumerate(kinds) if kind.node and d in local]
    marks = {}
    for label, idx in scen.mark_index.items():
        times = st.marks[host_nodes, idx].tolist()
        marks[label] = {d: t for d, t in zip(host_nodes, times) if t >= 0}
    end = max([now] + [m.t_done_ps for m in messages])
    queue_samples, link_samples = _sample_rows(sim)
    digests = sim.host_memory_digests() if scen.engine.host_memory_digests else {}
    result = RunResult(end_time_ps=end, events=sc.events, packet_events=sc.pkt_events,
                       messages=messages, links=links, nics=nics, hosts=hosts, switches=switches, drops=dict(sorted(drops.items())),
                       marks=marks, host_memory_sha256=digests, posts=posts,
                       queue_samples=queue_samples, link_samples=link_samples,
                       unlogged=_unlogged(st, sc))
    result.handler_memories = sim.local_handler_memories()
    result.handler_contexts = tuple(scen.contexts)
    result.pair_posts()
    result.canonicalize()
    return result
