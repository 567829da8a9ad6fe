"""Template of the engine module: handler invocation and the event loop. ``spin.engine.codegen``
concatenates this file with the templates of each device kind (``spin.engine.device_kinds``)
and the dispatch generated from the registries (device kinds, NIC transports, switch
port-selection schemes) into one module named by a digest of every engine source, compiled once
per spin version and cached. The loop never names a device kind or a transport: it calls
``device_*`` and ``transport_*``. Handlers
are not part of it: they are compiled apart and called through the address of their entry
(``spin.engine.handler_abi``). Lines marked ``SPIN-TEMPLATE`` import names the concatenated
module defines itself; they are dropped.
"""

from nic_emulator.host import host_event_raised, host_message_delivered, host_step
from spin.wire import drops as D
from spin.api import DROP, DROP_PENDING, PROCEED, SUCCESS, SUCCESS_PENDING
from spin.engine import state as S
from spin.engine.control import apply_control
from spin.engine.handler_abi import invoke_entry, prepare_call
from spin.engine.handler_context import close_context
from spin.engine.heap import free_event, next_time, pop_event
from spin.engine.pool import free_slot
from spin.engine.prefetch import prefetch_next_events
from spin.engine.ports import (enqueue_frame, pfc_received, pfc_refresh, port_resume,
                               sample_queues, tx_done)
