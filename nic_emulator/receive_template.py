"""Template of the NIC receive path, part of the generated engine module (it calls handlers,
so it must sit next to the static dispatch; see ``spin/engine/loop_template.py``): validate a
frame, find its message and execution context, run the header and payload handlers in sPIN
order or write the payload to host memory (default path), then the completion handler."""
import numba as nb
import numpy as np

from nic_emulator.pcie import CQE_BYTES, pcie_write
from spin import drops as D
from spin.api import PROCEED
from spin.engine import state as S
from spin.engine.hashmap import map_delete, map_get, map_put
from spin.engine.heap import push_event
from spin.engine.messages import (free_message, has_message_room, make_room_for, match_ec,
                                  new_message)
from spin.engine.pool import copy_bytes, free_slot
from spin.engine.rdma import OPC_WRITE_FIRST, OPC_WRITE_ONLY, PSN_MASK, conn_key
from spin.wire import headers as WH
from spin.wire import roce as W
from spin.wire.ip_edit import dscp_of
from nic_emulator.reliable_rx import accepted, admit, trimmed
from nic_emulator.reliable_tx import on_control
from nic_emulator.transport import unwrap

from spin.engine.loop_template import message_handlers, run_handler  # SPIN-TEMPLATE


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _nic_drop(st, dev, slot, reason):
    st.drops[dev, reason] += 1
    free_slot(st, slot)


