"""Sender half of the reliable transports: what the transmit engine sends next, ACK/NAK/CNP
handling, and the retransmission timer.

A posted message keeps its row (and its place in the NIC's send queue) until every packet is
acknowledged; the queue's head is retired as soon as it is. Each step sends one packet, chosen
in this order: a UE packet marked for retransmission (a trimmed packet's NACK, a timeout), then
the next unsent packet of the first message that has one (go-back-N rewinds a message's next
packet, so RC resends in PSN order). New UE packets wait for room in the congestion window and
stay within ``WIN_PKTS`` of the oldest unacknowledged one; RC packets are paced at the
connection's DCQCN rate (``congestion.py``).

RC (IBTA go-back-N): an ACK acknowledges every PSN up to its own; a NAK (PSN sequence error)
names the PSN the receiver expects, and the sender resends from there. UE: an ACK carries the
cumulative PSN and a 64-packet selective bitmap; a NACK names a trimmed packet, which alone is
resent. A connection's timer fires ``rto_us`` after its oldest unacknowledged packet last
moved: RC goes back to it, UE resends every packet not selectively acknowledged.
"""
import numba as nb

from spin import drops as D
from spin.engine import state as S
from spin.engine.freelist import give_free
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot, copy_bytes
from spin.engine.ports import WIRE_OVERHEAD
from spin.engine.rdma import (OPC_WRITE_FIRST, OPC_WRITE_LAST, OPC_WRITE_MIDDLE, OPC_WRITE_ONLY,
                              PSN_MASK)
from spin.wire import headers as WH
from spin.wire import roce as W
from spin.wire.roce import finalize_roce_frame_no_icrc, write_roce_headers
from spin.wire.transport_frames import get_be, write_ue_write_headers

from .congestion import (dcqcn_advance, dcqcn_cut, pacing_gap_ps, window_on_ack, window_on_timeout,
                         window_on_trim)
from .entropy import packet_ev, reps_freeze, reps_on_ack
from .loopback import emit_frame
from .pcie import pcie_read
from .transport import (BITS_RTX, BITS_SACKED, ROLE_TX, bit_clear, bit_get, bit_set,
                        find_connection, kick_tx, unwrap)


@nb.njit(cache=True, _nrt=False)
def _retire_acked(st, dev):
    cap = st.txq.shape[1]
    while st.dev[dev, S.D_TXQ_N] > 0:
        head = st.dev[dev, S.D_TXQ_HEAD]
        m = st.txq[dev, head]
        if st.conn[st.txm[m, S.T_CONN], S.C_UNA] < st.txm[m, S.T_PSN] + st.txm[m, S.T_NPKTS]:
            return
        st.dev[dev, S.D_TXQ_HEAD] = (head + 1) % cap
        st.dev[dev, S.D_TXQ_N] -= 1
        give_free(st.sc, S.SC_TXM_FREE_TOP, st.txm_free, m)


@nb.njit(cache=True, _nrt=False)
def _first_rtx(st, m):
    """Index in message ``m`` of its first packet marked for retransmission, or -1."""
    c = st.txm[m, S.T_CONN]
    p0 = st.txm[m, S.T_PSN]
    lo = max(p0, st.conn[c, S.C_UNA])
    hi = min(p0 + st.txm[m, S.T_NPKTS], st.conn[c, S.C_HIGH])
    for p in range(lo, hi):
        if bit_get(st, c, BITS_RTX, p):
            return p - p0
    return -1


