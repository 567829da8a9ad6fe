"""The 5-tuple hash switches use to keep a flow on one path (ECMP, flowlets), with a per-switch
seed so that the tiers of a fabric do not all pick the same index (ECMP polarisation)."""
import numpy as np

from spin.jit import njit

from .headers import IP_DST_OFF, IP_PROTO_OFF, IP_SRC_OFF, UDP_SPORT_OFF
from .transport_frames import get_be


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
    per-switch seed."""
    h = _mix32((seed ^ get_be(frame, IP_SRC_OFF, 4)) & 0xFFFFFFFF)
    h = _mix32(h ^ get_be(frame, IP_DST_OFF, 4))
    h = _mix32(h ^ get_be(frame, UDP_SPORT_OFF, 4) ^ (np.int64(frame[IP_PROTO_OFF]) << 8))
    return h
