"""Template of the switch device kind (``spin.engine.device_kinds``), part of the generated
engine module (it calls handlers; see ``spin/engine/loop_template.py``).

A frame leaves the ingress pipeline (its arrival time includes the pipeline latency), has its
TTL decremented, and is either taken by an execution context installed on the switch or routed:
equal-cost group, port-selection hook, output queue. Handlers see RoCE messages per flow
(source, destination, QP) in sPIN order: header handler on FIRST/ONLY, payload handlers on every
packet, completion handler after the last one. Any other UDP packet is a one-packet message.
Return codes: PROCEED forwards the packet on its routed path (the default path), SUCCESS
consumes it (copies sent with ``spin_forward``/``spin_multicast`` still leave), DROP discards
it and counts a ``handler_drop``.
"""
import numpy as np

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.hashmap import map_delete, map_get, map_put
from spin.engine.heap import push_event
from spin.engine.messages import (free_message, has_message_room, make_room_for, match_ec,
                                  new_message, switch_flow_key)
from spin.engine.pool import ICRC_PENDING, free_slot
from spin.engine.ports import enqueue_frame, hold_ingress
from spin.engine.rdma import OPC_WRITE_FIRST, OPC_WRITE_ONLY, PSN_MASK
from spin.wire import headers as WH
from spin.wire.ip_edit import decrement_ttl, is_ipv4
from spin.wire.transport_frames import get_be as _be
from spin.jit import njit

from spin.engine.loop_template import message_handlers, run_handler  # SPIN-TEMPLATE
from switch_emulator.actions import send_out, switch_finalize_actions  # SPIN-TEMPLATE
from switch_emulator.routing import routed_port  # SPIN-TEMPLATE

