"""The attached host's side of its link, compiled: checking the program's frames, serialising
them at the link rate, and packing frames for the program.

The host has no emulated NIC, so its output port lives here: a frame handed over at ``at_ps``
starts when the port is free (frames leave in the order the program sent them), lasts its
serialisation time (frame plus preamble, gap and FCS) and reaches the peer after the link's
propagation delay (plus the peer switch's pipeline), exactly as ``spin.engine.ports`` times a
local port. Event keys carry the host's device id and its own sequence, so the peer orders the
frames as it would a local device's.
"""
from __future__ import annotations

import numpy as np

from ..engine.pool import copy_bytes
from ..engine.ports import WIRE_OVERHEAD, serialization_ps
from .fabric_frames import KEY_DEVICE_SHIFT
from ..wire.headers import ETH_BYTES, ETHERTYPE_IPV4, IPV4_BYTES, UDP_BYTES
from ..wire.roce import node_ip, node_mac
from spin.jit import njit

# reasons a frame from the program is dropped (index into EndpointStats.dropped names)
REASONS = ("bad_length", "not_ipv4", "bad_source", "bad_time")
R_BAD_LENGTH, R_NOT_IPV4, R_BAD_SOURCE, R_BAD_TIME = range(4)
MAX_AT_PS = 1 << 60          # far beyond any run, far below the engine's "never" (2^62)
MIN_FRAME_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES
_MAC_SRC = 6
_ETHERTYPE = 12
_IP_VIHL = ETH_BYTES
_IP_SRC = ETH_BYTES + 12

# PortState columns
P_BUSY_UNTIL, P_SEQ, P_BUSY_PS, P_FRAMES, P_BYTES = range(5)
PORT_STATE_WORDS = 5


@njit(cache=True, _nrt=False)
def admit_frames(at_ps, lengths, blob, mac, ip, max_len, not_before, rate_gbps, delay_ps,
                 device, port, out_time, out_key, out_len, out_frames, dropped):
    """Check each frame (length, IPv4, source MAC and IP of the host, time not before
    ``not_before`` nor beyond MAX_AT_PS), time the good ones through the host's output port (``port`` state, see
    P_*) and copy them to ``out_*``; count refusals by reason in ``dropped``. Returns how many
    frames were admitted."""
    k = 0
    off = 0
    for i in range(at_ps.shape[0]):
        n = lengths[i]
        start = off
        off += n
        if n < MIN_FRAME_BYTES or n > max_len:
            dropped[R_BAD_LENGTH] += 1
            continue
        if (np.int64(blob[start + _ETHERTYPE]) << 8 | blob[start + _ETHERTYPE + 1]) \
                != ETHERTYPE_IPV4 or blob[start + _IP_VIHL] >> 4 != 4:
            dropped[R_NOT_IPV4] += 1
            continue
        same = True
        for j in range(6):
            same = same and blob[start + _MAC_SRC + j] == mac[j]
        for j in range(4):
            same = same and blob[start + _IP_SRC + j] == ip[j]
        if not same:
            dropped[R_BAD_SOURCE] += 1
            continue
        if at_ps[i] < not_before or at_ps[i] > MAX_AT_PS:
            dropped[R_BAD_TIME] += 1
            continue
        begin = max(at_ps[i], port[P_BUSY_UNTIL])
        ser = serialization_ps(n + WIRE_OVERHEAD, rate_gbps)
        port[P_BUSY_UNTIL] = begin + ser
        port[P_BUSY_PS] += ser
        port[P_FRAMES] += 1
        port[P_BYTES] += n
        out_time[k] = begin + ser + delay_ps
        out_key[k] = (np.int64(device) << KEY_DEVICE_SHIFT) | port[P_SEQ]
        port[P_SEQ] += 1
        out_len[k] = n
        copy_bytes(out_frames[k], 0, blob, start, n)
        k += 1
    return k


@njit(cache=True, _nrt=False)
def pack_slots(frames, lengths, order, blob):
    """Frames ``frames[order[i], :lengths[order[i]]]`` back to back into ``blob``; returns the
    bytes written."""
    off = 0
    for i in range(order.shape[0]):
        r = order[i]
        copy_bytes(blob, off, frames[r], 0, lengths[r])
        off += lengths[r]
    return off


def address_bytes(node: int) -> tuple[np.ndarray, np.ndarray]:
    """The host's MAC and IPv4 address as bytes (spin.wire.roce.node_mac / node_ip)."""
    mac = np.array([int(b, 16) for b in node_mac(node).split(":")], np.uint8)
    ip = np.array([int(b) for b in node_ip(node).split(".")], np.uint8)
    return mac, ip
