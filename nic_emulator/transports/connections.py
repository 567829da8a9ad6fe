"""State the reliable transports share: connections, PSN bitmaps, control frames, and waking
the transmit engine (which the open-loop transport uses too).

A connection is one row of ``st.conn`` per (NIC, peer, QP, role): a NIC that sends to a peer
on a QP and also receives from it on that QP holds two rows, a sender and a receiver. Rows
are created on first use and live for the run. PSNs are kept unwrapped (int64) in the rows;
the wire carries their low 24 bits, which ``unwrap`` maps back next to a reference PSN.

Per connection, ``st.conn_bits`` holds two ring bitmaps of ``WIN_PKTS`` bits over the PSNs from
the cumulative point on: a sender's selectively acknowledged and to-be-resent packets, a
receiver's arrived packets. A sender never has a PSN ``WIN_PKTS`` past its oldest
unacknowledged one in flight, so the rings never alias.
"""
import numpy as np

from spin.engine import state as S
from spin.engine.hashmap import map_get, map_put
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot
from spin.engine.rdma import PSN_MASK, conn_key, flow_entropy
from spin.wire.transport_frames import write_control_frame

from ..loopback import emit_frame
from spin.jit import njit

ROLE_TX = 0
ROLE_RX = 1
BITS_SACKED = 0                 # sender ring: selectively acknowledged
BITS_RTX = S.WIN_WORDS          # sender ring: marked for retransmission
BITS_RCVD = 0                   # receiver ring: arrived
ECN_CE = 3                      # IP ECN field: congestion experienced
_HALF = 1 << 23


@njit(cache=True, _nrt=False)
def wake_tx(st, dev, t_ps):
    """Schedule the NIC's transmit engine unless it is scheduled, idle, or waiting for an ACK
    or a timer (a reliable transport's window or the pacing of its rate)."""
    if st.dev[dev, S.D_NIC_TX_SCHED] == 0 and st.dev[dev, S.D_TXQ_N] > 0 \
            and st.dev[dev, S.D_TX_NOWORK] == 0:
        st.dev[dev, S.D_NIC_TX_SCHED] = 1
        push_event(st, t_ps, dev, S.EV_TXM, dev, 0, 0)


@njit(cache=True, _nrt=False)
def kick_tx(st, dev, t_ps):
    """Something the waiting transmit engine needed happened (an ACK, a NAK, a timeout)."""
    st.dev[dev, S.D_TX_NOWORK] = 0
    wake_tx(st, dev, t_ps)


@njit(cache=True, inline="always", _nrt=False)
def unwrap(wire_psn, ref):
    """The PSN nearest ``ref`` whose low 24 bits are ``wire_psn``."""
    d = (np.int64(wire_psn) - ref) & PSN_MASK
    if d >= _HALF:
        d -= 1 << 24
    return ref + d


@njit(cache=True, _nrt=False)
def find_connection(st, dev, peer, qp, role):
    return map_get(st.conn_keys, st.conn_vals, conn_key(dev, peer, qp) | (np.int64(role) << 62))


@njit(cache=True, _nrt=False)
def connection(st, dev, peer, qp, role):
    """Row of the connection, created (with the transport's initial state) on first use."""
    key = conn_key(dev, peer, qp) | (np.int64(role) << 62)
    c = map_get(st.conn_keys, st.conn_vals, key)
    if c >= 0:
        return c
    c = st.sc[S.SC_CONN_N]
    if c >= st.conn.shape[0]:
        raise MemoryError("spin engine: transport connection table full (the scenario sizes it "
                          "from the host programs' sends)")
    st.sc[S.SC_CONN_N] = c + 1
    map_put(st.conn_keys, st.conn_vals, key, c)
    row = st.conn[c]
    for k in range(S.CONN_COLS):
        row[k] = 0
    for k in range(2 * S.WIN_WORDS):
        st.conn_bits[c, k] = 0
    for k in range(st.apart_conn.shape[1]):   # a transport compiled apart: its own columns
        st.apart_conn[c, k] = 0
    me = st.dev[dev, S.D_NODE]
    row[S.C_DEV] = dev
    row[S.C_PEER] = peer
    row[S.C_QP] = qp
    ev = flow_entropy(me, peer, qp) if role == ROLE_TX else flow_entropy(me, peer, qp + 1)
    row[S.C_EV] = ev
    row[S.C_PRNG] = (ev * 2654435761 + 1) & 0xFFFFFFFF
    row[S.C_CWND] = st.sc[S.SC_TRP + S.TRP_CWND_INIT]
    row[S.C_ALPHA] = S.ALPHA_ONE       # DCQCN and DCTCP both start from alpha = 1
    rate = st.port[st.dev[dev, S.D_PORT0], S.PT_RATE_GBPS] * 1000
    row[S.C_RATE] = rate
    row[S.C_TARGET] = rate
    row[S.C_LAST_CNP] = -1
    row[S.C_RTT_PSN] = -1
    return c


@njit(cache=True, _nrt=False)
def note_order(st, dev, c, psn):
    """Count an out-of-order arrival (a PSN below the highest seen on the receiving connection)
    and the largest such distance (the reorder degree)."""
    top = st.conn[c, S.C_MAX_PSN]
    if psn + 1 < top:
        st.dev[dev, S.D_NTR + S.NT_OOO] += 1
        if top - 1 - psn > st.dev[dev, S.D_NTR + S.NT_REORDER]:
            st.dev[dev, S.D_NTR + S.NT_REORDER] = top - 1 - psn
    elif psn + 1 > top:
        st.conn[c, S.C_MAX_PSN] = psn + 1


# --- ring bitmaps -------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def bit_get(st, c, ring, psn):
    pos = psn & (S.WIN_PKTS - 1)
    return (st.conn_bits[c, ring + (pos >> 6)] >> (pos & 63)) & 1


@njit(cache=True, inline="always", _nrt=False)
def bit_set(st, c, ring, psn):
    pos = psn & (S.WIN_PKTS - 1)
    st.conn_bits[c, ring + (pos >> 6)] |= np.int64(1) << (pos & 63)


@njit(cache=True, inline="always", _nrt=False)
def bit_clear(st, c, ring, psn):
    pos = psn & (S.WIN_PKTS - 1)
    st.conn_bits[c, ring + (pos >> 6)] &= ~(np.int64(1) << (pos & 63))


# --- control frames -----------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def send_control(st, dev, c, opcode, psn, syndrome, msn, cum_psn, sack_psn, bitmap, echo_ev,
                 flags, now):
    """Build an ACK/NAK/CNP/UE ACK for connection ``c``'s peer and queue it on the NIC's port
    (behind data already queued there, as a NIC's single egress queue does)."""
    slot = alloc_slot(st)
    n = write_control_frame(st.pool[slot], st.dev[dev, S.D_NODE], st.conn[c, S.C_PEER],
                            st.conn[c, S.C_EV], opcode, st.conn[c, S.C_QP], psn & PSN_MASK,
                            syndrome, msn, cum_psn & PSN_MASK, sack_psn & PSN_MASK, bitmap,
                            echo_ev, flags)
    st.slot_meta[slot, S.SM_LEN] = n
    st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING
    emit_frame(st, dev, st.conn[c, S.C_PEER], slot, now, now)   # to itself: loopback

