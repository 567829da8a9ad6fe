"""Turn the engine's counters and logs into a RunResult (only devices this worker owns)."""
from __future__ import annotations

import numpy as np

from . import drops as D
from .engine import state as S
from .results import (HandlerCalls, HostStats, LinkStats, MessageRecord, NicStats, RunResult,
                      SwitchStats)


def _waiting_for(st, d: int) -> str:
    """Where an unfinished host program stopped, in the words of its ops ("" when finished)."""
    state, pc = int(st.dev[d, S.D_HOST_STATE]), int(st.dev[d, S.D_HOST_PC])
    target = int(st.dev[d, S.D_WAIT1])
    if state == S.HOST_WAIT_RECV:
        qp = int(st.dev[d, S.D_WAIT0])
        return (f"waits at op {pc} (wait_recv qp={qp}): {int(st.host_recv_count[d, qp])} of "
                f"{target} messages received on qp {qp}")
    if state == S.HOST_WAIT_EVENT:
        return (f"waits at op {pc} (wait_event): {int(st.dev[d, S.D_HOST_EVENT_COUNT])} of "
                f"{target} host events received")
    if state == S.HOST_RUNNING:
        return f"was still running at op {pc} of {int(st.dev[d, S.D_HOST_OP_COUNT])}"
    return ""


_TRANSPORT_COUNTERS = {"retransmissions": S.NT_RETX, "timeouts": S.NT_TIMEOUTS,
                       "acks_sent": S.NT_ACKS_TX, "naks_sent": S.NT_NAKS_TX,
                       "cnps_sent": S.NT_CNPS_TX, "acks_received": S.NT_ACKS_RX,
                       "naks_received": S.NT_NAKS_RX, "cnps_received": S.NT_CNPS_RX,
                       "out_of_order": S.NT_OOO, "reorder_degree": S.NT_REORDER,
                       "duplicates": S.NT_DUPS, "min_rate_mbps": S.NT_MIN_RATE}


def _transport_counters(st, d: int) -> dict[str, int]:
    return {name: int(st.dev[d, S.D_NTR + col]) for name, col in _TRANSPORT_COUNTERS.items()}


def build_result(sim) -> RunResult:
    st, scen = sim.st, sim.scenario
    topo = scen.topology
    local = sim.local
    n_hosts = scen.n_hosts
    posts = [[int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5])]
             for r in st.txlog[:int(st.sc[S.SC_TXLOG_N])]]
    messages = []
    for row in st.msglog[:int(st.sc[S.SC_MSGLOG_N])]:
        dst, src, qp = int(row[0]), int(row[1]), int(row[2])
        messages.append(MessageRecord(src=src, dst=dst, qp=qp, bytes=int(row[3]), t_post_ps=None,
                                      t_first_arrival_ps=int(row[4]), t_done_ps=int(row[5]),
                                      handled_by_nic=bool(row[7]), first_psn=int(row[8])))
    links = []
    now = int(st.sc[S.SC_NOW])
    for i, link in enumerate(topo.links):
        for gp, a, b in ((sim.port_of_link[i][0], link.a, link.b),
                         (sim.port_of_link[i][1], link.b, link.a)):
            if int(st.port[gp, S.PT_DEV]) not in local:
                continue
            p = st.port[gp]
            area = int(p[S.PT_Q_AREA]) \
                + int(p[S.PT_Q_BYTES]) * max(0, now - int(p[S.PT_Q_LAST_T])) // 1000
            links.append(LinkStats(link=i, from_device=a, to_device=b, tier=link.kind,
                                   tx_frames=int(p[S.PT_TX_FRAMES]), tx_bytes=int(p[S.PT_TX_BYTES]),
                                   drops=int(p[S.PT_DROPS]),
                                   max_queue_bytes=int(p[S.PT_MAX_Q_BYTES]),
                                   busy_ps=int(p[S.PT_BUSY_PS]), queue_byte_ns=area,
                                   ecn_marks=int(p[S.PT_ECN_MARKS]), trims=int(p[S.PT_TRIMS]),
                                   pauses_sent=int(p[S.PT_PAUSES_TX]),
                                   pauses_received=int(p[S.PT_PAUSES_RX])))
    nics, hosts = [], []
    for d in range(n_hosts):
        if d not in local:
            continue
        calls = HandlerCalls(**{k: int(st.dev[d, S.D_HC + i])
                                for i, k in enumerate(S.HANDLER_KIND_NAMES)})
        nics.append(NicStats(node=d, dma_write_bytes=int(st.dev[d, S.D_NIC_DMA_W_BYTES]),
                             dma_read_bytes=int(st.dev[d, S.D_NIC_DMA_R_BYTES]),
                             hpu_busy_ps=int(st.dev[d, S.D_HPU_BUSY_PS]), handler_calls=calls,
                             messages_abandoned=int(st.dev[d, S.D_MSGS_ABANDONED]),
                             messages_expired=int(st.dev[d, S.D_MSGS_EXPIRED]),
                             loopback_frames=int(st.dev[d, S.D_LOOPBACK_FRAMES]),
                             timers=int(st.dev[d, S.D_TIMERS]),
                             **_transport_counters(st, d)))
        hosts.append(HostStats(node=d, cpu_busy_ps=int(st.dev[d, S.D_HOST_BUSY_PS]),
                               finished=bool(st.dev[d, S.D_HOST_STATE] == S.HOST_DONE),
                               messages_received=int(st.host_recv_count[d].sum()),
                               events_received=int(st.dev[d, S.D_HOST_EVENT_COUNT]),
                               waiting_for=_waiting_for(st, d)))
    switches = []
    for s, name in enumerate(topo.switches):
        d = n_hosts + s
        if d in local:
            calls = HandlerCalls(**{k: int(st.dev[d, S.D_HC + i])
                                    for i, k in enumerate(S.HANDLER_KIND_NAMES)})
            switches.append(SwitchStats(name=name, drops=D.drop_counts_to_dict(st.drops[d]),
                                        hpu_busy_ps=int(st.dev[d, S.D_HPU_BUSY_PS]),
                                        handler_calls=calls,
                                        messages_abandoned=int(st.dev[d, S.D_MSGS_ABANDONED]),
                                        messages_expired=int(st.dev[d, S.D_MSGS_EXPIRED]),
                                        flowlets=int(st.dev[d, S.D_SW_FLOWLETS]),
                                        timers=int(st.dev[d, S.D_TIMERS])))
    drops: dict[str, int] = {}
    for d in sorted(local):
        for k, v in D.drop_counts_to_dict(st.drops[d]).items():
            drops[k] = drops.get(k, 0) + v
    marks = {}
    for label, idx in scen.mark_index.items():
        marks[label] = {d: int(st.marks[d, idx]) for d in range(n_hosts)
                        if d in local and st.marks[d, idx] >= 0}
    end = max([int(st.sc[S.SC_NOW])] + [m.t_done_ps for m in messages])
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
    result = RunResult(end_time_ps=end, events=int(st.sc[S.SC_EVENTS]),
                       packet_events=int(st.sc[S.SC_PKT_EVENTS]), messages=messages, links=links,
                       nics=nics, hosts=hosts, switches=switches, drops=dict(sorted(drops.items())),
                       marks=marks, host_memory_sha256=sim.host_memory_digests(), posts=posts,
                       queue_samples=queue_samples, link_samples=link_samples)
    result.handler_memories = sim.local_handler_memories()
    result.handler_contexts = tuple(scen.contexts)
    result.pair_posts()
    result.canonicalize()
    return result
