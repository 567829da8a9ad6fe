"""Receive messages of transports that deliver a message's packets in PSN order (open loop and
RC): the packet that starts a message (WRITE First or Only) opens it, and the others find it by
their connection until its last packet arrives."""
import numpy as np

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.hashmap import map_get, map_put
from spin.engine.messages import has_message_room, make_room_for, match_ec, new_message
from spin.engine.rdma import OPC_WRITE_FIRST, OPC_WRITE_ONLY, PSN_MASK, conn_key
from spin.wire import headers as WH
from spin.wire import roce as W
from spin.jit import njit


@njit(cache=True, _nrt=False)
def find_in_order(st, dev, out, timer, now):
    """The transports' ``find_message`` for in-order delivery. A handler timer packet is a whole
    message that is never looked up again, and never evicts another (it is not in the map)."""
    src = out[W.P_SRC_NODE]
    qp = out[W.P_DEST_QP]
    psn = out[W.P_PSN]
    base_op = out[W.P_OPCODE] & 0x1F
    key = conn_key(dev, src, qp)
    cyc = st.dev[dev, S.D_CYCLE_PS]
    first = base_op == OPC_WRITE_FIRST or base_op == OPC_WRITE_ONLY
    if first:
        room = has_message_room(st, dev, now) if timer else make_room_for(st, dev, key, now)
        if not room:
            return D.NO_MESSAGE_SLOT, -1, False, 0, 0, key
        t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
        dma_len = out[W.P_RETH_DMA_LEN]
        mtu = st.sc[S.SC_MTU]
        npkts = 1 if base_op == OPC_WRITE_ONLY else max(1, (dma_len + mtu - 1) // mtu)
        ec = match_ec(st, dev, src, st.dev[dev, S.D_NODE], qp, out[W.P_RETH_RKEY],
                      WH.ROCE_UDP_PORT, -1)
        if timer:
            key = np.int64(-1)
        m = new_message(st, dev, src, qp, psn, npkts, out[W.P_RETH_VA], out[W.P_RETH_RKEY],
                        dma_len, ec, t_ready, key)
        st.msg[m, S.M_T_FIRST] = now
        if not timer:
            map_put(st.rx_keys, st.rx_vals, key, m)
    else:
        m = map_get(st.rx_keys, st.rx_vals, key)
        if m < 0:
            return D.UNKNOWN_MESSAGE, -1, False, 0, 0, key
        t_ready = now + st.dev[dev, S.D_MATCH_PKT_CYCLES] * cyc
    return D.OK, m, first, (psn - st.msg[m, S.M_FIRST_PSN]) & PSN_MASK, t_ready, key
