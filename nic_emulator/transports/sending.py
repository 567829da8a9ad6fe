"""The send side the reliable transports share: a message keeps its row (and its place in the
NIC's send queue) until every packet is acknowledged; the queue's head is retired as soon as it
is. A transmit turn sends one packet: the transport picks it (``rc.tx_step``, ``ue.tx_step``)
and builds its headers; the bookkeeping around it lives here.
"""

from spin.engine import state as S
from spin.engine.freelist import give_free
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot
from ..payload import payload_stored, read_payload
from spin.wire.roce import finalize_roce_frame_no_icrc

from ..loopback import emit_frame
from ..nscc import rto_ps
from ..pcie import pcie_read
from spin.jit import njit


@njit(cache=True, _nrt=False)
def retire_acked(st, dev, now):
    """Free the send queue's head messages whose every packet is acknowledged, logging when
    (the sender's completion: htsim's flow completion time ends there)."""
    cap = st.txq.shape[1]
    while st.dev[dev, S.D_TXQ_N] > 0:
        head = st.dev[dev, S.D_TXQ_HEAD]
        m = st.txq[dev, head]
        if st.conn[st.txm[m, S.T_CONN], S.C_UNA] < st.txm[m, S.T_PSN] + st.txm[m, S.T_NPKTS]:
            return
        k = st.txm[m, S.T_LOG_ROW]
        if k >= 0:
            st.txlog[k, S.TL_T_ACKED_PS] = now
        st.dev[dev, S.D_TXQ_HEAD] = (head + 1) % cap
        st.dev[dev, S.D_TXQ_N] -= 1
        give_free(st.sc, S.SC_TXM_FREE_TOP, st.txm_free, m)


@njit(cache=True, _nrt=False)
def begin_turn(st, dev, now):
    """Start a transmit turn: True when a message waits and the egress port has room (a full
    port resumes the engine on its next transmission)."""
    st.dev[dev, S.D_NIC_TX_SCHED] = 0
    retire_acked(st, dev, now)
    if st.dev[dev, S.D_TXQ_N] == 0:
        return False
    return st.port[st.dev[dev, S.D_PORT0], S.PT_Q_N] < st.dev[dev, S.D_NIC_TX_WINDOW]


@njit(cache=True, _nrt=False)
def next_unsent(st, dev):
    """(message, packet index) of the first message in the queue with a packet not yet sent
    (go-back-N rewinds a message's next packet), or (-1, -1)."""
    cap = st.txq.shape[1]
    head = st.dev[dev, S.D_TXQ_HEAD]
    for i in range(st.dev[dev, S.D_TXQ_N]):
        m = st.txq[dev, (head + i) % cap]
        if st.txm[m, S.T_NEXT] < st.txm[m, S.T_NPKTS]:
            return m, st.txm[m, S.T_NEXT]
    return -1, -1


@njit(cache=True, _nrt=False)
def wait_for_ack(st, dev):
    """Nothing may be sent now: the engine sleeps until an ACK, a NAK or a timer kicks it."""
    st.dev[dev, S.D_TX_NOWORK] = 1


@njit(cache=True, _nrt=False)
def start_packet(st, dev, m, idx, c, psn, resend, now):
    """Read packet ``idx`` of message ``m`` from host memory: returns (frame slot, payload
    bytes, is the message's last packet, when its data left host memory). First transmissions
    stream from the post time (reads issued back to back); resends read again now."""
    mtu = st.sc[S.SC_MTU]
    chunk = min(mtu, st.txm[m, S.T_LEN] - idx * mtu)
    first_time = not resend and psn >= st.conn[c, S.C_HIGH]
    ready = pcie_read(st, dev, st.txm[m, S.T_T_POST] if first_time else now, chunk)
    return alloc_slot(st), chunk, idx == st.txm[m, S.T_NPKTS] - 1, max(ready, now)


@njit(cache=True, _nrt=False)
def finish_packet(st, dev, m, idx, slot, off, chunk, t_emit, now):
    """Copy the payload behind the headers the transport wrote (``off`` bytes), close the
    frame and queue it; returns its length."""
    frame = st.pool[slot]
    read_payload(st, dev, frame, off, st.txm[m, S.T_HOST_ADDR] + idx * st.sc[S.SC_MTU], chunk)
    length = finalize_roce_frame_no_icrc(frame, off, chunk, payload_stored(st))
    st.slot_meta[slot, S.SM_LEN] = length
    st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING
    emit_frame(st, dev, st.txm[m, S.T_DST], slot, t_emit, now)
    return length


@njit(cache=True, _nrt=False)
def sent_in_order(st, dev, m, idx, c, psn):
    """A packet taken in order was sent: move the message on; a PSN below the highest sent is
    a go-back-N resend."""
    st.txm[m, S.T_NEXT] = idx + 1
    if psn < st.conn[c, S.C_HIGH]:
        st.dev[dev, S.D_NTR + S.NT_RETX] += 1
    else:
        st.conn[c, S.C_HIGH] = psn + 1


@njit(cache=True, _nrt=False)
def end_turn(st, dev, c, t_emit, now):
    """After a packet: arm the connection's retransmission timer if it is not, and give the
    engine its next turn when this packet's data has left host memory."""
    if st.conn[c, S.C_RTO_PENDING] == 0:
        arm_rto(st, dev, c, now)
    st.dev[dev, S.D_NIC_TX_SCHED] = 1
    push_event(st, t_emit, dev, S.EV_TXM, dev, 0, 0)


@njit(cache=True, _nrt=False)
def timer_expired(st, dev, c, now):
    """A retransmission timer fired: True when the oldest unacknowledged packet has not moved
    for ``rto_us`` (a timeout); otherwise it re-arms for the later deadline or lapses when
    nothing is outstanding (the next send arms it again)."""
    row = st.conn[c]
    if now != row[S.C_RTO_EV_T]:
        return False   # superseded by the event of an earlier deadline
    row[S.C_RTO_PENDING] = 0
    if row[S.C_UNA] >= row[S.C_HIGH]:
        return False
    if now < row[S.C_RTO_AT]:
        schedule_rto(st, dev, c, row[S.C_RTO_AT])
        return False
    st.dev[dev, S.D_NTR + S.NT_TIMEOUTS] += 1
    return True


@njit(cache=True, _nrt=False)
def rearm_timer(st, dev, c, now):
    """After a timeout was handled: the next deadline."""
    st.conn[c, S.C_RTO_PENDING] = 0
    arm_rto(st, dev, c, now)


@njit(cache=True, _nrt=False)
def arm_rto(st, dev, c, now):
    """Set the deadline one timeout (``nscc.rto_ps``: from the measured RTT once there is one)
    from ``now``. The timer is lazy (a firing before the deadline re-arms itself), but a
    deadline earlier than the pending firing, as after the timeout shrank with the RTT, gets
    its own event; only the latest scheduled event counts."""
    row = st.conn[c]
    at = now + rto_ps(st, c)
    row[S.C_RTO_AT] = at
    if row[S.C_RTO_PENDING] == 0 or at < row[S.C_RTO_EV_T]:
        schedule_rto(st, dev, c, at)


@njit(cache=True, _nrt=False)
def schedule_rto(st, dev, c, at):
    row = st.conn[c]
    row[S.C_RTO_PENDING] = 1
    row[S.C_RTO_EV_T] = at
    push_event(st, at, dev, S.EV_RTO, dev, c, 0)
