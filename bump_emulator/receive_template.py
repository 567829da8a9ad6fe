"""Template of the bump-in-the-wire device kind (``spin.engine.device_kinds``), part of the
generated engine module. A frame that arrives on one of its two ports is queued on the other
``D_BUMP_LAT_PS`` later, untouched (no TTL, no routing, no handlers): the device is invisible
to the endpoints except for the time it adds."""
from spin.wire import drops as D
from spin.engine import state as S
from spin.engine.heap import push_event
from spin.engine.pool import free_slot
from spin.jit import njit


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def bump_receive(st, hmem, dev, gp, slot, now):
    side = gp - st.dev[dev, S.D_PORT0]
    if side != 0 and side != 1:       # a frame to itself: it runs no handlers, nothing sends one
        st.drops[dev, D.NO_ROUTE] += 1
        free_slot(st, slot)
        return
    st.dev[dev, S.D_BUMP_FWD_0 + side] += 1
    out = st.dev[dev, S.D_PORT0] + 1 - side
    push_event(st, now + st.dev[dev, S.D_BUMP_LAT_PS], dev, S.EV_ENQUEUE, dev, out, slot)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True)
def bump_timer(st, hmem, dev, slot, now):
    """No handler runs on the device, so no timer is ever set: free the slot."""
    free_slot(st, slot)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def bump_complete(st, hmem, dev, m, now):
    return   # it never opens a message


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def bump_port_ready(st, dev, now):
    return   # its ports drain their own queues (spin.engine.ports)


@njit(cache=True, inline="always", _nrt=False, no_cpython_wrapper=True)
def bump_actions(st, dev, m, slot, n_commands, end):
    return end   # no handler runs on it, so it never has commands to carry out
