"""NIC transmit engine: segments RDMA WRITE messages into MTU packets.

A posted message is read from host memory over PCIe (reads issued back to back from the post
time, so PCIe bandwidth paces them) and emitted one packet at a time. The engine stops feeding
the egress port once ``nic_tx_window`` frames wait there and resumes on the port's next
transmission, so a slow link throttles it instead of filling the buffer pool.
"""
import numba as nb

from spin.engine import state as S
from spin.engine.freelist import give_free, take_free
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot, copy_bytes
from spin.engine.rdma import (OPC_WRITE_FIRST, OPC_WRITE_LAST, OPC_WRITE_MIDDLE, OPC_WRITE_ONLY,
                              PSN_MASK, flow_entropy, take_psns)
from spin.wire.roce import finalize_roce_frame_no_icrc, write_roce_headers

from .entropy import spray_ev
from .loopback import emit_frame
from .pcie import pcie_read
from .reliable_tx import reliable_tx_step
from .transport import ROLE_TX, connection, kick_tx, wake_tx  # noqa: F401  (wake_tx: re-export)


@nb.njit(cache=True, _nrt=False)
def post_message(st, dev, dst_node, qp, nbytes, host_addr, remote_va, rkey, t_post):
    """Queue an RDMA WRITE of ``nbytes`` host bytes at ``host_addr`` to ``dst_node``."""
    if host_addr < 0 or nbytes < 0 or host_addr + nbytes > st.dev[dev, S.D_HOST_MEM_SIZE]:
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
    if st.dev[dev, S.D_TRANSPORT] == S.TR_NONE:
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
    if k < st.txlog.shape[0]:
        row = st.txlog[k]
        row[S.TL_SRC] = me
        row[S.TL_DST] = dst_node
        row[S.TL_QP] = qp
        row[S.TL_BYTES] = nbytes
        row[S.TL_T_POST_PS] = t_post
        row[S.TL_FIRST_PSN] = st.txm[m, S.T_PSN] & PSN_MASK
        sc[S.SC_TXLOG_N] = k + 1
    kick_tx(st, dev, t_post)


@nb.njit(cache=True, _nrt=False)
def tx_step(st, dev, now):
    """Emit the next packet of the head message. Messages leave in post order, which keeps the
    packets of every QP in PSN order as RoCE requires. Reliable transports choose their
    packets in ``reliable_tx``."""
    if st.dev[dev, S.D_TRANSPORT] != S.TR_NONE:
        reliable_tx_step(st, dev, now)
        return
    st.dev[dev, S.D_NIC_TX_SCHED] = 0
    if st.dev[dev, S.D_TXQ_N] == 0:
        return
    gp = st.dev[dev, S.D_PORT0]
    if st.port[gp, S.PT_Q_N] >= st.dev[dev, S.D_NIC_TX_WINDOW]:
        return  # resumed by the port's next tx_done
    cap = st.txq.shape[1]
    head = st.dev[dev, S.D_TXQ_HEAD]
    m = st.txq[dev, head]
    mtu = st.sc[S.SC_MTU]
    total = st.txm[m, S.T_LEN]
    sent = st.txm[m, S.T_SENT]
    chunk = min(mtu, total - sent)
    first = sent == 0
    last = sent + chunk >= total
    if first and last:
        opc = OPC_WRITE_ONLY
    elif first:
        opc = OPC_WRITE_FIRST
    elif last:
        opc = OPC_WRITE_LAST
    else:
        opc = OPC_WRITE_MIDDLE
    ready = pcie_read(st, dev, st.txm[m, S.T_T_POST], chunk)
    t_emit = max(ready, now)
    slot = alloc_slot(st)
    frame = st.pool[slot]
    psn = (st.txm[m, S.T_PSN] + sent // mtu) & PSN_MASK
    ev = st.txm[m, S.T_EV]
    if st.dev[dev, S.D_ENTROPY] == S.ENT_SPRAY:
        ev = spray_ev(ev, psn)
    off = write_roce_headers(frame, st.dev[dev, S.D_NODE], st.txm[m, S.T_DST], ev, opc,
                             st.txm[m, S.T_QP], psn, 1 if last else 0, st.txm[m, S.T_REMOTE_VA],
                             st.txm[m, S.T_RKEY], total, chunk, psn & 0xFFFF)
    copy_bytes(frame, off, st.host_mem, st.dev[dev, S.D_HOST_MEM_OFF] + st.txm[m, S.T_HOST_ADDR] + sent, chunk)
    st.slot_len[slot] = finalize_roce_frame_no_icrc(frame, off, chunk)
    st.slot_trusted[slot] = ICRC_PENDING
    emit_frame(st, dev, st.txm[m, S.T_DST], slot, t_emit, now)
    st.txm[m, S.T_SENT] = sent + chunk
    if last:
        st.dev[dev, S.D_TXQ_HEAD] = (head + 1) % cap
        st.dev[dev, S.D_TXQ_N] -= 1
        give_free(st.sc, S.SC_TXM_FREE_TOP, st.txm_free, m)
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.dev[dev, S.D_NIC_TX_SCHED] = 1
        push_event(st, t_emit, dev, S.EV_TXM, dev, 0, 0)
