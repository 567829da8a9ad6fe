"""NIC transmit engine: posting RDMA WRITE messages to the NIC's send queue.

A posted message is read from host memory over PCIe (reads issued back to back from the post
time, so PCIe bandwidth paces them) and emitted one MTU packet per transmit turn by the NIC's
transport (``nic_emulator.transports``). The engine stops feeding the egress port once
``nic_tx_window`` frames wait there and resumes on the port's next transmission, so a slow link
throttles it instead of filling the buffer pool.
"""

from spin.engine import state as S
from spin.engine.freelist import take_free
from spin.engine.rdma import PSN_MASK, flow_entropy, take_psns

from .transports.connections import ROLE_TX, connection, kick_tx
from spin.jit import njit


@njit(cache=True, _nrt=False)
def post_message(st, dev, dst_node, qp, nbytes, host_addr, remote_va, rkey, t_post):
    """Queue an RDMA WRITE of ``nbytes`` host bytes at ``host_addr`` to ``dst_node``."""
    if host_addr < 0 or nbytes < 0 or host_addr + nbytes > st.dev[dev, S.D_HOST_ADDR_SPACE]:
        raise IndexError("spin: send source range outside host memory")
    if dst_node < 0 or dst_node >= st.sc[S.SC_N_NODES]:
        raise ValueError("spin: send to an unknown node")
    sc = st.sc
    m = take_free(sc, S.SC_TXM_FREE_TOP, st.txm_free)
    if m < 0:
        raise MemoryError("spin engine: too many messages in flight (raise EngineConfig.max_tx_messages)")
    me = st.dev[dev, S.D_NODE]
    mtu = sc[S.SC_MTU]
    npkts = max(1, (nbytes + mtu - 1) // mtu)
    st.txm[m, S.T_DEV] = dev
    st.txm[m, S.T_DST] = dst_node
    st.txm[m, S.T_QP] = qp
    st.txm[m, S.T_LEN] = nbytes
    st.txm[m, S.T_SENT] = 0
    st.txm[m, S.T_HOST_ADDR] = host_addr
    st.txm[m, S.T_REMOTE_VA] = remote_va
    st.txm[m, S.T_RKEY] = rkey
    st.txm[m, S.T_EV] = flow_entropy(me, dst_node, qp)
    st.txm[m, S.T_T_POST] = t_post
    if st.dev[dev, S.D_TRANSPORT] == S.TR_OPEN_LOOP:
        st.txm[m, S.T_PSN] = take_psns(st, dev, dst_node, qp, npkts)
    else:   # reliable: the connection numbers its packets (unwrapped) and tracks them
        c = connection(st, dev, dst_node, qp, ROLE_TX)
        st.txm[m, S.T_PSN] = st.conn[c, S.C_SND_PSN]
        st.conn[c, S.C_SND_PSN] += npkts
        st.txm[m, S.T_NPKTS] = npkts
        st.txm[m, S.T_NEXT] = 0
        st.txm[m, S.T_CONN] = c
    cap = st.txq.shape[1]
    n = st.dev[dev, S.D_TXQ_N]
    if n >= cap:
        raise MemoryError("spin engine: NIC send queue full (raise EngineConfig.max_tx_messages)")
    st.txq[dev, (st.dev[dev, S.D_TXQ_HEAD] + n) % cap] = m
    st.dev[dev, S.D_TXQ_N] = n + 1
    k = sc[S.SC_TXLOG_N]
    st.txm[m, S.T_LOG_ROW] = k if k < st.txlog.shape[0] else -1
    if k < st.txlog.shape[0]:
        row = st.txlog[k]
        row[S.TL_T_ACKED_PS] = -1
        row[S.TL_SRC] = me
        row[S.TL_DST] = dst_node
        row[S.TL_QP] = qp
        row[S.TL_BYTES] = nbytes
        row[S.TL_T_POST_PS] = t_post
        row[S.TL_FIRST_PSN] = st.txm[m, S.T_PSN] & PSN_MASK
    sc[S.SC_TXLOG_N] = k + 1       # counts past the log's end, as the receive log does
    kick_tx(st, dev, t_post)
