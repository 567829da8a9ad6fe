"""Multipath routing in a switch: equal-cost port groups per destination, and the one hook that
picks a port of a group (``select_port``).

Routes are computed in Python from the topology (every next hop on a shortest path) and stored
as groups: ``st.route[epoch, switch, node]`` is a group id, ``st.rgroup[g] = (first, count)``
indexes ``st.rport`` (local port numbers). Faults switch ``SC_ROUTE_EPOCH`` to tables computed
for the surviving topology. Load-balancing schemes plug in at ``select_port``.
"""
import numba as nb
import numpy as np

from spin.engine import state as S

LB_ECMP = 0          # per-flow hash of the 5-tuple (the UDP source port carries the EV)
LB_NAMES = ("ecmp",)

_IP_SRC = 26
_IP_DST = 30
_IP_PROTO = 23
_L4 = 34


@nb.njit(cache=True, inline="always", _nrt=False)
def _mix32(h):
    """murmur3's 32-bit finaliser: every input bit affects every output bit."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


@nb.njit(cache=True, inline="always", _nrt=False)
def _be32(frame, off):
    return (np.int64(frame[off]) << 24) | (np.int64(frame[off + 1]) << 16) \
        | (np.int64(frame[off + 2]) << 8) | np.int64(frame[off + 3])


@nb.njit(cache=True, _nrt=False)
def flow_hash(frame, seed):
    """Hash of (source IP, destination IP, protocol, source port, destination port) with a
    per-switch seed, so that tiers do not all pick the same index (ECMP polarisation)."""
    h = _mix32((seed ^ _be32(frame, _IP_SRC)) & 0xFFFFFFFF)
    h = _mix32(h ^ _be32(frame, _IP_DST))
    h = _mix32(h ^ _be32(frame, _L4) ^ (np.int64(frame[_IP_PROTO]) << 8))
    return h


@nb.njit(cache=True, inline="always", _nrt=False)
def dst_node_of(frame):
    return (np.int64(frame[_IP_DST + 1]) << 16) | (np.int64(frame[_IP_DST + 2]) << 8) \
        | np.int64(frame[_IP_DST + 3])


@nb.njit(cache=True, _nrt=False)
def route_group(st, dev, dst_node):
    """Equal-cost group towards ``dst_node`` in the routing tables in force, or -1."""
    if dst_node < 0 or dst_node >= st.route.shape[2]:
        return -1
    return st.route[st.sc[S.SC_ROUTE_EPOCH], st.dev[dev, S.D_SW], dst_node]


@nb.njit(cache=True, _nrt=False)
def select_port(st, dev, slot, group, now):
    """The port-selection hook: the local port a frame leaves by, out of its equal-cost group.
    Per-flow ECMP is the default; other schemes (spraying, flowlets, adaptive routing) are
    chosen per switch by ``D_SW_LB``."""
    first = st.rgroup[group, 0]
    count = st.rgroup[group, 1]
    if count == 1:
        return st.rport[first]
    h = flow_hash(st.pool[slot], st.dev[dev, S.D_SW_SEED])
    return st.rport[first + h % count]


@nb.njit(cache=True, _nrt=False)
def routed_port(st, dev, slot, now):
    """Global port by which the frame in ``slot`` leaves switch ``dev``, or -1 (no route)."""
    g = route_group(st, dev, dst_node_of(st.pool[slot]))
    if g < 0:
        return -1
    return st.dev[dev, S.D_PORT0] + select_port(st, dev, slot, g, now)
