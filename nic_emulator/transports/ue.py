"""Ultra-Ethernet-style transport (``ue``) for sprayed traffic: every packet carries its
placement, so the receiver writes it to host memory in any order.

Receiver: any PSN within ``WIN_PKTS`` of the cumulative point is accepted once, in any order,
and placed at its PLH address (whichever packet of a message comes first opens it); duplicates
are dropped and re-acknowledged. ACKs carry the cumulative PSN, a 64-packet bitmap around the
packet acknowledged, and that packet's EV and ECN mark. A trimmed packet is answered at once
with a NACK naming its PSN.

ACKs coalesce: one per ``ack_every_packets``, and one at once for a packet flagged AckReq, an
ECN-marked packet (``ack_on_ecn``) and a message's last packet.

Sender: a packet marked for retransmission (a NACKed trim, a timeout) goes first, then the next
unsent one. New packets wait for room in the congestion window (NSCC, ``nscc.py``, or the
ECN-only window of ``congestion.py``) and stay within ``WIN_PKTS`` of the oldest
unacknowledged one; the packet after which the window is full asks for an ACK at once
(AckReq), so a coalescing receiver never sits on the last packets of a window. One packet per
round trip is timed: the RTT drives NSCC's delay signal and the retransmission timeout. A
timeout resends every packet not selectively acknowledged.
"""
import numpy as np

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.hashmap import map_get, map_put
from spin.engine.messages import has_message_room, match_ec, new_message
from spin.engine.rdma import PSN_MASK
from spin.wire import headers as WH
from spin.wire import roce as W
from ..payload import payload_stored
from spin.wire.transport_frames import get_be, write_ue_write_headers

from ..congestion import window_on_ack, window_on_timeout, window_on_trim
from ..entropy import packet_ev, reps_freeze, reps_on_ack
from ..nscc import nscc_on_ack, nscc_on_timeout, nscc_on_trim, rtt_acked, rtt_forget, rtt_start
from .connections import (BITS_RCVD, BITS_RTX, BITS_SACKED, ECN_CE, ROLE_RX, ROLE_TX, bit_clear,
                          bit_get, bit_set, connection, find_connection, kick_tx, note_order,
                          send_control, unwrap)
from .sending import (arm_rto, begin_turn, end_turn, finish_packet, next_unsent, rearm_timer,
                      retire_acked, sent_in_order, start_packet, timer_expired, wait_for_ack)
from spin.jit import njit


# --- sender ------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _next_resend(st, dev):
    """(message, packet index) of the first packet marked for retransmission, or (-1, -1)."""
    if st.dev[dev, S.D_RTX_PENDING] > 0:
        cap = st.txq.shape[1]
        head = st.dev[dev, S.D_TXQ_HEAD]
        for i in range(st.dev[dev, S.D_TXQ_N]):
            m = st.txq[dev, (head + i) % cap]
            if st.conn[st.txm[m, S.T_CONN], S.C_RTX_N] > 0:
                idx = _first_rtx(st, m)
                if idx >= 0:
                    return m, idx
    return -1, -1


