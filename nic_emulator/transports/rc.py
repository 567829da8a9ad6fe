"""RoCEv2 reliable connection (``rc``; IBTA vol. 1 chapter 9, go-back-N).

Sender: packets leave in PSN order, paced at the connection's DCQCN rate (``congestion.py``).
An ACK acknowledges every PSN up to its own; a NAK (PSN sequence error) names the PSN the
receiver expects and the sender resends from there; a CNP cuts the rate. The timer fires
``rto_us`` after the oldest unacknowledged packet last moved and goes back to it.

Receiver: only the expected PSN is accepted. An older PSN is a duplicate (dropped, answered with
an ACK so a sender that missed ACKs moves on); a newer one means packets were lost (dropped,
answered with one NAK per gap). Accepted packets are acknowledged every ``ack_every_packets``,
on every message's last packet (the sender sets AckReq there) and on AckReq. An ECN-marked
packet makes the receiver send a CNP, at most one per ``cnp_interval_us`` per connection
(DCQCN's notification point).
"""

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.heap import push_event
from spin.engine.ports import WIRE_OVERHEAD
from spin.engine.rdma import (OPC_WRITE_FIRST, OPC_WRITE_LAST, OPC_WRITE_MIDDLE, OPC_WRITE_ONLY,
                              PSN_MASK)
from spin.wire import headers as WH
from spin.wire import roce as W
from ..payload import payload_stored
from spin.wire.roce import write_roce_headers

from ..congestion import dcqcn_advance, dcqcn_cut, pacing_gap_ps
from ..entropy import packet_ev
from .connections import (ECN_CE, ROLE_RX, ROLE_TX, connection, find_connection, kick_tx,
                          note_order, send_control, unwrap)
from .in_order import find_in_order
from .sending import (begin_turn, end_turn, finish_packet, next_unsent, rearm_timer,
                      retire_acked, sent_in_order, start_packet, timer_expired, wait_for_ack)
from spin.jit import njit


# --- sender ------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def tx_step(st, dev, now):
    """Send the next packet in PSN order when the connection's rate allows."""
    if not begin_turn(st, dev, now):
        return
    m, idx = next_unsent(st, dev)
    if m < 0:
        wait_for_ack(st, dev)   # everything sent: wait for ACKs or the timer
        return
    c = st.txm[m, S.T_CONN]
    psn = st.txm[m, S.T_PSN] + idx
    dcqcn_advance(st, c, now)
    if now < st.conn[c, S.C_NEXT_SEND]:
        st.dev[dev, S.D_NIC_TX_SCHED] = 1
        push_event(st, st.conn[c, S.C_NEXT_SEND], dev, S.EV_TXM, dev, 0, 0)
        return
    slot, chunk, last, t_emit = start_packet(st, dev, m, idx, c, psn, False, now)
    if idx == 0:
        opc = OPC_WRITE_ONLY if last else OPC_WRITE_FIRST
    else:
        opc = OPC_WRITE_LAST if last else OPC_WRITE_MIDDLE
    off = write_roce_headers(st.pool[slot], st.dev[dev, S.D_NODE], st.txm[m, S.T_DST],
                             packet_ev(st, dev, c, now), opc, st.txm[m, S.T_QP], psn & PSN_MASK,
                             1 if last else 0, st.txm[m, S.T_REMOTE_VA], st.txm[m, S.T_RKEY],
                             st.txm[m, S.T_LEN], chunk, psn & 0xFFFF, payload_stored(st))
    length = finish_packet(st, dev, m, idx, slot, off, chunk, t_emit, now)
    gap = pacing_gap_ps(st, c, length + WIRE_OVERHEAD)
    if gap > 0:
        st.conn[c, S.C_NEXT_SEND] = max(st.conn[c, S.C_NEXT_SEND], t_emit) + gap
    sent_in_order(st, dev, m, idx, c, psn)
    end_turn(st, dev, c, t_emit, now)


@njit(cache=True, _nrt=False)
def _go_back(st, dev, c, psn):
    """Resend connection ``c``'s packets from ``psn`` on (rewind its messages)."""
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


@njit(cache=True, _nrt=False)
def _advance_una(st, c, new_una, now):
    """Everything below ``new_una`` is acknowledged; the timer restarts when that moved."""
    row = st.conn[c]
    new_una = min(new_una, row[S.C_HIGH])
    if new_una > row[S.C_UNA]:
        row[S.C_UNA] = new_una
        row[S.C_RTO_AT] = now + st.sc[S.SC_TRP + S.TRP_RTO_PS]


