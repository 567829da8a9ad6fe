"""Per-flow ECMP: a hash of the 5-tuple picks the port, so every packet of a flow takes the same
path and arrives in order. Flows that hash alike share a path (collide) whatever the load; a
sender that varies the UDP source port (the entropy value) per packet sprays over all paths."""
import numpy as np

from spin.engine import state as S
from spin.wire.headers import IP_DST_OFF, IP_PROTO_OFF, IP_SRC_OFF, UDP_SPORT_OFF
from spin.wire.transport_frames import get_be

from .registry import PortScheme
from spin.jit import njit

@njit(cache=True, inline="always", _nrt=False)
def _mix32(h):
    """murmur3's 32-bit finaliser: every input bit affects every output bit."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


@njit(cache=True, _nrt=False)
def flow_hash(frame, seed):
    """Hash of (source IP, destination IP, protocol, source port, destination port) with a
    per-switch seed, so that tiers do not all pick the same index (ECMP polarisation)."""
    h = _mix32((seed ^ get_be(frame, IP_SRC_OFF, 4)) & 0xFFFFFFFF)
    h = _mix32(h ^ get_be(frame, IP_DST_OFF, 4))
    h = _mix32(h ^ get_be(frame, UDP_SPORT_OFF, 4) ^ (np.int64(frame[IP_PROTO_OFF]) << 8))
    return h


@njit(cache=True, inline="always", _nrt=False)
def ecmp_port(st, dev, slot, group, first, count, now):
    return st.rport[first + flow_hash(st.pool[slot], st.dev[dev, S.D_SW_SEED]) % count]


SCHEME = PortScheme(name="ecmp", select=ecmp_port,
                    summary="per-flow ECMP: a hash of the 5-tuple, one path per flow")
