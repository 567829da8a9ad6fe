"""Turn the engine's counters and logs into a RunResult (only devices this worker owns)."""
from __future__ import annotations

import numpy as np

from ..wire import drops as D
from ..engine import state as S
from ..engine.columns import RowView
from ..engine.state import StateView, state_view
from ..results import (
    HandlerCalls,
    HostStats,
    LinkStats,
    MessageRecord,
    NicStats,
    RunResult,
    SwitchStats,
)


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


def _transport_counters(view: StateView, d: int) -> dict[str, int]:
    counters = view.transport_counters(d)
    return {name: counters[col] for name, col in _TRANSPORT_COUNTERS.items()}


def _handler_calls(dev: RowView) -> HandlerCalls:
    return HandlerCalls(**dict(zip(S.HANDLER_KIND_NAMES, dev.hc, strict=True)))


def build_result(sim) -> RunResult:
    st, scen = sim.st, sim.scenario
    topo = scen.topology
    local = sim.local
    n_hosts = scen.n_hosts
    view = state_view(st)
    sc = view.sc()
    posts = []
    for k in range(sc.txlog_n):
        r = view.txlog(k)
        posts.append([r.src, r.dst, r.qp, r.bytes, r.t_post_ps, r.first_psn, r.t_acked_ps])
    messages = []
    for k in range(sc.msglog_n):
        r = view.msglog(k)
        messages.append(MessageRecord(src=r.src, dst=r.node, qp=r.qp, bytes=r.bytes,
                                      t_post_ps=None, t_first_arrival_ps=r.t_first_ps,
                                      t_done_ps=r.t_done_ps, handled_by_nic=bool(r.handled),
                                      first_psn=r.first_psn))
    links = []
    now = sc.now
    for i, link in enumerate(topo.links):
        for gp, a, b in ((sim.port_of_link[i][0], link.a, link.b),
                         (sim.port_of_link[i][1], link.b, link.a)):
            p = view.port(gp)
            if p.dev not in local:
                continue
            area = p.q_area + p.q_bytes * max(0, now - p.q_last_t) // 1000
            links.append(LinkStats(link=i, from_device=a, to_device=b, tier=link.kind,
                                   tx_frames=p.tx_frames, tx_bytes=p.tx_bytes, drops=p.drops,
                                   max_queue_bytes=p.max_q_bytes, busy_ps=p.busy_ps,
                                   queue_byte_ns=area, ecn_marks=p.ecn_marks, trims=p.trims,
                                   pauses_sent=p.pauses_tx, pauses_received=p.pauses_rx))
    nics, hosts = [], []
    for d in range(n_hosts):
        if d not in local:
            continue
        dev = view.dev(d)
        nics.append(NicStats(node=d, dma_write_bytes=dev.nic_dma_w_bytes,
                             dma_read_bytes=dev.nic_dma_r_bytes, hpu_busy_ps=dev.hpu_busy_ps,
                             handler_calls=_handler_calls(dev),
                             messages_abandoned=dev.msgs_abandoned,
                             messages_expired=dev.msgs_expired,
                             loopback_frames=dev.loopback_frames, timers=dev.timers,
                             name=topo.hosts[d], **_transport_counters(view, d)))
        hosts.append(HostStats(node=d, cpu_busy_ps=dev.host_busy_ps,
                               finished=dev.host_state == S.HOST_DONE,
                               messages_received=int(st.host_recv_count[d].sum()),
                               events_received=dev.host_event_count,
                               waiting_for=_waiting_for(st, dev, d), name=topo.hosts[d]))
    switches = []
    for s, name in enumerate(topo.switches):
        d = n_hosts + s
        if d in local:
            dev = view.dev(d)
            switches.append(SwitchStats(name=name, drops=D.drop_counts_to_dict(st.drops[d]),
                                        hpu_busy_ps=dev.hpu_busy_ps,
                                        handler_calls=_handler_calls(dev),
                                        messages_abandoned=dev.msgs_abandoned,
                                        messages_expired=dev.msgs_expired,
                                        flowlets=dev.sw_flowlets, timers=dev.timers))
    drops: dict[str, int] = {}
    for d in sorted(local):
        for k, v in D.drop_counts_to_dict(st.drops[d]).items():
            drops[k] = drops.get(k, 0) + v
    marks = {}
    for label, idx in scen.mark_index.items():
        marks[label] = {d: int(st.marks[d, idx]) for d in range(n_hosts)
                        if d in local and st.marks[d, idx] >= 0}
    end = max([now] + [m.t_done_ps for m in messages])
    queue_samples, link_samples = [], []
    if sim.queue_samples:
        direction = {}
        for i, (pa, pb) in sim.port_of_link.items():
            direction[pa], direction[pb] = (i, 0), (i, 1)
        for t, gp, q, busy in np.concatenate(sim.queue_samples).tolist():
            if q > 0:
                queue_samples.append([t, *direction[gp], q])
            if busy > 0:
                link_samples.append([t, *direction[gp], busy])
    digests = sim.host_memory_digests() if scen.engine.host_memory_digests else {}
    result = RunResult(end_time_ps=end, events=sc.events, packet_events=sc.pkt_events,
                       messages=messages, links=links, nics=nics, hosts=hosts, switches=switches, drops=dict(sorted(drops.items())),
                       marks=marks, host_memory_sha256=digests, posts=posts,
                       queue_samples=queue_samples, link_samples=link_samples)
    result.handler_memories = sim.local_handler_memories()
    result.handler_contexts = tuple(scen.contexts)
    result.pair_posts()
    result.canonicalize()
    return result
