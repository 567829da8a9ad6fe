"""Reliable-transport frames: RoCEv2 ACK/NAK (BTH + AETH), CNP (BTH with BECN + 16 reserved
bytes), and the Ultra-Ethernet-style WRITE (BTH + PLH + payload) and selective ACK/NACK
(BTH + AETH + SACKH) of ``nic_emulator.transports``. Numba writers for the engine, plus Python
builders with the same bytes for tools and tests. Layouts are declared in ``headers.py``; the
offsets below are checked against those declarations at import.
"""
from __future__ import annotations

import numpy as np

from spin.errors import WireError
from spin.wire import headers as H
from spin.wire.roce import finalize_roce_frame, finalize_roce_frame_no_icrc, write_bth_headers
from spin.jit import njit

_EXT = H.BTH_OFF + H.BTH_BYTES     # first byte after the BTH
TOS_NOT_ECT = 0x00                 # control frames are not ECN-capable (never marked)
TOS_ECT0 = H.IPV4_TOS_ECT0

if (H.AETH.offsets["msn"], H.PLH.offsets["msg_len"], H.PLH.offsets["msg_psn"],
        H.SACKH.offsets["sack_psn"], H.SACKH.offsets["bitmap"], H.SACKH.offsets["ev"],
        H.SACKH.offsets["flags"], H.PLH.offsets["rkey"]) != (1, 12, 16, 4, 8, 16, 18, 8):
    raise WireError("spin.wire.transport_frames offsets disagree with spin.wire.headers")


@njit(cache=True, inline="always", _nrt=False)
def put_be(frame, off, v, nbytes):
    for k in range(nbytes):
        frame[off + nbytes - 1 - k] = (v >> (8 * k)) & 0xFF


@njit(cache=True, inline="always", _nrt=False)
def get_be(frame, off, nbytes):
    v = np.int64(0)
    for k in range(nbytes):
        v = (v << 8) | np.int64(frame[off + k])
    return v


@njit(cache=True, _nrt=False)
def write_ue_write_headers(frame, src, dst, ev, qp, psn, va, rkey, msg_len, msg_psn, payload_len,
                           ack_req=0, payload_stored=True):
    """Headers of one UE WRITE packet (ECN-capable); ``ack_req`` sets the BTH AckReq bit (the
    sender asks for an ACK at once: its window closed after this packet). Returns the payload
    offset or -1. ``payload_stored``: as for ``write_bth_headers``."""
    off = write_bth_headers(frame, src, dst, ev, H.OP_UE_WRITE, qp, psn, ack_req, H.PLH_BYTES,
                            payload_len, psn & 0xFFFF, TOS_ECT0, payload_stored)
    if off < 0:
        return -1
    put_be(frame, _EXT, np.int64(va), 8)
    put_be(frame, _EXT + 8, np.int64(rkey) & 0xFFFFFFFF, 4)
    put_be(frame, _EXT + 12, np.int64(msg_len) & 0xFFFFFFFF, 4)
    put_be(frame, _EXT + 16, np.int64(msg_psn) & 0xFFFFFF, 4)
    return off


@njit(cache=True, _nrt=False)
def write_control_frame(frame, src, dst, ev, opcode, qp, psn, syndrome, msn, cum_psn, sack_psn,
                        bitmap, echo_ev, flags):
    """A whole ACK (0x11), CNP (0x81) or UE ACK (0xC1) frame, IPv4 checksum included but not
    its ICRC; returns its length (the caller marks the ICRC pending) or -1 for another
    opcode."""
    if opcode == H.OP_RC_ACKNOWLEDGE:
        ext = H.AETH_BYTES
    elif opcode == H.OP_CNP:
        ext = H.CNP_PAD_BYTES
    elif opcode == H.OP_UE_ACK:
        ext = H.AETH_BYTES + H.SACKH_BYTES
    else:
        return -1
    off = write_bth_headers(frame, src, dst, ev, opcode, qp, psn, 0, ext, 0, psn & 0xFFFF,
                            TOS_NOT_ECT)
    if off < 0:
        return -1
    if opcode == H.OP_CNP:
        frame[H.BTH_OFF + 4] = H.BTH_BECN
        for k in range(H.CNP_PAD_BYTES):
            frame[_EXT + k] = 0
    else:
        frame[_EXT] = syndrome
        put_be(frame, _EXT + 1, np.int64(msn) & 0xFFFFFF, 3)
        if opcode == H.OP_UE_ACK:
            s = _EXT + H.AETH_BYTES
            put_be(frame, s, np.int64(cum_psn) & 0xFFFFFF, 4)
            put_be(frame, s + 4, np.int64(sack_psn) & 0xFFFFFF, 4)
            put_be(frame, s + 8, np.int64(bitmap), 8)
            put_be(frame, s + 16, np.int64(echo_ev) & 0xFFFF, 2)
            put_be(frame, s + 18, np.int64(flags) & 0xFFFF, 2)
    return finalize_roce_frame_no_icrc(frame, off, 0)


# --- Python builders (tools and tests) --------------------------------------------------------

def build_control_frame(src: int, dst: int, ev: int, opcode: int, qp: int, psn: int,
                        syndrome: int = H.AETH_ACK, msn: int = 0, cum_psn: int = 0,
                        sack_psn: int = 0, bitmap: int = 0, echo_ev: int = 0,
                        flags: int = 0) -> bytes:
    """One complete control frame (same bytes as the engine builds), ICRC included."""
    if opcode not in (H.OP_RC_ACKNOWLEDGE, H.OP_CNP, H.OP_UE_ACK):
        raise WireError(f"opcode {opcode:#x} is not a control opcode; valid: "
                        f"{H.OP_RC_ACKNOWLEDGE:#x}, {H.OP_CNP:#x}, {H.OP_UE_ACK:#x}")
    frame = np.zeros(128, np.uint8)
    bm = bitmap - (1 << 64) if bitmap >= 1 << 63 else bitmap
    n = write_control_frame(frame, src, dst, ev, opcode, qp, psn, syndrome, msn, cum_psn,
                            sack_psn, bm, echo_ev, flags)
    total = finalize_roce_frame(frame, n - H.ICRC_BYTES, 0)   # adds the ICRC
    return frame[:total].tobytes()


def build_ue_write_frame(src: int, dst: int, ev: int, qp: int, psn: int, va: int, rkey: int,
                         msg_len: int, msg_psn: int, payload: bytes) -> bytes:
    """One complete UE WRITE frame, ICRC included."""
    frame = np.zeros(H.ROCE_HEADER_BYTES + H.PLH_BYTES + len(payload) + 8, np.uint8)
    off = write_ue_write_headers(frame, src, dst, ev, qp, psn, va, rkey, msg_len, msg_psn,
                                 len(payload))
    if off < 0:
        raise WireError(f"payload of {len(payload)} B does not fit in a frame")
    frame[off:off + len(payload)] = np.frombuffer(payload, np.uint8)
    total = finalize_roce_frame(frame, off, len(payload))
    return frame[:total].tobytes()
