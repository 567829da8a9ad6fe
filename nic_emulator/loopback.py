"""NIC loopback: a frame a NIC sends to its own node is turned around inside the NIC.

As an RDMA device treats a loopback message (Barak, "Loopback messages in RDMA", rdmamojo.com,
2018), the frame never reaches the port: no link, queue, switch, fault or random loss sees it
and no port counter moves. It enters the NIC's own receive path ``NicConfig.loopback_latency_ns``
after it was ready, as a frame from the network would (same matching, handlers, default path
and transport: a reliable transport's ACKs to itself loop back the same way).
"""

from spin.engine import state as S
from spin.engine.heap import push_event
from spin.engine.ports import enqueue_frame
from spin.jit import njit


@njit(cache=True, _nrt=False)
def loop_back(st, dev, slot, t_ready):
    """Deliver ``slot`` to the NIC's own receive path one loopback latency after ``t_ready``."""
    st.dev[dev, S.D_LOOPBACK_FRAMES] += 1
    push_event(st, t_ready + st.dev[dev, S.D_LOOPBACK_PS], dev, S.EV_ARRIVE, dev,
               S.ARRIVE_LOOPBACK, slot)


@njit(cache=True, _nrt=False)
def emit_frame(st, dev, dst_node, slot, t_ready, now):
    """Send a frame the NIC built once its data is in NIC memory (``t_ready``): through the
    loopback when it is addressed to the NIC's own node, else to the NIC's egress port."""
    if dst_node == st.dev[dev, S.D_NODE]:
        loop_back(st, dev, slot, t_ready)
    elif t_ready <= now:
        enqueue_frame(st, st.dev[dev, S.D_PORT0], slot, now)   # no event needed
    else:
        push_event(st, t_ready, dev, S.EV_ENQUEUE, dev, st.dev[dev, S.D_PORT0], slot)