@nb.njit(cache=True, _nrt=False)
def reliable_tx_step(st, dev, now):
    """Send one packet (see the module docstring for which), then schedule the next step."""
    st.dev[dev, S.D_NIC_TX_SCHED] = 0
    _retire_acked(st, dev)
    n = st.dev[dev, S.D_TXQ_N]
    if n == 0:
        return
    gp = st.dev[dev, S.D_PORT0]
    if st.port[gp, S.PT_Q_N] >= st.dev[dev, S.D_NIC_TX_WINDOW]:
        return  # resumed by the port's next tx_done
    cap = st.txq.shape[1]
    head = st.dev[dev, S.D_TXQ_HEAD]
    ue = st.dev[dev, S.D_TRANSPORT] == S.TR_UE
    sel = -1
    idx = -1
    resend = False
    if ue and st.dev[dev, S.D_RTX_PENDING] > 0:
        for i in range(n):
            m = st.txq[dev, (head + i) % cap]
            if st.conn[st.txm[m, S.T_CONN], S.C_RTX_N] > 0:
                idx = _first_rtx(st, m)
                if idx >= 0:
                    sel = m
                    resend = True
                    break
    if sel < 0:
        for i in range(n):
            m = st.txq[dev, (head + i) % cap]
            if st.txm[m, S.T_NEXT] < st.txm[m, S.T_NPKTS]:
                sel = m
                idx = st.txm[m, S.T_NEXT]
                break
    if sel < 0:
        st.dev[dev, S.D_TX_NOWORK] = 1     # everything sent: wait for ACKs or the timer
        return
    c = st.txm[sel, S.T_CONN]
    psn = st.txm[sel, S.T_PSN] + idx
    mtu = st.sc[S.SC_MTU]
    if ue:
        if not resend and (psn >= st.conn[c, S.C_UNA] + S.WIN_PKTS or (
                st.conn[c, S.C_INFLIGHT] > 0
                and (st.conn[c, S.C_INFLIGHT] + 1) * mtu > st.conn[c, S.C_CWND])):
            st.dev[dev, S.D_TX_NOWORK] = 1     # window full: an ACK reopens it
            return
    else:
        dcqcn_advance(st, c, now)
        if now < st.conn[c, S.C_NEXT_SEND]:
            st.dev[dev, S.D_NIC_TX_SCHED] = 1
            push_event(st, st.conn[c, S.C_NEXT_SEND], dev, S.EV_TXM, dev, 0, 0)
            return
    t_emit = _emit(st, dev, sel, idx, c, psn, resend, now)
    if resend:
        bit_clear(st, c, BITS_RTX, psn)
        st.conn[c, S.C_RTX_N] -= 1
        st.dev[dev, S.D_RTX_PENDING] -= 1
        st.dev[dev, S.D_NTR + S.NT_RETX] += 1
    else:
        st.txm[sel, S.T_NEXT] = idx + 1
        if psn < st.conn[c, S.C_HIGH]:
            st.dev[dev, S.D_NTR + S.NT_RETX] += 1    # go-back-N resends
        else:
            st.conn[c, S.C_HIGH] = psn + 1
    if ue:
        st.conn[c, S.C_INFLIGHT] += 1
    if st.conn[c, S.C_RTO_PENDING] == 0:
        st.conn[c, S.C_RTO_AT] = now + st.sc[S.SC_TRP + S.TRP_RTO_PS]
        st.conn[c, S.C_RTO_PENDING] = 1
        push_event(st, st.conn[c, S.C_RTO_AT], dev, S.EV_RTO, dev, c, 0)
    st.dev[dev, S.D_NIC_TX_SCHED] = 1
    push_event(st, t_emit, dev, S.EV_TXM, dev, 0, 0)


