"""The host: runs a message-level program (send, wait, compute, reduce) against the NIC, with a
CPU cost model so host-based baselines pay what software pays.

Costs: ``host_o_send_ps`` per posted send, ``host_o_recv_ps`` per received message consumed by a
wait, and ``host_reduce_mps_per_byte`` (milli-picoseconds per input byte) for host-side
reductions. Each op that takes time schedules the next step, so a host is one event per op.
"""

from spin.engine import state as S
from spin.engine.heap import push_event
from spin.engine.tracing import TRK_HOST, trace_row

from .host_reduce import reduce_elementwise
from .tx import post_message
from spin.jit import njit


@njit(cache=True, _nrt=False)
def _block(st, dev, state, qp, target):
    st.dev[dev, S.D_HOST_STATE] = state
    st.dev[dev, S.D_WAIT0] = qp
    st.dev[dev, S.D_WAIT1] = target


@njit(cache=True, _nrt=False)
def _trace(st, dev, t0, t1, op, pc, c, d, e):
    if st.sc[S.SC_TRACE] != 0:
        trace_row(st, TRK_HOST, dev, t0, t1, op[0], pc, c, d, e, 0, 0)


@njit(cache=True, _nrt=False)
def _consume(st, dev, now, n_messages, op, pc):
    """A wait is satisfied: pay the receive overhead of the messages it consumed. Returns True
    when that takes time (the program continues in a later event)."""
    cost = st.dev[dev, S.D_HOST_O_RECV_PS] * n_messages
    recv = op[0] == S.OP_WAIT_RECV
    _trace(st, dev, now, now + cost, op, pc, op[S.HO_WAIT_RECV_QP] if recv else 0,
           op[S.HO_WAIT_RECV_TOTAL] if recv else op[S.HO_WAIT_EVENT_TOTAL], 0)
    st.dev[dev, S.D_HOST_BUSY_PS] += cost
    st.dev[dev, S.D_HOST_PC] += 1
    st.dev[dev, S.D_HOST_STATE] = S.HOST_RUNNING
    if cost > 0:
        push_event(st, now + cost, dev, S.EV_HOST, dev, 0, 0)
        return True
    return False


@njit(cache=True, _nrt=False)
def host_step(st, dev, now):
    """Run the host program from its program counter until it blocks or spends time."""
    first = st.dev[dev, S.D_HOST_OP_FIRST]
    count = st.dev[dev, S.D_HOST_OP_COUNT]
    while st.dev[dev, S.D_HOST_PC] < count:
        pc = st.dev[dev, S.D_HOST_PC]
        op = st.host_ops[first + pc]
        code = op[0]
        if code == S.OP_SEND:
            cost = st.dev[dev, S.D_HOST_O_SEND_PS]
            _trace(st, dev, now, now + cost, op, pc, op[S.HO_SEND_DST], op[S.HO_SEND_QP],
                   op[S.HO_SEND_NBYTES])
            st.dev[dev, S.D_HOST_BUSY_PS] += cost
            st.dev[dev, S.D_HOST_PC] += 1
            post_message(st, dev, op[S.HO_SEND_DST], op[S.HO_SEND_QP], op[S.HO_SEND_NBYTES],
                         op[S.HO_SEND_LOCAL_ADDR], op[S.HO_SEND_REMOTE_ADDR], op[S.HO_SEND_RKEY],
                         now + cost)
            push_event(st, now + cost, dev, S.EV_HOST, dev, 0, 0)
            return
        elif code == S.OP_WAIT_RECV:
            qp, total = op[S.HO_WAIT_RECV_QP], op[S.HO_WAIT_RECV_TOTAL]
            if st.host_recv_count[dev, qp] < total:
                _block(st, dev, S.HOST_WAIT_RECV, qp, total)
                return
            if _consume(st, dev, now, op[S.HO_WAIT_RECV_COUNT], op, pc):
                return
        elif code == S.OP_WAIT_EVENT:
            total = op[S.HO_WAIT_EVENT_TOTAL]
            if st.dev[dev, S.D_HOST_EVENT_COUNT] < total:
                _block(st, dev, S.HOST_WAIT_EVENT, 0, total)
                return
            if _consume(st, dev, now, op[S.HO_WAIT_EVENT_COUNT], op, pc):
                return
        elif code == S.OP_COMPUTE:
            busy = op[S.HO_COMPUTE_DURATION_PS]
            _trace(st, dev, now, now + busy, op, pc, 0, 0, 0)
            st.dev[dev, S.D_HOST_BUSY_PS] += busy
            st.dev[dev, S.D_HOST_PC] += 1
            push_event(st, now + busy, dev, S.EV_HOST, dev, 0, 0)
            return
        elif code == S.OP_REDUCE:
            nbytes = reduce_elementwise(st, dev, op[S.HO_REDUCE_DST_ADDR],
                                        op[S.HO_REDUCE_SRC_ADDR], op[S.HO_REDUCE_COUNT],
                                        op[S.HO_REDUCE_DTYPE], op[S.HO_REDUCE_OPERATOR])
            cost = (nbytes * st.dev[dev, S.D_HOST_REDUCE_MPS_PER_BYTE] + 999) // 1000
            _trace(st, dev, now, now + cost, op, pc, 0, 0, nbytes)
            st.dev[dev, S.D_HOST_BUSY_PS] += cost
            st.dev[dev, S.D_HOST_PC] += 1
            push_event(st, now + cost, dev, S.EV_HOST, dev, 0, 0)
            return
        elif code == S.OP_MARK:
            st.marks[dev, op[S.HO_MARK_INDEX]] = now
            _trace(st, dev, now, now, op, pc, op[S.HO_MARK_INDEX], 0, 0)
            st.dev[dev, S.D_HOST_PC] += 1
        elif code == S.OP_CALL:
            _trace(st, dev, now, now, op, pc, op[S.HO_CALL_CALLBACK], 0, 0)
            st.dev[dev, S.D_HOST_PC] += 1
            st.sc[S.SC_STATUS] = S.STATUS_HOST_CALL
            st.sc[S.SC_CALL_DEV] = dev
            st.sc[S.SC_CALL_ID] = op[S.HO_CALL_CALLBACK]
            push_event(st, now, dev, S.EV_HOST, dev, 0, 0)
            return
        else:
            raise ValueError("spin host: unknown host program opcode")
    st.dev[dev, S.D_HOST_STATE] = S.HOST_DONE


@njit(cache=True, _nrt=False)
def host_message_delivered(st, dev, qp, now):
    """A message finished landing in host memory (completion-queue entry)."""
    st.host_recv_count[dev, qp] += 1
    if st.dev[dev, S.D_HOST_STATE] == S.HOST_WAIT_RECV and st.dev[dev, S.D_WAIT0] == qp \
            and st.host_recv_count[dev, qp] >= st.dev[dev, S.D_WAIT1]:
        st.dev[dev, S.D_HOST_STATE] = S.HOST_RUNNING
        push_event(st, now, dev, S.EV_HOST, dev, 0, 0)


@njit(cache=True, _nrt=False)
def host_event_raised(st, dev, now):
    st.dev[dev, S.D_HOST_EVENT_COUNT] += 1
    if st.dev[dev, S.D_HOST_STATE] == S.HOST_WAIT_EVENT and st.dev[dev, S.D_HOST_EVENT_COUNT] >= st.dev[dev, S.D_WAIT1]:
        st.dev[dev, S.D_HOST_STATE] = S.HOST_RUNNING
        push_event(st, now, dev, S.EV_HOST, dev, 0, 0)