@njit(cache=True, _nrt=False)
def on_control(st, dev, out, frame, now):
    op = out[W.P_OPCODE]
    c = find_connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_TX)
    if c < 0:
        return D.TRANSPORT_MISMATCH
    if op == WH.OP_CNP:
        st.dev[dev, S.D_NTR + S.NT_CNPS_RX] += 1
        dcqcn_cut(st, dev, c, now)
        return D.OK
    if op != WH.OP_RC_ACKNOWLEDGE:
        return D.TRANSPORT_MISMATCH
    psn = unwrap(out[W.P_PSN], st.conn[c, S.C_UNA])
    if (out[W.P_AUX] >> 24 & 0x60) == 0x60:   # AETH syndrome: NAK
        st.dev[dev, S.D_NTR + S.NT_NAKS_RX] += 1
        _advance_una(st, c, psn, now)
        _go_back(st, dev, c, psn)
    else:
        st.dev[dev, S.D_NTR + S.NT_ACKS_RX] += 1
        _advance_una(st, c, psn + 1, now)
    retire_acked(st, dev, now)
    kick_tx(st, dev, now)
    return D.OK


@njit(cache=True, _nrt=False)
def on_timeout(st, dev, c, now):
    if not timer_expired(st, dev, c, now):
        return False
    _go_back(st, dev, c, st.conn[c, S.C_UNA])
    rearm_timer(st, dev, c, now)
    kick_tx(st, dev, now)
    return True


# --- receiver ----------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def carries(opcode):
    return opcode != WH.OP_UE_WRITE


@njit(cache=True, _nrt=False)
def _ack(st, dev, c, syndrome, psn, now):
    send_control(st, dev, c, WH.OP_RC_ACKNOWLEDGE, psn, syndrome, st.conn[c, S.C_MSN], 0, 0, 0,
                 0, 0, now)
    st.conn[c, S.C_UNACKED] = 0
    sent = S.NT_NAKS_TX if syndrome == WH.AETH_NAK_PSN_SEQUENCE else S.NT_ACKS_TX
    st.dev[dev, S.D_NTR + sent] += 1


@njit(cache=True, _nrt=False)
def admit(st, dev, out, now):
    c = connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_RX)
    row = st.conn[c]
    expected = row[S.C_RCV]
    psn = unwrap(out[W.P_PSN], expected)
    if psn < expected:
        st.dev[dev, S.D_NTR + S.NT_DUPS] += 1
        _ack(st, dev, c, WH.AETH_ACK, expected - 1, now)
        return D.DUPLICATE, -1, psn
    note_order(st, dev, c, psn)
    if psn == expected:
        return D.OK, c, psn
    if row[S.C_NAK_SENT] == 0:
        row[S.C_NAK_SENT] = 1
        _ack(st, dev, c, WH.AETH_NAK_PSN_SEQUENCE, expected, now)
    return D.OUT_OF_SEQUENCE, -1, psn


@njit(cache=True, _nrt=False)
def find_message(st, dev, out, psn, timer, now):
    return find_in_order(st, dev, out, timer, now)


@njit(cache=True, _nrt=False)
def accepted(st, dev, c, psn, out, message_done, now):
    row = st.conn[c]
    row[S.C_UNACKED] += 1
    row[S.C_RCV] = psn + 1
    row[S.C_NAK_SENT] = 0
    if message_done:
        row[S.C_MSN] += 1
    if out[W.P_ECN] == ECN_CE and (
            row[S.C_LAST_CNP] < 0
            or now - row[S.C_LAST_CNP] >= st.sc[S.SC_TRP + S.TRP_CNP_INTERVAL_PS]):
        row[S.C_LAST_CNP] = now
        send_control(st, dev, c, WH.OP_CNP, 0, 0, 0, 0, 0, 0, 0, 0, now)
        st.dev[dev, S.D_NTR + S.NT_CNPS_TX] += 1
    if row[S.C_UNACKED] >= st.sc[S.SC_TRP + S.TRP_ACK_EVERY] or message_done \
            or out[W.P_ACK_REQ] != 0:
        _ack(st, dev, c, WH.AETH_ACK, psn, now)


@njit(cache=True, _nrt=False)
def on_trimmed(st, dev, out, now):
    return   # RC has no trimming: the packet is lost, and the PSN gap after it is NAKed
