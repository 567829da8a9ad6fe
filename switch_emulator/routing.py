"""Multipath routing in a switch: equal-cost port groups per destination, and the one hook that
picks a port of a group (``select_port``).

Routes are computed in Python from the topology (every next hop on a shortest path) and stored
as groups: ``st.route[epoch, switch, node]`` is a group id, ``st.rgroup[g] = (first, count)``
indexes ``st.rport`` (local port numbers). Faults switch ``SC_ROUTE_EPOCH`` to tables computed
for the surviving topology. Load-balancing schemes (``switch_emulator.lb``) plug in at
``select_port``.
"""
import numba as nb
import numpy as np

from spin.engine import state as S
from spin.wire.headers import IP_DST_OFF

from .lb import LB_ADAPTIVE, LB_ECMP, LB_FLOWLET
from .lb.adaptive import adaptive_port
from .lb.drill import drill_port
from .lb.ecmp import flow_hash
from .lb.flowlet import flowlet_port


@nb.njit(cache=True, inline="always", _nrt=False)
def dst_node_of(frame):
    return (np.int64(frame[IP_DST_OFF + 1]) << 16) | (np.int64(frame[IP_DST_OFF + 2]) << 8) \
        | np.int64(frame[IP_DST_OFF + 3])


@nb.njit(cache=True, _nrt=False)
def route_group(st, dev, dst_node):
    """Equal-cost group towards ``dst_node`` in the routing tables in force, or -1."""
    if dst_node < 0 or dst_node >= st.route.shape[2]:
        return -1
    return st.route[st.sc[S.SC_ROUTE_EPOCH], st.dev[dev, S.D_SW], dst_node]


@nb.njit(cache=True, _nrt=False)
def select_port(st, dev, slot, group, now):
    """The port-selection hook: the local port a frame leaves by, out of its equal-cost group,
    by the switch's scheme (``D_SW_LB``, one module each in ``switch_emulator.lb``)."""
    first = st.rgroup[group, 0]
    count = st.rgroup[group, 1]
    if count == 1:
        return st.rport[first]
    lb = st.dev[dev, S.D_SW_LB]
    if lb == LB_ECMP:
        return st.rport[first + flow_hash(st.pool[slot], st.dev[dev, S.D_SW_SEED]) % count]
    if lb == LB_FLOWLET:
        return flowlet_port(st, dev, slot, group, first, count, now)
    if lb == LB_ADAPTIVE:
        return adaptive_port(st, dev, slot, group, first, count, now)
    return drill_port(st, dev, slot, group, first, count, now)     # LB_DRILL


@nb.njit(cache=True, _nrt=False)
def routed_port(st, dev, slot, now):
    """Global port by which the frame in ``slot`` leaves switch ``dev``, or -1 (no route)."""
    g = route_group(st, dev, dst_node_of(st.pool[slot]))
    if g < 0:
        return -1
    return st.dev[dev, S.D_PORT0] + select_port(st, dev, slot, g, now)
