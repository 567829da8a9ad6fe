"""The NIC's action sink: what the commands a handler issued do on a NIC (PCIe writes and reads,
host events, packets out of the NIC's port or through its loopback, puts from host memory,
timers), timed from the handler's end (a timer from its start: ``spin_set_timer``)."""

from spin.engine import state as S
from spin.engine.handler_context import build_staged_packet, check_host_bytes, schedule_timer
from spin.engine.heap import push_event

from .loopback import loop_back
from .pcie import CQE_BYTES, pcie_read, pcie_write
from .tx import post_message
from spin.jit import njit


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def nic_finalize_actions(st, dev, m, n, end):
    """Apply the ``n`` commands in ``st.pend``, each checked again (a handler may have written
    the table directly). Blocking reads first, since they lengthen the handler itself; returns
    the handler's end."""
    for i in range(n):
        if st.pend[i, 0] == S.ACT_DMA_FROM_HOST:
            check_host_bytes(st, dev, st.pend[i, S.PA_DMA_FROM_HOST_NBYTES])
            end = pcie_read(st, dev, end, st.pend[i, S.PA_DMA_FROM_HOST_NBYTES])
    gp = st.dev[dev, S.D_PORT0]
    for i in range(n):
        p = st.pend[i]
        kind = p[0]
        if kind == S.ACT_DMA_TO_HOST or kind == S.ACT_HOST_WRITE:
            nbytes = p[S.PA_DMA_TO_HOST_NBYTES] if kind == S.ACT_DMA_TO_HOST \
                else p[S.PA_HOST_WRITE_NBYTES]
            check_host_bytes(st, dev, nbytes)
            t = pcie_write(st, dev, end, nbytes)
            if m >= 0 and t > st.msg[m, S.M_DMA_END]:
                st.msg[m, S.M_DMA_END] = t
            if kind == S.ACT_DMA_TO_HOST and p[S.PA_DMA_TO_HOST_EVENT] != 0:
                push_event(st, pcie_write(st, dev, end, CQE_BYTES), dev, S.EV_HOST_EVENT,
                           dev, 0, 0)
        elif kind == S.ACT_SEND_PACKET:
            slot = build_staged_packet(st, dev, p[S.PA_SEND_PACKET_DST], p[S.PA_SEND_PACKET_QP],
                                       p[S.PA_SEND_PACKET_STAGED_OFFSET],
                                       p[S.PA_SEND_PACKET_NBYTES], p[S.PA_SEND_PACKET_REMOTE_VA])
            if p[S.PA_SEND_PACKET_DST] == st.dev[dev, S.D_NODE]:
                loop_back(st, dev, slot, end)
            else:
                push_event(st, end, dev, S.EV_ENQUEUE, dev, gp, slot)
        elif kind == S.ACT_TIMER:
            schedule_timer(st, dev, p)
        elif kind == S.ACT_HOST_EVENT:
            # an event is a small posted write behind the handler's data writes: it never
            # reaches the host before the data it announces
            push_event(st, pcie_write(st, dev, end, CQE_BYTES), dev, S.EV_HOST_EVENT,
                       dev, p[S.PA_HOST_EVENT_VALUE], 0)
        elif kind == S.ACT_PUT_FROM_HOST:
            post_message(st, dev, p[S.PA_PUT_FROM_HOST_DST], p[S.PA_PUT_FROM_HOST_QP],
                         p[S.PA_PUT_FROM_HOST_NBYTES], p[S.PA_PUT_FROM_HOST_HOST_ADDR],
                         p[S.PA_PUT_FROM_HOST_REMOTE_VA], 0, end)
        elif kind != S.ACT_DMA_FROM_HOST:
            raise ValueError("spin: a NIC handler issued a command NICs do not know (issue "
                             "commands with the spin_* calls)")
    return end
