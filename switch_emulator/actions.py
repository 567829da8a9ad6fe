"""The switch's action sink: what the commands a switch handler issued do (forward a copy of the
packet to a port or the routed next hop, multicast it to a port group, send a packet built in
switch memory along the routes, set a timer), timed from the handler's end (a timer from its
start: ``spin_set_timer``).

A template of the engine module (``spin.engine.codegen``), as it routes with ``routed_port``,
which is generated there from the registry of port-selection schemes."""

from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.handler_context import build_staged_packet, schedule_timer
from spin.engine.heap import push_event
from spin.engine.pool import ICRC_PENDING, alloc_slot, copy_bytes, free_slot
from spin.wire.ip_edit import set_destination
from spin.jit import njit
from switch_emulator.routing import routed_port  # SPIN-TEMPLATE


@njit(cache=True, _nrt=False)
def clone_frame(st, slot):
    """A copy of a frame in a new slot (multicast and explicit forwards leave as copies)."""
    c = alloc_slot(st)
    n = st.slot_meta[slot, S.SM_LEN]
    copy_bytes(st.pool[c], 0, st.pool[slot], 0, n)
    st.slot_meta[c, S.SM_LEN] = n
    st.slot_meta[c, S.SM_ICRC] = st.slot_meta[slot, S.SM_ICRC]
    return c


@njit(cache=True, _nrt=False)
def send_out(st, dev, slot, gp, t):
    """Queue ``slot`` on global port ``gp`` (-1: no route, counted) at time ``t``."""
    if gp < 0:
        st.drops[dev, D.NO_ROUTE] += 1
        free_slot(st, slot)
    else:
        push_event(st, t, dev, S.EV_ENQUEUE, dev, gp, slot)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def switch_finalize_actions(st, dev, slot, n, end):
    """Apply the ``n`` commands in ``st.pend``, each checked again (a handler may have written
    the table directly)."""
    port0 = st.dev[dev, S.D_PORT0]
    for i in range(n):
        p = st.pend[i]
        kind = p[0]
        if kind == S.ACT_SEND_PACKET:
            c = build_staged_packet(st, dev, p[S.PA_SEND_PACKET_DST], p[S.PA_SEND_PACKET_QP],
                                    p[S.PA_SEND_PACKET_STAGED_OFFSET],
                                    p[S.PA_SEND_PACKET_NBYTES], p[S.PA_SEND_PACKET_REMOTE_VA])
            send_out(st, dev, c, routed_port(st, dev, c, end), end)
        elif kind == S.ACT_TIMER:
            schedule_timer(st, dev, p)
        elif kind == S.ACT_FORWARD:
            port = p[S.PA_FORWARD_PORT]
            if slot < 0 or port < -1 or port >= st.dev[dev, S.D_NPORTS]:
                raise ValueError("spin_forward: port outside the switch's ports (or ROUTED)")
            c = clone_frame(st, slot)
            gp = port0 + port if port >= 0 else routed_port(st, dev, c, end)
            send_out(st, dev, c, gp, end)
        elif kind == S.ACT_MULTICAST:
            group = p[S.PA_MULTICAST_GROUP]
            if slot < 0 or group < 0 or group >= st.mgroup.shape[0] or st.mgroup[group, 1] <= 0:
                raise ValueError("spin_multicast: unknown multicast group")
            first = st.mgroup[group, 0]
            for k in range(first, first + st.mgroup[group, 1]):
                c = clone_frame(st, slot)
                gp = port0 + st.mport[k]
                peer = st.port[gp, S.PT_PEER]
                if peer >= 0:
                    pdev = st.port[gp, S.PT_PEER_DEV]
                    if st.dev[pdev, S.D_KIND] == S.DEV_NIC:
                        # egress rewrite per replica: the copy is addressed to the host it reaches
                        set_destination(st.pool[c], st.dev[pdev, S.D_NODE])
                        st.slot_meta[c, S.SM_ICRC] = ICRC_PENDING
                send_out(st, dev, c, gp, end)
        else:
            raise ValueError("spin: a switch handler issued a command switches do not know "
                             "(host memory, host events and puts are NIC calls)")
    return end