@nb.njit(cache=True, _nrt=False)
def _emit(st, dev, m, idx, c, psn, resend, now):
    """Build packet ``idx`` of message ``m`` (PSN ``psn``) and queue it; returns when its data
    left host memory."""
    mtu = st.sc[S.SC_MTU]
    total = st.txm[m, S.T_LEN]
    npkts = st.txm[m, S.T_NPKTS]
    sent = idx * mtu
    chunk = min(mtu, total - sent)
    last = idx == npkts - 1
    # first transmissions stream from the post time (reads issued back to back); resends
    # read the host memory again now
    first_time = not resend and psn >= st.conn[c, S.C_HIGH]
    ready = pcie_read(st, dev, st.txm[m, S.T_T_POST] if first_time else now, chunk)
    t_emit = max(ready, now)
    slot = alloc_slot(st)
    frame = st.pool[slot]
    ev = packet_ev(st, dev, c, now)
    if st.dev[dev, S.D_TRANSPORT] == S.TR_UE:
        off = write_ue_write_headers(frame, st.dev[dev, S.D_NODE], st.txm[m, S.T_DST], ev,
                                     st.txm[m, S.T_QP], psn & PSN_MASK, st.txm[m, S.T_REMOTE_VA],
                                     st.txm[m, S.T_RKEY], total,
                                     st.txm[m, S.T_PSN] & PSN_MASK, chunk)
    else:
        if idx == 0:
            opc = OPC_WRITE_ONLY if last else OPC_WRITE_FIRST
        else:
            opc = OPC_WRITE_LAST if last else OPC_WRITE_MIDDLE
        off = write_roce_headers(frame, st.dev[dev, S.D_NODE], st.txm[m, S.T_DST], ev, opc,
                                 st.txm[m, S.T_QP], psn & PSN_MASK, 1 if last else 0,
                                 st.txm[m, S.T_REMOTE_VA], st.txm[m, S.T_RKEY], total, chunk,
                                 psn & 0xFFFF)
    copy_bytes(frame, off, st.host_mem,
               st.dev[dev, S.D_HOST_MEM_OFF] + st.txm[m, S.T_HOST_ADDR] + sent, chunk)
    length = finalize_roce_frame_no_icrc(frame, off, chunk)
    st.slot_len[slot] = length
    st.slot_trusted[slot] = ICRC_PENDING
    if st.dev[dev, S.D_TRANSPORT] == S.TR_RC:
        gap = pacing_gap_ps(st, c, length + WIRE_OVERHEAD)
        if gap > 0:
            st.conn[c, S.C_NEXT_SEND] = max(st.conn[c, S.C_NEXT_SEND], t_emit) + gap
    emit_frame(st, dev, st.txm[m, S.T_DST], slot, t_emit, now)
    return t_emit


@nb.njit(cache=True, _nrt=False)
def go_back(st, dev, c, psn):
    """RC: resend connection ``c``'s packets from ``psn`` on (rewind its messages)."""
    cap = st.txq.shape[1]
    head = st.dev[dev, S.D_TXQ_HEAD]
    for i in range(st.dev[dev, S.D_TXQ_N]):
        m = st.txq[dev, (head + i) % cap]
        if st.txm[m, S.T_CONN] != c:
            continue
        start = st.txm[m, S.T_PSN]
        if start + st.txm[m, S.T_NPKTS] > psn:
            idx = max(0, psn - start)
            if idx < st.txm[m, S.T_NEXT]:
                st.txm[m, S.T_NEXT] = idx


@nb.njit(cache=True, _nrt=False)
def _mark_lost(st, dev, c, p):
    """UE: packet ``p`` will not be acknowledged: resend it (it no longer counts in flight)."""
    if bit_get(st, c, BITS_SACKED, p) or bit_get(st, c, BITS_RTX, p):
        return
    bit_set(st, c, BITS_RTX, p)
    st.conn[c, S.C_RTX_N] += 1
    st.dev[dev, S.D_RTX_PENDING] += 1
    st.conn[c, S.C_INFLIGHT] = max(0, st.conn[c, S.C_INFLIGHT] - 1)


@nb.njit(cache=True, _nrt=False)
def _acked(st, dev, c, p):
    """UE: packet ``p`` arrived. Returns 1 when that is news (it counted in flight)."""
    if bit_get(st, c, BITS_RTX, p):
        bit_clear(st, c, BITS_RTX, p)
        st.conn[c, S.C_RTX_N] -= 1
        st.dev[dev, S.D_RTX_PENDING] -= 1
        return 0
    return 1


@nb.njit(cache=True, _nrt=False)
def _advance_una(st, dev, c, new_una, now):
    """Move the cumulative point to ``new_una``; returns how many packets that newly acked."""
    row = st.conn[c]
    una = row[S.C_UNA]
    new_una = min(new_una, row[S.C_HIGH])
    if new_una <= una:
        return 0
    newly = 0
    for p in range(una, new_una):
        if bit_get(st, c, BITS_SACKED, p):
            bit_clear(st, c, BITS_SACKED, p)
        else:
            newly += _acked(st, dev, c, p)
    row[S.C_UNA] = new_una
    row[S.C_RTO_AT] = now + st.sc[S.SC_TRP + S.TRP_RTO_PS]
    return newly