from spin.engine.state_ref import state_ref
from spin.engine.tracing import TRACE_HEADROOM, TRK_HANDLER, trace_row
from spin.wire.ip_edit import is_pfc_frame, pfc_quanta
from spin.jit import njit
from nic_emulator.transports.dispatch import transport_on_timeout, transport_tx_step  # SPIN-TEMPLATE
from spin.engine.device_kinds import (device_actions, device_complete,  # SPIN-TEMPLATE
                                      device_port_ready, device_receive,  # SPIN-TEMPLATE
                                      device_timer)  # SPIN-TEMPLATE


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def run_handler(st, hmem, kind, dev, ec, m, slot, pkt, t_ready, msg_offset, psn, frame_len):
    """Run one handler on the device's earliest-free processing unit (HPU), then apply its
    commands through the device kind's action sink; return (return code, end time in ps).
    ``hmem`` is the handler-memory arena: every execution context's memory as bytes."""
    hpus = st.dev[dev, S.D_HPUS]
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
    cur[S.CUR_PSN] = psn
    cur[S.CUR_QP] = st.msg[m, S.M_QP]
    cur[S.CUR_FRAME_LEN] = frame_len
    cur[S.CUR_ACTIVE] = 1
    st.sc[S.SC_HANDLER_CALLS] += 1
    entry = st.prog[prog, S.PR_ENTRY + kind]
    if entry == 0:
        raise RuntimeError("spin: a handler was invoked before its entry was loaded")
    block = prepare_call(st, kind, dev, m, slot, start, h, msg_offset, psn, frame_len, pkt,
                         hmem, ec)
    rc = invoke_entry(entry, block)
    if rc < SUCCESS or rc > SUCCESS_PENDING:
        cur[S.CUR_RETURNED] = rc
        raise ValueError("the handler returned a value, which is not a sPIN return code "
                         "(SUCCESS, PROCEED, PROCESS_DATA, DROP or a *_PENDING variant)")
    extra_cycles, n_commands = close_context(st)
    cycles = st.prog[prog, S.PR_CYCLES + kind] \
        + (st.prog[prog, S.PR_MCPB + kind] * pkt.shape[0] + 999) // 1000 + extra_cycles
    end = start + cycles * st.dev[dev, S.D_CYCLE_PS]
    end = device_actions(st, dev, m, slot, n_commands, end)
    st.hpu_free[dev, h] = end
    st.dev[dev, S.D_HPU_BUSY_PS] += end - start
    if st.sc[S.SC_TRACE] != 0:
        trace_row(st, TRK_HANDLER, dev, start, end, h, kind, ec, cur[S.CUR_SRC], cur[S.CUR_QP],
                  psn, cycles)
    st.dev[dev, S.D_HC + kind] += 1
    cur[S.CUR_ACTIVE] = 0
    return rc, end


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def message_handlers(st, hmem, dev, ec, m, slot, pkt, first, t_ready, msg_off, psn, flen):
    """sPIN ordering for one packet of message ``m`` on any device: the header handler on the
    first packet, then the payload handler once the header handler ended. Returns (take the
    default path, when): the default path is delivery to host memory on a NIC and forwarding
    on a switch; PROCEED from the header handler sends the whole message down it, DROP drops it
    all (counted)."""
    prog = st.ec[ec, S.EC_PROG]
    if first:
        if st.prog[prog, S.PR_HAS + S.KIND_HEADER] != 0:
            rc, end = run_handler(st, hmem, S.KIND_HEADER, dev, ec, m, slot, pkt, t_ready,
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
    if flags & S.MSG_FLAG_DROP_ALL:
        st.drops[dev, D.HANDLER_DROP] += 1
        return False, t_start
    if (flags & S.MSG_FLAG_PROCEED_ALL) != 0 or st.prog[prog, S.PR_HAS + S.KIND_PAYLOAD] == 0:
        return True, t_start
    rc, end = run_handler(st, hmem, S.KIND_PAYLOAD, dev, ec, m, slot, pkt, t_start, msg_off,
                          psn, flen)
    if end > st.msg[m, S.M_PL_END]:
        st.msg[m, S.M_PL_END] = end
    if rc == DROP or rc == DROP_PENDING:
        st.drops[dev, D.HANDLER_DROP] += 1
    return rc == PROCEED, end


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _arrive(st, hmem, dev, gp, slot, t):
    """A frame reached port ``gp``: links that are down lose it, PFC frames pause the port,
    everything else goes to the device. A frame the device sent itself (``gp`` is
    ``ARRIVE_LOOPBACK`` or ``ARRIVE_TIMER``) crossed no port: it goes to the device as is."""
    if gp < 0:
        if gp == S.ARRIVE_TIMER:
            st.dev[dev, S.D_TIMERS] += 1
            device_timer(st, hmem, dev, slot, t)
        else:
            device_receive(st, hmem, dev, gp, slot, t)
        return
    if st.port[gp, S.PT_UP] == 0:
        st.drops[dev, D.LINK_DOWN] += 1
        free_slot(st, slot)
        return
    frame = st.pool[slot]
    if is_pfc_frame(frame, st.slot_meta[slot, S.SM_LEN]):
        pfc_received(st, gp, pfc_quanta(frame), t)
        free_slot(st, slot)
        return
    device_receive(st, hmem, dev, gp, slot, t)


@njit(cache=True, _nrt=False, nogil=True)   # the GIL is released: see spin.runtime.watchdog
def run_until(st, hmem, t_end, max_events):
    """Process events with time < t_end (at most max_events if > 0); return a STATUS_* code."""
    st = state_ref(st)   # one pointer per call below, not ~450 words (spin.engine.state_ref)
    sc = st.sc
    sc[S.SC_STATUS] = S.STATUS_DONE
    prefetching = sc[S.SC_PREFETCH] != 0   # EngineConfig.prefetch (spin.engine.prefetch)
    n = 0
    while sc[S.SC_HEAP_N] > 0:
        t = next_time(st)
        if t >= t_end:
            break
        if max_events > 0 and n >= max_events:
            sc[S.SC_STATUS] = S.STATUS_EVENT_LIMIT
            break
        # an event records at most a few captured and outgoing frames: stop while both buffers
        # still have room, so Python can drain them
        if sc[S.SC_CAP_N] + 4 > st.cap.shape[0]:
            sc[S.SC_STATUS] = S.STATUS_CAPTURE_FULL
            break
        if sc[S.SC_OUT_N] + 4 > st.out.shape[0]:
            sc[S.SC_STATUS] = S.STATUS_OUTBOX_FULL
            break
        if sc[S.SC_TRACE] != 0 and sc[S.SC_TRACE_N] + TRACE_HEADROOM > st.trace.shape[0]:
            sc[S.SC_STATUS] = S.STATUS_CAPTURE_FULL
            break
        if sc[S.SC_QS_N] + st.port.shape[0] > st.qsamples.shape[0] \
                and st.ev[st.heap[S.HP_EVENT], S.E_KIND] == S.EV_SAMPLE:
            sc[S.SC_STATUS] = S.STATUS_CAPTURE_FULL   # Python drains samples with captures
            break
        eid = pop_event(st)
        kind = st.ev[eid, S.E_KIND]
        dev = st.ev[eid, S.E_DEV]
        a = st.ev[eid, S.E_A]
        b = st.ev[eid, S.E_B]
        free_event(st, eid)
        if prefetching:
            prefetch_next_events(st)   # while this event runs (spin.engine.prefetch)
        now_before = sc[S.SC_NOW]
        sc[S.SC_NOW] = t
        n += 1
        if kind <= S.EV_ENQUEUE:  # the per-hop packet events: tx done, arrive, enqueue
            sc[S.SC_PKT_EVENTS] += 1
        if kind == S.EV_TX_DONE:
            tx_done(st, a, b, t)
            device_port_ready(st, dev, t)
        elif kind == S.EV_ARRIVE:
            _arrive(st, hmem, dev, a, b, t)
        elif kind == S.EV_ENQUEUE:
            enqueue_frame(st, a, b, t)
        elif kind == S.EV_TXM:
            transport_tx_step(st.dev[dev, S.D_TRANSPORT], st, dev, t)
        elif kind == S.EV_HOST:
            host_step(st, dev, t)
        elif kind == S.EV_HOST_RECV:
            host_message_delivered(st, dev, a, t)
        elif kind == S.EV_HOST_EVENT:
            host_event_raised(st, dev, t)
        elif kind == S.EV_COMPLETION:
            device_complete(st, hmem, dev, a, t)
        elif kind == S.EV_CONTROL:
            apply_control(st, a, t)
            n -= 1   # every worker applies every control event: not counted, so event counts
            #          do not depend on the number of workers
        elif kind == S.EV_SAMPLE:
            sample_queues(st, t)
            n -= 1   # sampled in every worker: not counted (see EV_CONTROL), and it does not
            sc[S.SC_NOW] = now_before   # move the clock the run's end time is read from
        elif kind == S.EV_RTO:
            if not transport_on_timeout(st.dev[dev, S.D_TRANSPORT], st, dev, a, t):
                sc[S.SC_NOW] = now_before   # a timer that only re-arms or lapses: no time passes
        elif kind == S.EV_PORT_RESUME:
            port_resume(st, a, t)
            device_port_ready(st, dev, t)
        elif kind == S.EV_PFC_REFRESH:
            pfc_refresh(st, a, t)
        if sc[S.SC_STATUS] != S.STATUS_DONE:
            break
    sc[S.SC_EVENTS] += n
    return sc[S.SC_STATUS]