@njit(cache=True, _nrt=False)
def tx_step(st, dev, now):
    """Send a packet to resend, else the next new one the window allows."""
    if not begin_turn(st, dev, now):
        return
    m, idx = _next_resend(st, dev)
    resend = m >= 0
    if not resend:
        m, idx = next_unsent(st, dev)
        if m < 0:
            wait_for_ack(st, dev)   # everything sent: wait for ACKs or the timer
            return
    c = st.txm[m, S.T_CONN]
    psn = st.txm[m, S.T_PSN] + idx
    mtu = st.sc[S.SC_MTU]
    if not resend and (psn >= st.conn[c, S.C_UNA] + S.WIN_PKTS or (
            st.conn[c, S.C_INFLIGHT] > 0
            and (st.conn[c, S.C_INFLIGHT] + 1) * mtu > st.conn[c, S.C_CWND])):
        wait_for_ack(st, dev)   # window full: an ACK reopens it
        return
    first_time = not resend and psn >= st.conn[c, S.C_HIGH]
    slot, chunk, last, t_emit = start_packet(st, dev, m, idx, c, psn, resend, now)
    closes = (st.conn[c, S.C_INFLIGHT] + 2) * mtu > st.conn[c, S.C_CWND]   # AckReq
    off = write_ue_write_headers(st.pool[slot], st.dev[dev, S.D_NODE], st.txm[m, S.T_DST],
                                 packet_ev(st, dev, c, now), st.txm[m, S.T_QP], psn & PSN_MASK,
                                 st.txm[m, S.T_REMOTE_VA], st.txm[m, S.T_RKEY],
                                 st.txm[m, S.T_LEN], st.txm[m, S.T_PSN] & PSN_MASK, chunk,
                                 1 if closes else 0, payload_stored(st))
    finish_packet(st, dev, m, idx, slot, off, chunk, t_emit, now)
    if first_time:
        rtt_start(st, c, psn, t_emit)
    else:
        rtt_forget(st, c, psn)      # Karn: a resent packet's ACK times neither copy
    if resend:
        bit_clear(st, c, BITS_RTX, psn)
        st.conn[c, S.C_RTX_N] -= 1
        st.dev[dev, S.D_RTX_PENDING] -= 1
        st.dev[dev, S.D_NTR + S.NT_RETX] += 1
    else:
        sent_in_order(st, dev, m, idx, c, psn)
    st.conn[c, S.C_INFLIGHT] += 1
    end_turn(st, dev, c, t_emit, now)


@njit(cache=True, _nrt=False)
def _mark_lost(st, dev, c, p):
    """Packet ``p`` will not be acknowledged: resend it (it no longer counts in flight)."""
    if bit_get(st, c, BITS_SACKED, p) or bit_get(st, c, BITS_RTX, p):
        return
    bit_set(st, c, BITS_RTX, p)
    st.conn[c, S.C_RTX_N] += 1
    st.dev[dev, S.D_RTX_PENDING] += 1
    st.conn[c, S.C_INFLIGHT] = max(0, st.conn[c, S.C_INFLIGHT] - 1)


@njit(cache=True, _nrt=False)
def _acked(st, dev, c, p):
    """Packet ``p`` arrived. Returns 1 when that is news (it counted in flight)."""
    if bit_get(st, c, BITS_RTX, p):
        bit_clear(st, c, BITS_RTX, p)
        st.conn[c, S.C_RTX_N] -= 1
        st.dev[dev, S.D_RTX_PENDING] -= 1
        return 0
    return 1


@njit(cache=True, _nrt=False)
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
    arm_rto(st, dev, c, now)
    return newly


@njit(cache=True, _nrt=False)
def on_control(st, dev, out, frame, now):
    op = out[W.P_OPCODE]
    c = find_connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_TX)
    if c < 0:
        return D.TRANSPORT_MISMATCH
    if op == WH.OP_CNP:
        st.dev[dev, S.D_NTR + S.NT_CNPS_RX] += 1   # counted; the window reacts to ECN echoes
        return D.OK
    if op != WH.OP_UE_ACK:
        return D.TRANSPORT_MISMATCH
    nak = (out[W.P_AUX] >> 24 & 0x60) == 0x60
    row = st.conn[c]
    psn = unwrap(out[W.P_PSN], row[S.C_UNA])
    if nak:
        st.dev[dev, S.D_NTR + S.NT_NAKS_RX] += 1
    else:
        st.dev[dev, S.D_NTR + S.NT_ACKS_RX] += 1
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
    timed = row[S.C_RTT_PSN]
    if timed >= 0 and (timed < row[S.C_UNA] or bit_get(st, c, BITS_SACKED, timed)):
        rtt_acked(st, c, now)
    nscc = st.sc[S.SC_TRP + S.TRP_CC] != 0
    if nak:
        if row[S.C_UNA] <= psn < row[S.C_HIGH]:
            _mark_lost(st, dev, c, psn)
        if nscc:
            nscc_on_trim(st, c, mtu)
        else:
            window_on_trim(st, c, mtu)
        reps_freeze(st, dev, c, now)
    else:
        if nscc:
            nscc_on_ack(st, c, newly * mtu, marked, mtu, now)
        else:
            window_on_ack(st, c, newly * mtu, marked, mtu)
        if st.dev[dev, S.D_ENTROPY] == S.ENT_REPS:
            reps_on_ack(st, c, echo_ev, marked)
    retire_acked(st, dev, now)
    kick_tx(st, dev, now)
    return D.OK


