"""Receiver half of the reliable transports: which data packets a NIC accepts, and the ACKs,
NAKs and CNPs it answers with. ``nic_receive`` admits a packet here, places it exactly as the
open-loop path does, then reports it accepted; a packet is acknowledged only once placed.

RC: only the expected PSN is accepted. An older PSN is a duplicate (dropped, answered with an
ACK so a sender that missed ACKs moves on); a newer one means packets were lost (dropped,
answered with one NAK per gap, PSN sequence error naming the expected PSN). Accepted packets
are acknowledged every ``ack_every_packets`` and on every message's last packet (the sender
sets AckReq there). An ECN-marked packet makes the receiver send a CNP, at most one per
``cnp_interval_us`` per connection (DCQCN's notification point).

UE: any PSN within ``WIN_PKTS`` of the cumulative point is accepted once, in any order, and
placed at its PLH address; duplicates are dropped and re-acknowledged. ACKs carry the
cumulative PSN, a 64-packet bitmap around the packet acknowledged, and that packet's EV and
ECN mark. A trimmed packet is answered at once with a NACK naming its PSN.

Both count out-of-order arrivals (a PSN below the highest seen on the connection) and the
largest such distance (reorder degree).
"""
import numba as nb
import numpy as np

from spin import drops as D
from spin.engine import state as S
from spin.wire import headers as WH
from spin.wire import roce as W

from .transport import (BITS_RCVD, ROLE_RX, bit_clear, bit_get, bit_set, connection, send_control,
                        unwrap)

_ECN_CE = 3


@nb.njit(cache=True, _nrt=False)
def _note_order(st, dev, c, psn):
    top = st.conn[c, S.C_MAX_PSN]
    if psn + 1 < top:
        st.dev[dev, S.D_NTR + S.NT_OOO] += 1
        if top - 1 - psn > st.dev[dev, S.D_NTR + S.NT_REORDER]:
            st.dev[dev, S.D_NTR + S.NT_REORDER] = top - 1 - psn
    elif psn + 1 > top:
        st.conn[c, S.C_MAX_PSN] = psn + 1


@nb.njit(cache=True, _nrt=False)
def _rc_ack(st, dev, c, syndrome, psn, now):
    send_control(st, dev, c, WH.OP_RC_ACKNOWLEDGE, psn, syndrome, st.conn[c, S.C_MSN], 0, 0, 0,
                 0, 0, now)
    st.conn[c, S.C_UNACKED] = 0
    sent = S.NT_NAKS_TX if syndrome == WH.AETH_NAK_PSN_SEQUENCE else S.NT_ACKS_TX
    st.dev[dev, S.D_NTR + sent] += 1


@nb.njit(cache=True, _nrt=False)
def _ue_ack(st, dev, c, psn, syndrome, echo_ev, ecn, now):
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


@nb.njit(cache=True, _nrt=False)
def admit(st, dev, out, now):
    """Decide on a data packet before it is placed: returns (connection row, unwrapped PSN)
    to go on, or (-1, drop reason) after answering it."""
    c = connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_RX)
    row = st.conn[c]
    psn = unwrap(out[W.P_PSN], row[S.C_RCV])
    if st.dev[dev, S.D_TRANSPORT] == S.TR_RC:
        expected = row[S.C_RCV]
        if psn < expected:
            st.dev[dev, S.D_NTR + S.NT_DUPS] += 1
            _rc_ack(st, dev, c, WH.AETH_ACK, expected - 1, now)
            return -1, D.DUPLICATE
        _note_order(st, dev, c, psn)
        if psn == expected:
            return c, psn
        if row[S.C_NAK_SENT] == 0:
            row[S.C_NAK_SENT] = 1
            _rc_ack(st, dev, c, WH.AETH_NAK_PSN_SEQUENCE, expected, now)
        return -1, D.OUT_OF_SEQUENCE
    if psn < row[S.C_RCV] or (psn < row[S.C_RCV] + S.WIN_PKTS and bit_get(st, c, BITS_RCVD, psn)):
        st.dev[dev, S.D_NTR + S.NT_DUPS] += 1
        _ue_ack(st, dev, c, psn, WH.AETH_ACK, out[W.P_EV], out[W.P_ECN] == _ECN_CE, now)
        return -1, D.DUPLICATE
    if psn >= row[S.C_RCV] + S.WIN_PKTS:
        return -1, D.BEYOND_WINDOW
    _note_order(st, dev, c, psn)
    return c, psn


@nb.njit(cache=True, _nrt=False)
def accepted(st, dev, c, psn, out, message_done, now):
    """Packet ``psn`` of connection ``c`` was placed (``message_done``: it completed its
    message): record it and acknowledge when due."""
    row = st.conn[c]
    ecn = out[W.P_ECN] == _ECN_CE
    row[S.C_UNACKED] += 1
    due = row[S.C_UNACKED] >= st.sc[S.SC_TRP + S.TRP_ACK_EVERY] or message_done
    if st.dev[dev, S.D_TRANSPORT] == S.TR_RC:
        row[S.C_RCV] = psn + 1
        row[S.C_NAK_SENT] = 0
        if message_done:
            row[S.C_MSN] += 1
        if ecn and (row[S.C_LAST_CNP] < 0
                    or now - row[S.C_LAST_CNP] >= st.sc[S.SC_TRP + S.TRP_CNP_INTERVAL_PS]):
            row[S.C_LAST_CNP] = now
            send_control(st, dev, c, WH.OP_CNP, 0, 0, 0, 0, 0, 0, 0, 0, now)
            st.dev[dev, S.D_NTR + S.NT_CNPS_TX] += 1
        if due or out[W.P_ACK_REQ] != 0:
            _rc_ack(st, dev, c, WH.AETH_ACK, psn, now)
        return
    bit_set(st, c, BITS_RCVD, psn)
    while bit_get(st, c, BITS_RCVD, row[S.C_RCV]):
        bit_clear(st, c, BITS_RCVD, row[S.C_RCV])
        row[S.C_RCV] += 1
    if ecn:
        row[S.C_ACK_ECN] = 1
    if due:
        _ue_ack(st, dev, c, psn, WH.AETH_ACK, out[W.P_EV], row[S.C_ACK_ECN] != 0, now)


@nb.njit(cache=True, _nrt=False)
def trimmed(st, dev, out, now):
    """UE: a switch cut this packet's payload; ask for exactly this packet again."""
    c = connection(st, dev, out[W.P_SRC_NODE], out[W.P_DEST_QP], ROLE_RX)
    psn = unwrap(out[W.P_PSN], st.conn[c, S.C_RCV])
    if psn < st.conn[c, S.C_RCV] or psn >= st.conn[c, S.C_RCV] + S.WIN_PKTS \
            or bit_get(st, c, BITS_RCVD, psn):
        return   # already here (or out of reach): its data is not needed
    _ue_ack(st, dev, c, psn, WH.AETH_NAK_PSN_SEQUENCE, out[W.P_EV], True, now)