@nb.njit(cache=True, inline="always", _nrt=False)
def _ue_message_key(dev, src, qp, msg_psn):
    """Receive-map key of a UE message (bit 61 set: never equal to a connection key; the row's
    own fields are compared on every hit)."""
    k = ((np.int64(dev) & 0x1FFF) << 48) | ((np.int64(src) & 0xFFFFFF) << 24) \
        | (np.int64(msg_psn) & 0xFFFFFF)
    return (np.int64(1) << 61) | ((k ^ ((np.int64(qp) & 0xFFFFFF) << 20)) & ((np.int64(1) << 61) - 1))


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def nic_receive(st, hmem, dev, slot, now, timer):
    """A frame for this NIC (``timer``: the packet of an expired handler timer, which belongs to
    no connection: the transport neither sequences nor acknowledges it, and it never replaces a
    message open on its QP)."""
    frame = st.pool[slot]
    flen = st.slot_len[slot]
    out = st.parsed
    # ICRC is verified on frames from outside this engine (other workers, injected frames);
    # frames built here carry a correct ICRC by construction and are never corrupted in flight.
    check = st.sc[S.SC_CHECK_ICRC] != 0 and st.slot_trusted[slot] == 0
    code = W.parse_frame(frame, flen, check, out)
    if code != D.OK:
        _nic_drop(st, dev, slot, code)
        return
    if out[W.P_DST_NODE] != st.dev[dev, S.D_NODE]:
        _nic_drop(st, dev, slot, D.WRONG_DESTINATION)
        return
    if out[W.P_SRC_NODE] >= st.sc[S.SC_N_DEVS]:
        # no device has that address: a spoofed or corrupted source a handler must not answer
        _nic_drop(st, dev, slot, D.UNKNOWN_SOURCE)
        return
    tr = S.TR_NONE if timer else st.dev[dev, S.D_TRANSPORT]
    opcode = out[W.P_OPCODE]
    if opcode == WH.OP_RC_ACKNOWLEDGE or opcode == WH.OP_CNP or opcode == WH.OP_UE_ACK:
        reason = D.TRANSPORT_MISMATCH if tr == S.TR_NONE else on_control(st, dev, out, frame, now)
        if reason != D.OK:
            _nic_drop(st, dev, slot, reason)
        else:
            free_slot(st, slot)
        return
    if (opcode == WH.OP_UE_WRITE) != (tr == S.TR_UE):
        _nic_drop(st, dev, slot, D.TRANSPORT_MISMATCH)
        return
    if st.sc[S.SC_TRIM_DSCP] > 0 and dscp_of(frame) == st.sc[S.SC_TRIM_DSCP]:
        # a congested switch cut the payload: nothing to place (UE asks for it again)
        if tr == S.TR_UE:
            trimmed(st, dev, out, now)
        _nic_drop(st, dev, slot, D.TRIMMED)
        return
    src = out[W.P_SRC_NODE]
    qp = out[W.P_DEST_QP]
    psn = out[W.P_PSN]
    base_op = opcode & 0x1F
    key = conn_key(dev, src, qp)
    cyc = st.dev[dev, S.D_CYCLE_PS]
    is_first = base_op == OPC_WRITE_FIRST or base_op == OPC_WRITE_ONLY
    c = -1
    psn_abs = np.int64(psn)
    ue_idx = np.int64(0)
    if tr != S.TR_NONE:
        c, psn_abs = admit(st, dev, out, now)
        if c < 0:
            _nic_drop(st, dev, slot, psn_abs)   # a duplicate or out of sequence: answered
            return
    if tr == S.TR_UE:
        # out-of-order placement: whichever packet of a message comes first opens it
        msg_psn = unwrap(out[W.P_AUX], psn_abs)
        key = _ue_message_key(dev, src, qp, msg_psn)
        m = map_get(st.rx_keys, st.rx_vals, key)
        is_first = m < 0
        if is_first:
            if not has_message_room(st, dev, now):
                _nic_drop(st, dev, slot, D.NO_MESSAGE_SLOT)
                return
            t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
            mtu = st.sc[S.SC_MTU]
            dma_len = out[W.P_RETH_DMA_LEN]
            ec = match_ec(st, dev, src, st.dev[dev, S.D_NODE], qp, out[W.P_RETH_RKEY],
                          WH.ROCE_UDP_PORT, -1)
            m = new_message(st, dev, src, qp, msg_psn, max(1, (dma_len + mtu - 1) // mtu),
                            out[W.P_RETH_VA], out[W.P_RETH_RKEY], dma_len, ec, t_ready, key)
            st.msg[m, S.M_T_FIRST] = now
            map_put(st.rx_keys, st.rx_vals, key, m)
        elif st.msg[m, S.M_SRC] != src or st.msg[m, S.M_QP] != qp \
                or st.msg[m, S.M_FIRST_PSN] != msg_psn:
            _nic_drop(st, dev, slot, D.TRANSPORT_MISMATCH)   # a key collision: never expected
            return
        else:
            t_ready = now + st.dev[dev, S.D_MATCH_PKT_CYCLES] * cyc
        ue_idx = psn_abs - msg_psn
    elif is_first:
        room = has_message_room(st, dev, now) if timer else make_room_for(st, dev, key, now)
        if not room:
            _nic_drop(st, dev, slot, D.NO_MESSAGE_SLOT)
            return
        t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
        dma_len = out[W.P_RETH_DMA_LEN]
        mtu = st.sc[S.SC_MTU]
        npkts = 1 if base_op == OPC_WRITE_ONLY else max(1, (dma_len + mtu - 1) // mtu)
        ec = match_ec(st, dev, src, st.dev[dev, S.D_NODE], qp, out[W.P_RETH_RKEY],
                      WH.ROCE_UDP_PORT, -1)
        m = new_message(st, dev, src, qp, psn, npkts, out[W.P_RETH_VA], out[W.P_RETH_RKEY],
                        dma_len, ec, t_ready, np.int64(-1) if timer else key)
        st.msg[m, S.M_T_FIRST] = now
        if not timer:   # a timer packet is a whole message: never looked up again
            map_put(st.rx_keys, st.rx_vals, key, m)
    else:
        m = map_get(st.rx_keys, st.rx_vals, key)
        if m < 0:
            _nic_drop(st, dev, slot, D.UNKNOWN_MESSAGE)
            return
        t_ready = now + st.dev[dev, S.D_MATCH_PKT_CYCLES] * cyc
    st.msg[m, S.M_LAST_T] = now
    idx = ue_idx if tr == S.TR_UE else (psn - st.msg[m, S.M_FIRST_PSN]) & PSN_MASK
    if idx >= st.msg[m, S.M_NPKTS]:
        _nic_drop(st, dev, slot, D.UNKNOWN_MESSAGE)
        return
    mtu = st.sc[S.SC_MTU]
    msg_off = idx * mtu
    poff = out[W.P_PAYLOAD_OFF]
    plen = out[W.P_PAYLOAD_LEN]
    pkt = frame[poff:poff + plen]
    if t_ready > st.msg[m, S.M_LAST_READY]:
        st.msg[m, S.M_LAST_READY] = t_ready
    ec = st.msg[m, S.M_EC]
    deliver = True
    t_deliver = t_ready
    if ec >= 0:
        deliver, t_deliver = message_handlers(st, hmem, dev, ec, m, slot, pkt, is_first,
                                              t_ready, msg_off, psn, flen)
    if deliver:
        st.msg[m, S.M_FLAGS] |= S.MSG_FLAG_DELIVERED
        addr = st.msg[m, S.M_VA] + msg_off
        if addr < 0 or addr + plen > st.dev[dev, S.D_HOST_MEM_SIZE]:
            st.drops[dev, D.BAD_HOST_ADDRESS] += 1
        else:
            copy_bytes(st.host_mem, st.dev[dev, S.D_HOST_MEM_OFF] + addr, frame, poff, plen)
            t = pcie_write(st, dev, t_deliver, plen)
            if t > st.msg[m, S.M_DMA_END]:
                st.msg[m, S.M_DMA_END] = t
    st.msg[m, S.M_SEEN] += 1
    done = st.msg[m, S.M_SEEN] == st.msg[m, S.M_NPKTS]
    if tr != S.TR_NONE:
        st.msg[m, S.M_CONN] = c
        accepted(st, dev, c, psn_abs, out, done, now)
    free_slot(st, slot)
    if done:
        if not timer:
            map_delete(st.rx_keys, st.rx_vals, key)
        t_c = max(st.msg[m, S.M_HDR_END], st.msg[m, S.M_PL_END], st.msg[m, S.M_LAST_READY])
        push_event(st, t_c, dev, S.EV_COMPLETION, dev, m, 0)


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def nic_complete(st, hmem, dev, m, now):
    """All packets seen and every payload handler ended: run the completion handler, then tell
    the host (a completion-queue entry on the QP) when the default path applies."""
    ec = st.msg[m, S.M_EC]
    notify = True
    handled = 0
    t_cqe = now
    if ec >= 0:
        handled = 1
        prog = st.ec[ec, S.EC_PROG]
        if st.prog[prog, S.PR_HAS + S.KIND_COMPLETION] != 0:
            rc, end = run_handler(st, hmem, S.KIND_COMPLETION, dev, ec, m, -1,
                                  st.pool[0][:0], now, 0, st.msg[m, S.M_FIRST_PSN], 0)
            notify = rc == PROCEED
            t_cqe = end
        else:
            # no completion handler: notify when any packet went down the default path
            notify = (st.msg[m, S.M_FLAGS] & S.MSG_FLAG_DELIVERED) != 0
    qp = st.msg[m, S.M_QP]
    t_notify = max(st.msg[m, S.M_DMA_END], t_cqe)  # handled on the NIC: done when it finished
    if notify and qp < st.host_recv_count.shape[1]:
        t_notify = max(pcie_write(st, dev, t_cqe, CQE_BYTES), t_notify)
        push_event(st, t_notify, dev, S.EV_HOST_RECV, dev, qp, 0)
    sc = st.sc
    k = sc[S.SC_MSGLOG_N]
    if k < st.msglog.shape[0]:
        row = st.msglog[k]
        row[S.ML_NODE] = st.dev[dev, S.D_NODE]
        row[S.ML_SRC] = st.msg[m, S.M_SRC]
        row[S.ML_QP] = qp
        row[S.ML_BYTES] = st.msg[m, S.M_LEN]
        row[S.ML_T_FIRST_PS] = st.msg[m, S.M_T_FIRST]
        row[S.ML_T_DONE_PS] = t_notify
        row[S.ML_EC] = ec
        row[S.ML_HANDLED] = handled
        row[S.ML_FIRST_PSN] = st.msg[m, S.M_FIRST_PSN] & PSN_MASK
        sc[S.SC_MSGLOG_N] = k + 1
    free_message(st, m)
