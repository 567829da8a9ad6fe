"""Template of the generated engine module: the event loop and the NIC receive path that calls
handlers. ``spin.engine.codegen`` copies this file, replacing the ``_dispatch_default`` import
with static dispatch over the fabric's handler programs, so Numba inlines the handlers and
caches the result under a name that embeds a hash of every source involved.
"""
import numba as nb
import numpy as np  # noqa: F401  (used by the generated dispatch code)

from nic_emulator.host import host_event_raised, host_message_delivered, host_step
from nic_emulator.pcie import CQE_BYTES, pcie_read, pcie_write
from nic_emulator.tx import post_message, tx_step, wake_tx
from spin import drops as D
from spin.api import DROP, DROP_PENDING, PROCEED
from spin.engine import state as S
from spin.engine.freelist import give_free, take_free
from spin.engine.hashmap import map_delete, map_get, map_put
from spin.engine.heap import free_event, pop_event, push_event
from spin.engine.pool import copy_bytes, free_slot
from spin.engine.ports import enqueue_frame, tx_done
from spin.engine.rdma import OPC_WRITE_FIRST, OPC_WRITE_ONLY, PSN_MASK, conn_key
from spin.wire import roce as W
from switch_emulator.forward import switch_receive

from spin.engine._dispatch_default import dispatch_handler  # SPIN-DISPATCH


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _finalize_actions(st, dev, m, end):
    """Apply the commands a handler issued, timed from the handler's end. Blocking reads first,
    since they lengthen the handler itself."""
    n = st.sc[S.SC_PEND_N]
    for i in range(n):
        if st.pend[i, 0] == S.ACT_DMA_FROM_HOST:
            end = pcie_read(st, dev, end, st.pend[i, 1])
    gp = st.dev[dev, S.D_PORT0]
    for i in range(n):
        p = st.pend[i]
        kind = p[0]
        if kind == S.ACT_DMA_TO_HOST or kind == S.ACT_HOST_WRITE:
            t = pcie_write(st, dev, end, p[1])
            if m >= 0 and t > st.msg[m, S.M_DMA_END]:
                st.msg[m, S.M_DMA_END] = t
            if kind == S.ACT_DMA_TO_HOST and p[2] != 0:
                push_event(st, pcie_write(st, dev, end, CQE_BYTES), dev, S.EV_HOST_EVENT,
                           dev, 0, 0)
        elif kind == S.ACT_SEND_SLOT:
            push_event(st, end, dev, S.EV_ENQUEUE, dev, gp, p[1])
        elif kind == S.ACT_HOST_EVENT:
            # an event is a small posted write behind the handler's data writes: it never
            # reaches the host before the data it announces
            push_event(st, pcie_write(st, dev, end, CQE_BYTES), dev, S.EV_HOST_EVENT,
                       dev, p[1], 0)
        elif kind == S.ACT_PUT_FROM_HOST:
            post_message(st, dev, p[1], p[2], p[4], p[3], p[5], 0, end)
    st.sc[S.SC_PEND_N] = 0
    return end


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def run_handler(st, hmems, kind, dev, ec, m, slot, pkt, t_ready, msg_offset, psn, frame_len):
    """Run one handler on the earliest-free HPU; return (return code, end time in ps)."""
    hpus = st.dev[dev, S.D_NIC_HPUS]
    h = 0
    best = st.hpu_free[dev, 0]
    for i in range(1, hpus):
        if st.hpu_free[dev, i] < best:
            best = st.hpu_free[dev, i]
            h = i
    start = max(t_ready, best)
    prog = st.ec[ec, S.EC_PROG]
    cur = st.cur
    cur[S.CUR_DEV] = dev
    cur[S.CUR_EC] = ec
    cur[S.CUR_MSG] = m
    cur[S.CUR_KIND] = kind
    cur[S.CUR_SLOT] = slot
    cur[S.CUR_TIME] = start
    cur[S.CUR_PAYLOAD_LEN] = pkt.shape[0]
    cur[S.CUR_MSG_OFFSET] = msg_offset
    cur[S.CUR_SRC] = st.msg[m, S.M_SRC]
    cur[S.CUR_HPU] = h
    cur[S.CUR_EXTRA_CYCLES] = 0
    cur[S.CUR_PSN] = psn
    cur[S.CUR_QP] = st.msg[m, S.M_QP]
    cur[S.CUR_FRAME_LEN] = frame_len
    cur[S.CUR_ACTIVE] = 1
    st.sc[S.SC_PEND_N] = 0
    rc = dispatch_handler(kind, prog, st.ec[ec, S.EC_INST], st, hmems, pkt)
    cycles = st.prog[prog, S.PR_CYCLES + kind] + (st.prog[prog, S.PR_MCPB + kind] * pkt.shape[0] + 999) // 1000 \
        + cur[S.CUR_EXTRA_CYCLES]
    end = start + cycles * st.dev[dev, S.D_NIC_CYCLE_PS]
    end = _finalize_actions(st, dev, m, end)
    st.hpu_free[dev, h] = end
    st.dev[dev, S.D_HPU_BUSY_PS] += end - start
    st.dev[dev, S.D_HC + kind] += 1
    cur[S.CUR_ACTIVE] = 0
    return rc, end


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _match_ec(st, dev, qp, rkey, src):
    first = st.dev[dev, S.D_EC_FIRST]
    for e in range(first, first + st.dev[dev, S.D_EC_COUNT]):
        if (st.ec[e, S.EC_MATCH_QP] < 0 or st.ec[e, S.EC_MATCH_QP] == qp) \
                and (st.ec[e, S.EC_MATCH_RKEY] < 0 or st.ec[e, S.EC_MATCH_RKEY] == rkey) \
                and (st.ec[e, S.EC_MATCH_SRC] < 0 or st.ec[e, S.EC_MATCH_SRC] == src):
            return e
    return -1


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _drop(st, dev, slot, reason):
    st.drops[dev, reason] += 1
    free_slot(st, slot)


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _new_message(st, dev, src, qp, out, now):
    sc = st.sc
    m = take_free(sc, S.SC_MSG_FREE_TOP, st.msg_free)
    if m < 0:
        raise MemoryError("spin engine: receive message table exhausted (raise EngineConfig.max_rx_messages)")
    mtu = sc[S.SC_MTU]
    dma_len = out[W.P_RETH_DMA_LEN]
    st.msg[m, S.M_DEV] = dev
    st.msg[m, S.M_SRC] = src
    st.msg[m, S.M_QP] = qp
    st.msg[m, S.M_FIRST_PSN] = out[W.P_PSN]
    st.msg[m, S.M_NPKTS] = 1 if (out[W.P_OPCODE] & 0x1F) == OPC_WRITE_ONLY else max(1, (dma_len + mtu - 1) // mtu)
    st.msg[m, S.M_SEEN] = 0
    st.msg[m, S.M_VA] = out[W.P_RETH_VA]
    st.msg[m, S.M_RKEY] = out[W.P_RETH_RKEY]
    st.msg[m, S.M_LEN] = dma_len
    st.msg[m, S.M_HDR_END] = now
    st.msg[m, S.M_PL_END] = now
    st.msg[m, S.M_DMA_END] = now
    st.msg[m, S.M_LAST_READY] = now
    st.msg[m, S.M_FLAGS] = 0
    st.msg[m, S.M_T_FIRST] = now
    st.msg[m, S.M_EC] = _match_ec(st, dev, qp, out[W.P_RETH_RKEY], src)
    for i in range(S.MSG_STATE_WORDS):
        st.msg_state[m, i] = 0
    st.dev[dev, S.D_NIC_MSGS_ACTIVE] += 1
    return m


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _free_message(st, m):
    st.dev[st.msg[m, S.M_DEV], S.D_NIC_MSGS_ACTIVE] -= 1
    give_free(st.sc, S.SC_MSG_FREE_TOP, st.msg_free, m)


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def nic_receive(st, hmems, dev, slot, now):
    """A frame reached a NIC: validate, find its message and execution context, run the header
    and payload handlers (sPIN order), or write the payload to host memory (default path)."""
    frame = st.pool[slot]
    flen = st.slot_len[slot]
    out = st.parsed
    # ICRC is verified on frames from outside this engine (other workers, injected frames);
    # frames built here carry a correct ICRC by construction and are never corrupted in flight.
    check = st.sc[S.SC_CHECK_ICRC] != 0 and st.slot_trusted[slot] == 0
    code = W.parse_frame(frame, flen, check, out)
    if code != D.OK:
        _drop(st, dev, slot, code)
        return
    if out[W.P_DST_NODE] != st.dev[dev, S.D_NODE]:
        _drop(st, dev, slot, D.WRONG_DESTINATION)
        return
    src = out[W.P_SRC_NODE]
    qp = out[W.P_DEST_QP]
    psn = out[W.P_PSN]
    base_op = out[W.P_OPCODE] & 0x1F
    key = conn_key(dev, src, qp)
    cyc = st.dev[dev, S.D_NIC_CYCLE_PS]
    is_first = base_op == OPC_WRITE_FIRST or base_op == OPC_WRITE_ONLY
    if is_first:
        old = map_get(st.rx_keys, st.rx_vals, key)
        if old >= 0:
            # the previous message on this connection never completed (lost packets)
            st.drops[dev, D.UNKNOWN_MESSAGE] += st.msg[old, S.M_NPKTS] - st.msg[old, S.M_SEEN]
            map_delete(st.rx_keys, st.rx_vals, key)
            _free_message(st, old)
        if st.dev[dev, S.D_NIC_MSGS_ACTIVE] >= st.dev[dev, S.D_NIC_MAX_MSGS]:
            _drop(st, dev, slot, D.NO_MESSAGE_SLOT)
            return
        t_ready = now + st.dev[dev, S.D_NIC_MATCH_HDR_CYCLES] * cyc
        m = _new_message(st, dev, src, qp, out, t_ready)
        st.msg[m, S.M_T_FIRST] = now
        map_put(st.rx_keys, st.rx_vals, key, m)
    else:
        m = map_get(st.rx_keys, st.rx_vals, key)
        if m < 0:
            _drop(st, dev, slot, D.UNKNOWN_MESSAGE)
            return
        t_ready = now + st.dev[dev, S.D_NIC_MATCH_PKT_CYCLES] * cyc
    idx = (psn - st.msg[m, S.M_FIRST_PSN]) & PSN_MASK
    if idx >= st.msg[m, S.M_NPKTS]:
        _drop(st, dev, slot, D.UNKNOWN_MESSAGE)
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
        prog = st.ec[ec, S.EC_PROG]
        if is_first:
            if st.prog[prog, S.PR_HAS + S.KIND_HEADER] != 0:
                rc, end = run_handler(st, hmems, S.KIND_HEADER, dev, ec, m, slot, pkt, t_ready,
                                      msg_off, psn, flen)
                st.msg[m, S.M_HDR_END] = end
                if rc == PROCEED:
                    st.msg[m, S.M_FLAGS] |= S.MSG_FLAG_PROCEED_ALL
                elif rc == DROP or rc == DROP_PENDING:
                    st.msg[m, S.M_FLAGS] |= S.MSG_FLAG_DROP_ALL
            else:
                st.msg[m, S.M_HDR_END] = t_ready
        flags = st.msg[m, S.M_FLAGS]
        t_start = max(t_ready, st.msg[m, S.M_HDR_END])
        t_deliver = t_start
        if flags & S.MSG_FLAG_DROP_ALL:
            st.drops[dev, D.HANDLER_DROP] += 1
            deliver = False
        elif flags & S.MSG_FLAG_PROCEED_ALL:
            deliver = True
        elif st.prog[prog, S.PR_HAS + S.KIND_PAYLOAD] != 0:
            rc, end = run_handler(st, hmems, S.KIND_PAYLOAD, dev, ec, m, slot, pkt, t_start,
                                  msg_off, psn, flen)
            if end > st.msg[m, S.M_PL_END]:
                st.msg[m, S.M_PL_END] = end
            t_deliver = end
            if rc == PROCEED:
                deliver = True
            else:
                deliver = False
                if rc == DROP or rc == DROP_PENDING:
                    st.drops[dev, D.HANDLER_DROP] += 1
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
    free_slot(st, slot)
    if st.msg[m, S.M_SEEN] == st.msg[m, S.M_NPKTS]:
        map_delete(st.rx_keys, st.rx_vals, key)
        t_c = max(st.msg[m, S.M_HDR_END], st.msg[m, S.M_PL_END], st.msg[m, S.M_LAST_READY])
        push_event(st, t_c, dev, S.EV_COMPLETION, dev, m, 0)


@nb.njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def nic_complete(st, hmems, dev, m, now):
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
            rc, end = run_handler(st, hmems, S.KIND_COMPLETION, dev, ec, m, -1,
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
        row[0] = st.dev[dev, S.D_NODE]
        row[1] = st.msg[m, S.M_SRC]
        row[2] = qp
        row[3] = st.msg[m, S.M_LEN]
        row[4] = st.msg[m, S.M_T_FIRST]
        row[5] = t_notify
        row[6] = ec
        row[7] = handled
        sc[S.SC_MSGLOG_N] = k + 1
    _free_message(st, m)


@nb.njit(cache=True, _nrt=False)
def run_until(st, hmems, t_end, max_events):
    """Process events with time < t_end (at most max_events if > 0); return a STATUS_* code."""
    sc = st.sc
    sc[S.SC_STATUS] = S.STATUS_DONE
    n = 0
    while sc[S.SC_HEAP_N] > 0:
        eid = st.heap[0]
        t = st.ev[eid, S.E_TIME]
        if t >= t_end:
            break
        if max_events > 0 and n >= max_events:
            sc[S.SC_STATUS] = S.STATUS_EVENT_LIMIT
            break
        # an event records at most one captured and one outgoing frame: stop while both
        # buffers still have room, so Python can drain them
        if sc[S.SC_CAP_N] >= st.cap.shape[0]:
            sc[S.SC_STATUS] = S.STATUS_CAPTURE_FULL
            break
        if sc[S.SC_OUT_N] >= st.out.shape[0]:
            sc[S.SC_STATUS] = S.STATUS_OUTBOX_FULL
            break
        pop_event(st)
        kind = st.ev[eid, S.E_KIND]
        dev = st.ev[eid, S.E_DEV]
        a = st.ev[eid, S.E_A]
        b = st.ev[eid, S.E_B]
        free_event(st, eid)
        sc[S.SC_NOW] = t
        n += 1
        if kind <= S.EV_ENQUEUE:  # the per-hop packet events: tx done, arrive, enqueue
            sc[S.SC_PKT_EVENTS] += 1
        if kind == S.EV_TX_DONE:
            tx_done(st, a, t)
            if st.dev[dev, S.D_KIND] == S.DEV_NIC:
                wake_tx(st, dev, t)
        elif kind == S.EV_ARRIVE:
            if st.dev[dev, S.D_KIND] == S.DEV_NIC:
                nic_receive(st, hmems, dev, b, t)
            else:
                switch_receive(st, dev, a, b, t)
        elif kind == S.EV_ENQUEUE:
            enqueue_frame(st, a, b, t)
        elif kind == S.EV_TXM:
            tx_step(st, dev, t)
        elif kind == S.EV_HOST:
            host_step(st, dev, t)
        elif kind == S.EV_HOST_RECV:
            host_message_delivered(st, dev, a, t)
        elif kind == S.EV_HOST_EVENT:
            host_event_raised(st, dev, t)
        elif kind == S.EV_COMPLETION:
            nic_complete(st, hmems, dev, a, t)
        if sc[S.SC_STATUS] != S.STATUS_DONE:
            break
    sc[S.SC_EVENTS] += n
    return sc[S.SC_STATUS]
