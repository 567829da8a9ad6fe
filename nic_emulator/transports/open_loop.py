"""Open loop (``none``): no connection state, no acknowledgements. Messages leave in post
order, one packet per transmit turn, which keeps the packets of every QP in PSN order as RoCE
requires; a lost packet loses its message. A message to the NIC's own node goes through the
loopback, not the port: PCIe paces it, and only a port backlog of half its queue holds it back. Handler timer packets take this receive path
whatever the NIC's transport (they belong to no connection)."""

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.freelist import give_free
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot
from ..payload import payload_stored, read_payload
from spin.engine.rdma import (OPC_WRITE_FIRST, OPC_WRITE_LAST, OPC_WRITE_MIDDLE, OPC_WRITE_ONLY,
                              PSN_MASK)
from spin.wire import headers as WH
from spin.wire import roce as W
from spin.wire.roce import finalize_roce_frame_no_icrc, write_roce_headers

from ..entropy import spray_ev
from ..loopback import emit_frame
from ..pcie import pcie_read
from .in_order import find_in_order
from spin.jit import njit


@njit(cache=True, _nrt=False)
def tx_step(st, dev, now):
    """Emit the next packet of the head message; the message leaves the queue with its last."""
    st.dev[dev, S.D_NIC_TX_SCHED] = 0
    if st.dev[dev, S.D_TXQ_N] == 0:
        return
    gp = st.dev[dev, S.D_PORT0]
    cap = st.txq.shape[1]
    head = st.dev[dev, S.D_TXQ_HEAD]
    m = st.txq[dev, head]
    # A loopback message never enters the port: only a backlog of half the port's queue holds
    # it back (handlers may turn its packets into sends), not the transmit window, which the
    # handlers' own sends keep full when they forward at line rate.
    if st.txm[m, S.T_DST] != st.dev[dev, S.D_NODE]:
        limit = st.dev[dev, S.D_NIC_TX_WINDOW]
    else:
        limit = st.port_q.shape[0] * S.RING_LINE // 2
    if st.port[gp, S.PT_Q_N] >= limit:
        return  # resumed by the port's next tx_done
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
                             st.txm[m, S.T_RKEY], total, chunk, psn & 0xFFFF, payload_stored(st))
    read_payload(st, dev, frame, off, st.txm[m, S.T_HOST_ADDR] + sent, chunk)
    st.slot_meta[slot, S.SM_LEN] = finalize_roce_frame_no_icrc(frame, off, chunk, payload_stored(st))
    st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING
    emit_frame(st, dev, st.txm[m, S.T_DST], slot, t_emit, now)
    st.txm[m, S.T_SENT] = sent + chunk
    if last:
        st.dev[dev, S.D_TXQ_HEAD] = (head + 1) % cap
        st.dev[dev, S.D_TXQ_N] -= 1
        give_free(st.sc, S.SC_TXM_FREE_TOP, st.txm_free, m)
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.dev[dev, S.D_NIC_TX_SCHED] = 1
        push_event(st, t_emit, dev, S.EV_TXM, dev, 0, 0)


@njit(cache=True, inline="always", _nrt=False)
def carries(opcode):
    return opcode != WH.OP_UE_WRITE


@njit(cache=True, _nrt=False)
def admit(st, dev, out, now):
    return D.OK, -1, out[W.P_PSN]


@njit(cache=True, _nrt=False)
def find_message(st, dev, out, psn, timer, now):
    return find_in_order(st, dev, out, timer, now)


@njit(cache=True, _nrt=False)
def accepted(st, dev, c, psn, out, message_done, now):
    return


@njit(cache=True, _nrt=False)
def on_control(st, dev, out, frame, now):
    return D.TRANSPORT_MISMATCH   # an ACK or CNP for a NIC that runs no reliable transport


@njit(cache=True, _nrt=False)
def on_trimmed(st, dev, out, now):
    return   # nothing asks for it again: the message is lost


@njit(cache=True, _nrt=False)
def on_timeout(st, dev, c, now):
    return False   # never armed