@njit(cache=True, _nrt=False)
def on_timeout(st, dev, c, now):
    if not timer_expired(st, dev, c, now):
        return False
    row = st.conn[c]
    for p in range(row[S.C_UNA], row[S.C_HIGH]):
        _mark_lost(st, dev, c, p)
    rtt_forget(st, c, row[S.C_RTT_PSN])
    if st.sc[S.SC_TRP + S.TRP_CC] != 0:
        nscc_on_timeout(st, c, st.sc[S.SC_MTU])
    else:
        window_on_timeout(st, c, st.sc[S.SC_MTU])
    reps_freeze(st, dev, c, now)
    rearm_timer(st, dev, c, now)
    kick_tx(st, dev, now)
    return True


# --- receiver ----------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def carries(opcode):
    return opcode == WH.OP_UE_WRITE


@njit(cache=True, _nrt=False)
def _ack(st, dev, c, psn, syndrome, echo_ev, ecn, now):
    """Selective ACK (or NACK) for PSN ``psn``: cumulative point plus the 64-PSN block."""
    cum = st.conn[c, S.C_RCV]
    base = psn & ~np.int64(63) if psn >= cum else cum & ~np.int64(63)
    word = st.conn_bits[c, BITS_RCVD + ((base & (S.WIN_PKTS - 1)) >> 6)]
    below = cum - base       # PSNs of the block below the cumulative point all arrived
    if below >= 64:
        word = np.int64(-1)
    elif below > 0:
        word |= (np.int64(1) << below) - 1
    send_control(st, dev, c, WH.OP_UE_ACK, psn, syndrome, 0, cum, base, word, echo_ev,
                 WH.SACK_FLAG_ECN if ecn else 0, now)
    st.conn[c, S.C_UNACKED] = 0
    st.conn[c, S.C_ACK_ECN] = 0
    sent = S.NT_NAKS_TX if syndrome == WH.AETH_NAK_PSN_SEQUENCE else S.NT_ACKS_TX
    st.dev[dev, S.D_NTR + sent] += 1


@njit(cache=True, _nrt=False)
def admit(st, dev, out, now):
    c = connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_RX)
    row = st.conn[c]
    psn = unwrap(out[W.P_PSN], row[S.C_RCV])
    if psn < row[S.C_RCV] or (psn < row[S.C_RCV] + S.WIN_PKTS and bit_get(st, c, BITS_RCVD, psn)):
        st.dev[dev, S.D_NTR + S.NT_DUPS] += 1
        _ack(st, dev, c, psn, WH.AETH_ACK, out[W.P_EV], out[W.P_ECN] == ECN_CE, now)
        return D.DUPLICATE, -1, psn
    if psn >= row[S.C_RCV] + S.WIN_PKTS:
        return D.BEYOND_WINDOW, -1, psn
    note_order(st, dev, c, psn)
    return D.OK, c, psn