@nb.njit(cache=True, _nrt=False)
def on_control(st, dev, out, frame, now):
    """An ACK, NAK, CNP or UE ACK for one of this NIC's sending connections; returns
    ``drops.OK`` or the reason to drop it."""
    op = out[W.P_OPCODE]
    c = find_connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_TX)
    if c < 0:
        return D.TRANSPORT_MISMATCH
    tr = st.dev[dev, S.D_TRANSPORT]
    if op == WH.OP_CNP:
        st.dev[dev, S.D_NTR + S.NT_CNPS_RX] += 1
        if tr == S.TR_RC:
            dcqcn_cut(st, dev, c, now)
        return D.OK
    if (op == WH.OP_UE_ACK) != (tr == S.TR_UE):
        return D.TRANSPORT_MISMATCH
    syndrome = out[W.P_AUX] >> 24
    nak = (syndrome & 0x60) == 0x60
    row = st.conn[c]
    psn = unwrap(out[W.P_PSN], row[S.C_UNA])
    if nak:
        st.dev[dev, S.D_NTR + S.NT_NAKS_RX] += 1
    else:
        st.dev[dev, S.D_NTR + S.NT_ACKS_RX] += 1
    if tr == S.TR_RC:
        if nak:
            _advance_una(st, dev, c, psn, now)
            go_back(st, dev, c, psn)
        else:
            _advance_una(st, dev, c, psn + 1, now)
        kick_tx(st, dev, now)
        return D.OK
    mtu = st.sc[S.SC_MTU]
    s = out[W.P_EXT_OFF] + WH.AETH_BYTES
    cum = unwrap(get_be(frame, s, 4) & PSN_MASK, row[S.C_UNA])
    newly = _advance_una(st, dev, c, cum, now)
    base = unwrap(get_be(frame, s + 4, 4) & PSN_MASK, row[S.C_UNA])
    bitmap = get_be(frame, s + 8, 8)
    echo_ev = get_be(frame, s + 16, 2)
    marked = (get_be(frame, s + 18, 2) & WH.SACK_FLAG_ECN) != 0
    lo = max(base, row[S.C_UNA])
    hi = min(base + 64, row[S.C_HIGH])
    for p in range(lo, hi):
        if (bitmap >> (p - base)) & 1 and not bit_get(st, c, BITS_SACKED, p):
            bit_set(st, c, BITS_SACKED, p)
            newly += _acked(st, dev, c, p)
    row[S.C_INFLIGHT] = max(0, row[S.C_INFLIGHT] - newly)
    if nak:
        if row[S.C_UNA] <= psn < row[S.C_HIGH]:
            _mark_lost(st, dev, c, psn)
        window_on_trim(st, c, mtu)
        reps_freeze(st, dev, c, now)
    else:
        window_on_ack(st, c, newly * mtu, marked, mtu)
        if st.dev[dev, S.D_ENTROPY] == S.ENT_REPS:
            reps_on_ack(st, c, echo_ev, marked)
    kick_tx(st, dev, now)
    return D.OK


@nb.njit(cache=True, _nrt=False)
def rto_fired(st, dev, c, now):
    """Connection ``c``'s retransmission timer: re-arm if the oldest unacknowledged packet
    moved since it was set, otherwise time out. Returns True only on a timeout (the other
    firings change nothing, so they do not move the run's clock)."""
    row = st.conn[c]
    row[S.C_RTO_PENDING] = 0
    if row[S.C_UNA] >= row[S.C_HIGH]:
        return False   # nothing outstanding; the next send arms it again
    if now < row[S.C_RTO_AT]:
        row[S.C_RTO_PENDING] = 1
        push_event(st, row[S.C_RTO_AT], dev, S.EV_RTO, dev, c, 0)
        return False   # only moved on: nothing happened now
    st.dev[dev, S.D_NTR + S.NT_TIMEOUTS] += 1
    if st.dev[dev, S.D_TRANSPORT] == S.TR_RC:
        go_back(st, dev, c, row[S.C_UNA])
    else:
        for p in range(row[S.C_UNA], row[S.C_HIGH]):
            _mark_lost(st, dev, c, p)
        window_on_timeout(st, c, st.sc[S.SC_MTU])
        reps_freeze(st, dev, c, now)
    row[S.C_RTO_AT] = now + st.sc[S.SC_TRP + S.TRP_RTO_PS]
    row[S.C_RTO_PENDING] = 1
    push_event(st, row[S.C_RTO_AT], dev, S.EV_RTO, dev, c, 0)
    kick_tx(st, dev, now)
    return True
