"""Template of the NIC device kind (``spin.engine.device_kinds``), part of the generated engine
module (it calls handlers; see ``spin/engine/loop_template.py``): validate a frame, let the
NIC's transport (``nic_emulator.transports``) admit it and find its message, run the header and
payload handlers in sPIN order or write the payload to host memory (default path), then the
completion handler."""

from nic_emulator.actions import nic_finalize_actions
from nic_emulator.pcie import CQE_BYTES, pcie_write
from nic_emulator.transports.connections import wake_tx
from spin.wire import drops as D
from spin.api import PROCEED
from spin.engine import state as S
from spin.engine.hashmap import map_delete
from spin.engine.heap import push_event
from spin.engine.messages import free_message
from spin.engine.pool import copy_bytes, free_slot
from spin.engine.rdma import PSN_MASK
from spin.wire import headers as WH
from spin.wire import roce as W
from nic_emulator.payload import payload_stored
from spin.wire.ip_edit import dscp_of
from spin.jit import njit

from spin.engine.loop_template import message_handlers, run_handler  # SPIN-TEMPLATE
from nic_emulator.transports.dispatch import (transport_accepted, transport_admit,  # SPIN-TEMPLATE
    transport_carries, transport_find_message, transport_on_control,  # SPIN-TEMPLATE
    transport_on_trimmed)  # SPIN-TEMPLATE


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _nic_drop(st, dev, slot, reason):
    st.drops[dev, reason] += 1
    free_slot(st, slot)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def nic_receive(st, hmem, dev, gp, slot, now):
    _nic_frame(st, hmem, dev, slot, now, False)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def nic_timer(st, hmem, dev, slot, now):
    _nic_frame(st, hmem, dev, slot, now, True)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def nic_port_ready(st, dev, now):
    wake_tx(st, dev, now)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def nic_actions(st, dev, m, slot, n_commands, end):
    return nic_finalize_actions(st, dev, m, n_commands, end)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _nic_frame(st, hmem, dev, slot, now, timer):
    """A frame for this NIC (``timer``: the packet of an expired handler timer)."""
    frame = st.pool[slot]
    flen = st.slot_meta[slot, S.SM_LEN]
    out = st.parsed
    # ICRC is verified on frames from outside this engine (other workers, injected frames);
    # frames built here carry a correct ICRC by construction and are never corrupted in flight.
    check = st.sc[S.SC_CHECK_ICRC] != 0 and st.slot_meta[slot, S.SM_ICRC] == 0
    code = W.parse_frame(frame, flen, check, out, payload_stored(st))
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
    # a handler timer packet belongs to no connection: the transport neither sequences nor
    # acknowledges it, and it never replaces a message open on its QP
    tr = S.TR_OPEN_LOOP if timer else st.dev[dev, S.D_TRANSPORT]
    opcode = out[W.P_OPCODE]
    if opcode == WH.OP_RC_ACKNOWLEDGE or opcode == WH.OP_CNP or opcode == WH.OP_UE_ACK:
        reason = transport_on_control(tr, st, dev, out, frame, now)
        if reason != D.OK:
            _nic_drop(st, dev, slot, reason)
        else:
            free_slot(st, slot)
        return
    if not transport_carries(tr, st, opcode):
        _nic_drop(st, dev, slot, D.TRANSPORT_MISMATCH)
        return
    if st.sc[S.SC_TRIM_DSCP] > 0 and dscp_of(frame) == st.sc[S.SC_TRIM_DSCP]:
        # a congested switch cut the payload: nothing to place (a transport may ask again)
        transport_on_trimmed(tr, st, dev, out, now)
        _nic_drop(st, dev, slot, D.TRIMMED)
        return
    reason, c, psn_abs = transport_admit(tr, st, dev, out, now)
    if reason != D.OK:
        _nic_drop(st, dev, slot, reason)   # a duplicate or out of sequence: answered
        return
    reason, m, is_first, idx, t_ready, key = transport_find_message(tr, st, dev, out, psn_abs,
                                                                    timer, now)
    if reason != D.OK:
        _nic_drop(st, dev, slot, reason)
        return
    st.msg[m, S.M_LAST_T] = now
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
                                              t_ready, msg_off, out[W.P_PSN], flen)
    if deliver:
        st.msg[m, S.M_FLAGS] |= S.MSG_FLAG_DELIVERED
        addr = st.msg[m, S.M_VA] + msg_off
        if addr < 0 or addr + plen > st.dev[dev, S.D_HOST_ADDR_SPACE]:
            st.drops[dev, D.BAD_HOST_ADDRESS] += 1
        else:
            if st.dev[dev, S.D_PAYLOAD_GEN] == 0:   # generated payload: timed, not stored
                copy_bytes(st.host_mem, st.dev[dev, S.D_HOST_MEM_OFF] + addr, frame, poff, plen)
            t = pcie_write(st, dev, t_deliver, plen)
            if t > st.msg[m, S.M_DMA_END]:
                st.msg[m, S.M_DMA_END] = t
    st.msg[m, S.M_SEEN] += 1
    done = st.msg[m, S.M_SEEN] == st.msg[m, S.M_NPKTS]
    st.msg[m, S.M_CONN] = c
    transport_accepted(tr, st, dev, c, psn_abs, out, done, now)
    free_slot(st, slot)
    if done:
        if not timer:
            map_delete(st.rx_keys, st.rx_vals, key)
        t_c = max(st.msg[m, S.M_HDR_END], st.msg[m, S.M_PL_END], st.msg[m, S.M_LAST_READY])
        push_event(st, t_c, dev, S.EV_COMPLETION, dev, m, 0)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
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
    sc[S.SC_MSGLOG_N] = k + 1      # counts past the log's end: the results say how many are missing
    free_message(st, m)