@njit(cache=True, inline="always", _nrt=False)
def _message_key(dev, src, qp, msg_psn):
    """Receive-map key of a message (bit 61 set: never equal to an in-order connection key; the
    row's own fields are compared on every hit)."""
    k = ((np.int64(dev) & 0x1FFF) << 48) | ((np.int64(src) & 0xFFFFFF) << 24) \
        | (np.int64(msg_psn) & 0xFFFFFF)
    return (np.int64(1) << 61) | ((k ^ ((np.int64(qp) & 0xFFFFFF) << 20)) & ((np.int64(1) << 61) - 1))


@njit(cache=True, _nrt=False)
def find_message(st, dev, out, psn, timer, now):
    """Out-of-order placement: whichever packet of a message comes first opens it (its PLH
    names the message's first PSN and length)."""
    src = out[W.P_SRC_NODE]
    qp = out[W.P_DEST_QP]
    msg_psn = unwrap(out[W.P_AUX], psn)
    key = _message_key(dev, src, qp, msg_psn)
    cyc = st.dev[dev, S.D_CYCLE_PS]
    m = map_get(st.rx_keys, st.rx_vals, key)
    first = m < 0
    if first:
        if not has_message_room(st, dev, now):
            return D.NO_MESSAGE_SLOT, -1, first, 0, 0, key
        t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
        mtu = st.sc[S.SC_MTU]
        dma_len = out[W.P_RETH_DMA_LEN]
        ec = match_ec(st, dev, src, st.dev[dev, S.D_NODE], qp, out[W.P_RETH_RKEY],
                      WH.ROCE_UDP_PORT, -1)
        m = new_message(st, dev, src, qp, msg_psn, max(1, (dma_len + mtu - 1) // mtu),
                        out[W.P_RETH_VA], out[W.P_RETH_RKEY], dma_len, ec, t_ready, key)
        st.msg[m, S.M_T_FIRST] = now
        map_put(st.rx_keys, st.rx_vals, key, m)
    elif st.msg[m, S.M_SRC] != src or st.msg[m, S.M_QP] != qp \
            or st.msg[m, S.M_FIRST_PSN] != msg_psn:
        return D.TRANSPORT_MISMATCH, -1, first, 0, 0, key   # a key collision: never expected
    else:
        t_ready = now + st.dev[dev, S.D_MATCH_PKT_CYCLES] * cyc
    return D.OK, m, first, psn - msg_psn, t_ready, key


@njit(cache=True, _nrt=False)
def accepted(st, dev, c, psn, out, message_done, now):
    row = st.conn[c]
    row[S.C_UNACKED] += 1
    bit_set(st, c, BITS_RCVD, psn)
    while bit_get(st, c, BITS_RCVD, row[S.C_RCV]):
        bit_clear(st, c, BITS_RCVD, row[S.C_RCV])
        row[S.C_RCV] += 1
    ecn = out[W.P_ECN] == ECN_CE
    if ecn:
        row[S.C_ACK_ECN] = 1
    if row[S.C_UNACKED] >= st.sc[S.SC_TRP + S.TRP_ACK_EVERY] or message_done \
            or out[W.P_ACK_REQ] != 0 or (ecn and st.sc[S.SC_TRP + S.TRP_ACK_ON_ECN] != 0):
        _ack(st, dev, c, psn, WH.AETH_ACK, out[W.P_EV], row[S.C_ACK_ECN] != 0, now)


@njit(cache=True, _nrt=False)
def on_trimmed(st, dev, out, now):
    """A switch cut this packet's payload: ask for exactly this packet again."""
    c = connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_RX)
    psn = unwrap(out[W.P_PSN], st.conn[c, S.C_RCV])
    if psn < st.conn[c, S.C_RCV] or psn >= st.conn[c, S.C_RCV] + S.WIN_PKTS \
            or bit_get(st, c, BITS_RCVD, psn):
        return   # already here (or out of reach): its data is not needed
    _ack(st, dev, c, psn, WH.AETH_NAK_PSN_SEQUENCE, out[W.P_EV], True, now)