_UDP = WH.UDP_OFF
_BTH = WH.BTH_OFF
_PAYLOAD_UDP = WH.UDP_OFF + WH.UDP_BYTES
_PAYLOAD_BTH = WH.BTH_OFF + WH.BTH_BYTES
_PAYLOAD_RETH = WH.RETH_OFF + WH.RETH_BYTES


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _sw_drop(st, dev, slot, reason):
    st.drops[dev, reason] += 1
    free_slot(st, slot)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def switch_receive(st, hmem, dev, in_gp, slot, now):
    frame = st.pool[slot]
    length = st.slot_meta[slot, S.SM_LEN]
    if length < _UDP:
        _sw_drop(st, dev, slot, D.TRUNCATED)
        return
    if not is_ipv4(frame, length):
        _sw_drop(st, dev, slot, D.NOT_IPV4)
        return
    if not decrement_ttl(frame):
        _sw_drop(st, dev, slot, D.TTL_EXPIRED)
        return
    if st.dev[dev, S.D_EC_COUNT] > 0 and _switch_handle(st, hmem, dev, slot, now):
        return
    gp = routed_port(st, dev, slot, now)
    if gp < 0:
        _sw_drop(st, dev, slot, D.NO_ROUTE)
        return
    hold_ingress(st, slot, in_gp, now)
    enqueue_frame(st, gp, slot, now)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def switch_port_ready(st, dev, now):
    return   # a switch's ports drain their own queues (spin.engine.ports)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def switch_actions(st, dev, m, slot, n_commands, end):
    return switch_finalize_actions(st, dev, slot, n_commands, end)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def switch_timer(st, hmem, dev, slot, now):
    """A timer a handler of this switch set expired: its packet (from the switch to itself)
    goes to the switch's execution contexts; one that none takes has nowhere to go."""
    if not _switch_handle(st, hmem, dev, slot, now):
        _sw_drop(st, dev, slot, D.NO_ROUTE)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def _switch_handle(st, hmem, dev, slot, now):
    """Run the switch's execution contexts on the frame; False when none takes it."""
    frame = st.pool[slot]
    length = st.slot_meta[slot, S.SM_LEN]
    if frame[WH.IP_PROTO_OFF] != WH.IPPROTO_UDP or (frame[WH.IP_OFF] & 0x0F) != 5 \
            or length < _PAYLOAD_UDP:
        return False
    src = _be(frame, WH.IP_SRC_OFF + 1, 3)   # node ids: the low 24 bits of the 10.x.y.z address
    dst = _be(frame, WH.IP_DST_OFF + 1, 3)
    udp_dport = _be(frame, WH.UDP_DPORT_OFF, 2)
    cyc = st.dev[dev, S.D_CYCLE_PS]
    mtu = st.sc[S.SC_MTU]
    key = np.int64(-1)
    if udp_dport == WH.ROCE_UDP_PORT:
        if length < _PAYLOAD_BTH + WH.ICRC_BYTES:
            return False
        base_op = np.int64(frame[_BTH]) & 0x1F
        qp = _be(frame, _BTH + 5, 3)
        psn = _be(frame, _BTH + 9, 3)
        first = base_op == OPC_WRITE_FIRST or base_op == OPC_WRITE_ONLY
        poff = _PAYLOAD_RETH if first else _PAYLOAD_BTH
        plen = length - poff - ((np.int64(frame[_BTH + 1]) >> 4) & 3) - WH.ICRC_BYTES
        if plen < 0:
            return False
        key = switch_flow_key(dev, src, dst, qp, st.sc[S.SC_N_DEVS], st.sc[S.SC_FLOW_KEY_MAX_QP])
        if first:
            rkey = _be(frame, WH.RETH_OFF + 8, 4)
            ec = match_ec(st, dev, src, dst, qp, rkey, udp_dport, -1)
            if ec < 0:
                return False
            if not make_room_for(st, dev, key, now):
                _sw_drop(st, dev, slot, D.NO_MESSAGE_SLOT)
                return True
            dma_len = _be(frame, WH.RETH_OFF + 12, 4)
            npkts = 1 if base_op == OPC_WRITE_ONLY else max(1, (dma_len + mtu - 1) // mtu)
            t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
            m = new_message(st, dev, src, qp, psn, npkts, _be(frame, WH.RETH_OFF, 8), rkey,
                            dma_len, ec, t_ready, key)
            st.msg[m, S.M_T_FIRST] = now
            map_put(st.rx_keys, st.rx_vals, key, m)
        else:
            m = map_get(st.rx_keys, st.rx_vals, key)
            if m < 0:
                return False
            t_ready = now + st.dev[dev, S.D_MATCH_PKT_CYCLES] * cyc
            st.msg[m, S.M_LAST_T] = now
        idx = (psn - st.msg[m, S.M_FIRST_PSN]) & PSN_MASK
        if idx >= st.msg[m, S.M_NPKTS]:
            return False
        msg_off = idx * mtu
        st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING   # handlers may rewrite the payload
    else:
        poff = _PAYLOAD_UDP
        plen = min(_be(frame, WH.UDP_LEN_OFF, 2) - WH.UDP_BYTES, length - poff)
        if plen < 0:
            return False
        hdr_type = np.int64(frame[poff]) if plen > 0 else np.int64(-1)
        ec = match_ec(st, dev, src, dst, -1, -1, udp_dport, hdr_type)
        if ec < 0:
            return False
        if not has_message_room(st, dev, now):
            _sw_drop(st, dev, slot, D.NO_MESSAGE_SLOT)
            return True
        t_ready = now + st.dev[dev, S.D_MATCH_HDR_CYCLES] * cyc
        m = new_message(st, dev, src, -1, 0, 1, 0, 0, plen, ec, t_ready, -1)
        st.msg[m, S.M_T_FIRST] = now
        first = True
        psn = 0
        msg_off = 0
    pkt = frame[poff:poff + plen]
    if t_ready > st.msg[m, S.M_LAST_READY]:
        st.msg[m, S.M_LAST_READY] = t_ready
    forward, t_fwd = message_handlers(st, hmem, dev, st.msg[m, S.M_EC], m, slot, pkt, first,
                                      t_ready, msg_off, psn, length)
    if forward:
        send_out(st, dev, slot, routed_port(st, dev, slot, t_fwd), t_fwd)
    else:
        free_slot(st, slot)
    st.msg[m, S.M_SEEN] += 1
    if st.msg[m, S.M_SEEN] == st.msg[m, S.M_NPKTS]:
        if key >= 0:
            map_delete(st.rx_keys, st.rx_vals, key)
        t_c = max(st.msg[m, S.M_HDR_END], st.msg[m, S.M_PL_END], st.msg[m, S.M_LAST_READY])
        push_event(st, t_c, dev, S.EV_COMPLETION, dev, m, 0)
    return True


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def switch_complete(st, hmem, dev, m, now):
    """Every packet of the message passed and every payload handler ended: run the completion
    handler (it may send packets built in switch memory), then free the message."""
    ec = st.msg[m, S.M_EC]
    prog = st.ec[ec, S.EC_PROG]
    if st.prog[prog, S.PR_HAS + S.KIND_COMPLETION] != 0:
        run_handler(st, hmem, S.KIND_COMPLETION, dev, ec, m, -1, st.pool[0][:0], now, 0,
                    st.msg[m, S.M_FIRST_PSN], 0)
    free_message(st, m)
