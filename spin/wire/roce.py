"""RoCEv2 RDMA WRITE frames: Numba build/parse on buffer-pool slots, plus Python conveniences.

Frame = Ethernet II / IPv4 / UDP (sport = entropy value, dport 4791, checksum 0) / BTH
(/ RETH on FIRST and ONLY) / payload / zero pad to a multiple of 4 / ICRC. No Ethernet FCS and no
padding to the 60-byte Ethernet minimum (the shortest frame, an empty MIDDLE, is 58 B).

Node ``n`` (24 bits) has MAC ``02:00:00:NN:NN:NN`` and IPv4 ``10.N.N.N`` (big-endian id in the low
three bytes of each). Parsing takes node ids from the IP addresses.

The hot-path functions are ``@njit(cache=True)`` and index the frame with literal offsets. The
literals are checked against the declarations in ``headers.py`` at import: a header change then
fails loudly here instead of running stale cached machine code (Numba's cache is keyed on this
file only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spin.wire import drops
from spin.errors import WireError
from spin.wire import headers as H
from spin.wire.crc32 import CRC32_TABLE, crc32_update
from spin.jit import njit

# ---------------------------------------------------------------------------------------------
# Offsets (frames spin builds: IPv4 without options). Checked against headers.py below.
_ETH_TYPE = 12
_IP = 14
_UDP = 34
_BTH = 42
_RETH = 54
_ETH_BYTES = 14
_IPV4_BYTES = 20
_UDP_BYTES = 8
_BTH_BYTES = 12
_RETH_BYTES = 16
_ICRC_BYTES = 4
HEADER_SLOT_BYTES = H.HEADER_SLOT_BYTES   # a slot holding headers only (parse_frame)
_ROCE_PORT = 4791

if (_ETH_TYPE, _IP, _UDP, _BTH, _RETH) != (H.ETH.offsets["type"], H.IP_OFF, H.UDP_OFF, H.BTH_OFF,
                                           H.RETH_OFF) or \
        (_ETH_BYTES, _IPV4_BYTES, _UDP_BYTES, _BTH_BYTES, _RETH_BYTES, _ICRC_BYTES, _ROCE_PORT) != \
        (H.ETH_BYTES, H.IPV4_BYTES, H.UDP_BYTES, H.BTH_BYTES, H.RETH_BYTES, H.ICRC_BYTES,
         H.ROCE_UDP_PORT) or \
        (H.IPV4.offsets["ttl"], H.IPV4.offsets["csum"], H.UDP.offsets["csum"],
         H.BTH.offsets["resv8a"], H.BTH.offsets["dest_qp"], H.BTH.offsets["psn"]) != \
        (8, 10, 6, 4, 5, 9):
    raise WireError("spin.wire.roce offsets disagree with spin.wire.headers; update both")

# Indices into parse_frame's ``out`` array.
P_SRC_NODE = 0
P_DST_NODE = 1
P_EV = 2
P_OPCODE = 3
P_DEST_QP = 4
P_PSN = 5
P_ACK_REQ = 6
P_RETH_VA = 7        # int64 bit pattern of the u64 VA (mask with 2**64-1 for the unsigned value)
P_RETH_RKEY = 8
P_RETH_DMA_LEN = 9
P_PAYLOAD_OFF = 10
P_PAYLOAD_LEN = 11   # excludes pad and ICRC
P_ECN = 12
P_TTL = 13
P_HAS_RETH = 14     # RETH fields filled (from a RETH, or from the PLH of a UE WRITE)
P_EXT_OFF = 15      # offset of the first header after the BTH
P_AUX = 16          # UE WRITE: PSN of the message's first packet (PLH msg_psn); AETH word
NUM_PARSED_FIELDS = 17

NODE_ID_MASK = 0xFFFFFF
MAX_MESSAGE_BYTES = 1 << 31   # IBTA's largest message; a RETH asking more is refused


def _crc_state_after_ff8() -> int:
    crc = 0xFFFFFFFF
    for _ in range(8):
        crc = (crc >> 8) ^ int(CRC32_TABLE[0, (crc ^ 0xFF) & 0xFF])
    return crc


# CRC state after the 8 x 0xFF bytes that stand for the (absent) IB LRH in the ICRC pseudo-header.
_ICRC_SEED = _crc_state_after_ff8()


# ---------------------------------------------------------------------------------------------
# Byte helpers (big-endian on the wire).

@njit(cache=True, inline="always")
def _wr_be(frame: np.ndarray, off: int, v: int, nbytes: int) -> None:
    for k in range(nbytes):
        frame[off + nbytes - 1 - k] = (v >> (8 * k)) & 0xFF


@njit(cache=True, inline="always")
def _rd_be(frame: np.ndarray, off: int, nbytes: int) -> int:
    v = np.int64(0)
    for k in range(nbytes):
        v = (v << 8) | np.int64(frame[off + k])
    return v


@njit(cache=True, inline="always")
def _le32(frame: np.ndarray, i: int) -> int:
    return (np.int64(frame[i]) | (np.int64(frame[i + 1]) << 8)
            | (np.int64(frame[i + 2]) << 16) | (np.int64(frame[i + 3]) << 24))


@njit(cache=True, inline="always")
def _crc_block16(crc: int, w0: int, w1: int, w2: int, w3: int) -> int:
    a = crc ^ w0
    t = CRC32_TABLE
    return (np.int64(t[15, a & 0xFF]) ^ np.int64(t[14, (a >> 8) & 0xFF])
            ^ np.int64(t[13, (a >> 16) & 0xFF]) ^ np.int64(t[12, (a >> 24) & 0xFF])
            ^ np.int64(t[11, w1 & 0xFF]) ^ np.int64(t[10, (w1 >> 8) & 0xFF])
            ^ np.int64(t[9, (w1 >> 16) & 0xFF]) ^ np.int64(t[8, (w1 >> 24) & 0xFF])
            ^ np.int64(t[7, w2 & 0xFF]) ^ np.int64(t[6, (w2 >> 8) & 0xFF])
            ^ np.int64(t[5, (w2 >> 16) & 0xFF]) ^ np.int64(t[4, (w2 >> 24) & 0xFF])
            ^ np.int64(t[3, w3 & 0xFF]) ^ np.int64(t[2, (w3 >> 8) & 0xFF])
            ^ np.int64(t[1, (w3 >> 16) & 0xFF]) ^ np.int64(t[0, (w3 >> 24) & 0xFF]))


@njit(cache=True, inline="always")
def _has_reth(opcode: int) -> bool:
    return opcode == 0x06 or opcode == 0x0A or opcode == 0x26 or opcode == 0x2A


@njit(cache=True, inline="always")
def _valid_opcode(opcode: int) -> bool:
    return (opcode & 0xDF) in (0x06, 0x07, 0x08, 0x0A) or _ext_bytes(opcode) > 0


@njit(cache=True, inline="always")
def _ext_bytes(opcode: int) -> int:
    """Extension-header bytes after the BTH of the reliable-transport opcodes (0: none of
    them): ACKNOWLEDGE/AETH, CNP/16 reserved, UE WRITE/PLH, UE ACK/AETH+SACKH."""
    if opcode == 0x11:
        return 4
    if opcode == 0x81:
        return 16
    if opcode == 0xC0:
        return 20
    if opcode == 0xC1:
        return 24
    return 0


# ---------------------------------------------------------------------------------------------
# Hot path.

@njit(cache=True)
def write_roce_headers(frame, src_node, dst_node, ev, opcode, dest_qp, psn, ack_req,
                       reth_va, reth_rkey, reth_dma_len, payload_len, ip_id, payload_stored=True):
    """Write Eth/IPv4/UDP/BTH(/RETH) for a frame carrying ``payload_len`` bytes.

    Returns the payload offset, or -1 (nothing written) if the slot is too small for the whole
    frame (for its headers alone when not ``payload_stored``: see ``write_bth_headers``).
    IP/UDP lengths count payload, pad and ICRC; the IP checksum and ICRC are left to
    ``finalize_roce_frame`` so the caller can copy the payload in between.
    """
    op = np.int64(opcode) & 0xFF
    reth = _has_reth(op)
    off = write_bth_headers(frame, src_node, dst_node, ev, op, dest_qp, psn, ack_req,
                            _RETH_BYTES if reth else 0, payload_len, ip_id, 0x02, payload_stored)
    if off < 0 or not reth:
        return off
    _wr_be(frame, _RETH + 0, np.int64(reth_va), 8)
    _wr_be(frame, _RETH + 8, np.int64(reth_rkey) & 0xFFFFFFFF, 4)
    _wr_be(frame, _RETH + 12, np.int64(reth_dma_len) & 0xFFFFFFFF, 4)
    return _RETH + _RETH_BYTES


@njit(cache=True)
def write_bth_headers(frame, src_node, dst_node, ev, opcode, dest_qp, psn, ack_req, ext_bytes,
                      payload_len, ip_id, tos, payload_stored=True):
    """Write Eth/IPv4 (with ``tos``)/UDP/BTH for a frame whose BTH is followed by
    ``ext_bytes`` of extension headers (written by the caller at offset 54) and
    ``payload_len`` payload bytes. Returns the offset right after the extension headers, or -1
    (nothing written) if the frame does not fit the slot. A slot that does not store the
    payload (``payload_stored`` false: a header slot, see ``nic_emulator.payload``) must hold the
    headers only; the lengths still count the whole payload."""
    src = np.int64(src_node) & NODE_ID_MASK
    dst = np.int64(dst_node) & NODE_ID_MASK
    op = np.int64(opcode) & 0xFF
    plen = np.int64(payload_len)
    pad = (4 - plen % 4) % 4
    l4_hdr = _UDP_BYTES + _BTH_BYTES + ext_bytes
    ip_len = _IPV4_BYTES + l4_hdr + plen + pad + _ICRC_BYTES
    stored = ip_len if payload_stored else _IPV4_BYTES + l4_hdr
    if plen < 0 or _ETH_BYTES + stored > frame.shape[0]:
        return -1
    # Ethernet II
    frame[0] = 0x02
    frame[1] = 0
    frame[2] = 0
    _wr_be(frame, 3, dst, 3)
    frame[6] = 0x02
    frame[7] = 0
    frame[8] = 0
    _wr_be(frame, 9, src, 3)
    frame[12] = 0x08
    frame[13] = 0x00
    # IPv4: version 4, IHL 5, TOS (data: ECT(0)), DF, TTL 64, UDP; checksum in finalize
    frame[_IP + 0] = 0x45
    frame[_IP + 1] = tos
    _wr_be(frame, _IP + 2, ip_len, 2)
    _wr_be(frame, _IP + 4, np.int64(ip_id) & 0xFFFF, 2)
    frame[_IP + 6] = 0x40
    frame[_IP + 7] = 0x00
    frame[_IP + 8] = 64
    frame[_IP + 9] = 17
    frame[_IP + 10] = 0
    frame[_IP + 11] = 0
    frame[_IP + 12] = 10
    _wr_be(frame, _IP + 13, src, 3)
    frame[_IP + 16] = 10
    _wr_be(frame, _IP + 17, dst, 3)
    # UDP: sport = entropy value, checksum 0 (allowed by RoCEv2)
    _wr_be(frame, _UDP + 0, np.int64(ev) & 0xFFFF, 2)
    _wr_be(frame, _UDP + 2, _ROCE_PORT, 2)
    _wr_be(frame, _UDP + 4, ip_len - _IPV4_BYTES, 2)
    frame[_UDP + 6] = 0
    frame[_UDP + 7] = 0
    # BTH
    frame[_BTH + 0] = op
    frame[_BTH + 1] = pad << 4          # SE=0, M=0, PadCnt, TVer=0
    frame[_BTH + 2] = 0xFF              # P_Key 0xFFFF
    frame[_BTH + 3] = 0xFF
    frame[_BTH + 4] = 0                 # resv8a
    _wr_be(frame, _BTH + 5, np.int64(dest_qp) & 0xFFFFFF, 3)
    frame[_BTH + 8] = 0x80 if ack_req else 0
    _wr_be(frame, _BTH + 9, np.int64(psn) & 0xFFFFFF, 3)
    return _BTH + _BTH_BYTES + ext_bytes


@njit(cache=True)
def ipv4_checksum(frame, off):
    """RFC 791 header checksum of the IPv4 header at ``off``, its checksum field taken as zero.

    The caller guarantees that the ``4 * IHL`` header bytes are inside ``frame``.
    """
    n = (np.int64(frame[off]) & 0x0F) * 2
    s = np.int64(0)
    for k in range(n):
        if k != 5:
            s += (np.int64(frame[off + 2 * k]) << 8) | np.int64(frame[off + 2 * k + 1])
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


@njit(cache=True)
def compute_icrc(frame, frame_len):
    """RoCEv2 ICRC of a frame whose last 4 bytes hold the ICRC.

    CRC-32 over the IBTA pseudo-header: 8 x 0xFF, then the IP header with TOS, TTL and checksum
    set to 0xFF, the UDP header with checksum 0xFFFF, the BTH with resv8a 0xFF, then everything up
    to the ICRC. Returns the u32 that is stored little-endian in the last 4 bytes. The caller
    guarantees the headers lie inside ``frame_len``.
    """
    ihl4 = (np.int64(frame[_IP]) & 0x0F) * 4
    end = np.int64(frame_len) - _ICRC_BYTES
    if ihl4 == _IPV4_BYTES:
        # 8 x FF + 40 header bytes = three 16-byte blocks; masks OR'ed into little-endian words.
        crc = _crc_block16(np.int64(0xFFFFFFFF), 0xFFFFFFFF, 0xFFFFFFFF,
                           _le32(frame, _IP) | 0xFF00, _le32(frame, _IP + 4))
        crc = _crc_block16(crc, _le32(frame, _IP + 8) | 0xFFFF00FF, _le32(frame, _IP + 12),
                           _le32(frame, _IP + 16), _le32(frame, _UDP))
        crc = _crc_block16(crc, _le32(frame, _UDP + 4) | 0xFFFF0000, _le32(frame, _BTH),
                           _le32(frame, _BTH + 4) | 0xFF, _le32(frame, _BTH + 8))
        crc = crc32_update(crc, frame, _BTH + _BTH_BYTES, end)
    else:
        crc = np.int64(_ICRC_SEED)
        udp = _IP + ihl4
        bth = udp + _UDP_BYTES
        for j in range(_IP, bth + _BTH_BYTES):
            b = np.int64(frame[j])
            r = j - _IP
            if r == 1 or r == 8 or r == 10 or r == 11 or j == udp + 6 or j == udp + 7 \
                    or j == bth + 4:
                b = 0xFF
            crc = (crc >> 8) ^ np.int64(CRC32_TABLE[0, (crc ^ b) & 0xFF])
        crc = crc32_update(crc, frame, bth + _BTH_BYTES, end)
    return crc ^ 0xFFFFFFFF


@njit(cache=True)
def finalize_roce_frame(frame, payload_off, payload_len):
    """Zero the pad, write the IPv4 checksum and the ICRC; return the frame length in bytes.

    Returns -1 (nothing written) if the frame does not fit in the slot.
    """
    total = finalize_roce_frame_no_icrc(frame, payload_off, payload_len)
    if total > 0:
        write_icrc(frame, total)
    return total


@njit(cache=True)
def finalize_roce_frame_no_icrc(frame, payload_off, payload_len, payload_stored=True):
    """As ``finalize_roce_frame`` but leave the ICRC to ``write_icrc``: the engine defers it
    until the frame's bytes are observed (capture, another worker, a handler's view), since the
    CRC is most of the cost of building a 1 KiB frame. A header slot (not ``payload_stored``)
    gets its IPv4 checksum only: its pad and ICRC are past its end, never observed."""
    plen = np.int64(payload_len)
    pad = (4 - plen % 4) % 4
    end = np.int64(payload_off) + plen + pad
    total = end + _ICRC_BYTES
    if plen < 0 or payload_off < _BTH + _BTH_BYTES \
            or (total if payload_stored else payload_off) > frame.shape[0]:
        return -1
    if payload_stored:
        for k in range(end - pad, end):
            frame[k] = 0
    c = ipv4_checksum(frame, _IP)
    frame[_IP + 10] = c >> 8
    frame[_IP + 11] = c & 0xFF
    return total


@njit(cache=True)
def write_icrc(frame, total):
    """Compute the ICRC of a finalised frame of ``total`` bytes into its last 4 bytes."""
    end = total - _ICRC_BYTES
    icrc = compute_icrc(frame, total)
    frame[end] = icrc & 0xFF
    frame[end + 1] = (icrc >> 8) & 0xFF
    frame[end + 2] = (icrc >> 16) & 0xFF
    frame[end + 3] = (icrc >> 24) & 0xFF


@njit(cache=True)
def parse_frame(frame, frame_len, check_icrc, out, payload_stored=True):
    """Validate a frame and fill ``out[P_*]``; return ``drops.OK`` or a wire drop code.

    Reads only ``frame[:min(frame_len, len(frame))]`` whatever the content; ``out`` must have at
    least ``NUM_PARSED_FIELDS`` int64 entries. Trailing bytes after the IP datagram (Ethernet
    padding) are ignored. The UDP checksum is not verified (RoCEv2 senders put 0; the ICRC covers
    the datagram). A header slot (not ``payload_stored``: ``HEADER_SLOT_BYTES`` holding a frame
    this engine built, its payload not stored) is read up to its end, the ICRC unchecked.
    """
    n = np.int64(frame_len)
    if n < 0 or n < _ETH_BYTES:
        return drops.TRUNCATED
    if n > frame.shape[0] and (payload_stored or check_icrc or frame.shape[0] < HEADER_SLOT_BYTES):
        return drops.TRUNCATED
    if frame[_ETH_TYPE] != 0x08 or frame[_ETH_TYPE + 1] != 0x00:
        return drops.NOT_IPV4
    if n < _IP + _IPV4_BYTES:
        return drops.TRUNCATED
    vihl = np.int64(frame[_IP])
    if (vihl >> 4) != 4:
        return drops.NOT_IPV4
    ihl4 = (vihl & 0x0F) * 4
    if ihl4 < _IPV4_BYTES:
        return drops.BAD_IP_HEADER
    if n < _IP + ihl4:
        return drops.TRUNCATED
    if ipv4_checksum(frame, _IP) != _rd_be(frame, _IP + 10, 2):
        return drops.BAD_IP_CHECKSUM
    if (_rd_be(frame, _IP + 6, 2) & 0x3FFF) != 0:      # MF flag or fragment offset: a fragment
        return drops.BAD_IP_HEADER
    ip_len = _rd_be(frame, _IP + 2, 2)
    if ip_len < ihl4:
        return drops.BAD_IP_LENGTH
    if _IP + ip_len > n:
        return drops.TRUNCATED
    if frame[_IP + 9] != 17:
        return drops.NOT_UDP
    udp = _IP + ihl4
    udp_len = ip_len - ihl4
    if udp_len < _UDP_BYTES or _rd_be(frame, udp + 4, 2) != udp_len:
        return drops.BAD_UDP_LENGTH
    if _rd_be(frame, udp + 2, 2) != _ROCE_PORT:
        return drops.NOT_ROCE
    bth = udp + _UDP_BYTES
    if udp_len < _UDP_BYTES + _BTH_BYTES + _ICRC_BYTES:
        return drops.BAD_BTH
    op = np.int64(frame[bth])
    if not _valid_opcode(op):
        return drops.UNKNOWN_OPCODE
    b1 = np.int64(frame[bth + 1])
    if (b1 & 0x0F) != 0:                                # TVer must be 0
        return drops.BAD_BTH
    reth = _has_reth(op)
    ext = _ext_bytes(op)
    payload_off = bth + _BTH_BYTES + (_RETH_BYTES if reth else ext)
    frame_end = _IP + ip_len
    payload_len = frame_end - _ICRC_BYTES - payload_off - ((b1 >> 4) & 0x3)
    if payload_len < 0 or (ext > 0 and op != 0xC0 and payload_len != 0):
        return drops.BAD_BTH          # transport control frames carry no payload
    if check_icrc:
        icrc = (np.int64(frame[frame_end - 4]) | (np.int64(frame[frame_end - 3]) << 8)
                | (np.int64(frame[frame_end - 2]) << 16) | (np.int64(frame[frame_end - 1]) << 24))
        if compute_icrc(frame, frame_end) != icrc:
            return drops.BAD_ICRC
    placed = reth or op == 0xC0       # the UE PLH starts with RETH's three fields
    dma_len = _rd_be(frame, bth + _BTH_BYTES + 12, 4) if placed else np.int64(0)
    only = (op & 0x1F) == 0x0A  # IBTA: ONLY carries the whole message, FIRST leaves some
    if reth and (dma_len > MAX_MESSAGE_BYTES or (dma_len != payload_len if only
                                                 else dma_len <= payload_len)):
        return drops.BAD_DMA_LENGTH
    if op == 0xC0 and (dma_len > MAX_MESSAGE_BYTES or dma_len < payload_len):
        return drops.BAD_DMA_LENGTH
    tos = np.int64(frame[_IP + 1])
    out[P_SRC_NODE] = _rd_be(frame, _IP + 12, 4) & NODE_ID_MASK
    out[P_DST_NODE] = _rd_be(frame, _IP + 16, 4) & NODE_ID_MASK
    out[P_EV] = _rd_be(frame, udp, 2)
    out[P_OPCODE] = op
    out[P_DEST_QP] = _rd_be(frame, bth + 5, 3)
    out[P_PSN] = _rd_be(frame, bth + 9, 3)
    out[P_ACK_REQ] = np.int64(frame[bth + 8]) >> 7
    out[P_EXT_OFF] = bth + _BTH_BYTES
    if op == 0xC0:
        out[P_AUX] = _rd_be(frame, bth + _BTH_BYTES + 16, 4)
    elif ext > 0:
        out[P_AUX] = _rd_be(frame, bth + _BTH_BYTES, 4)
    else:
        out[P_AUX] = 0
    if placed:
        out[P_RETH_VA] = _rd_be(frame, bth + _BTH_BYTES, 8)
        out[P_RETH_RKEY] = _rd_be(frame, bth + _BTH_BYTES + 8, 4)
        out[P_RETH_DMA_LEN] = dma_len
        out[P_HAS_RETH] = 1
    else:
        out[P_RETH_VA] = 0
        out[P_RETH_RKEY] = 0
        out[P_RETH_DMA_LEN] = 0
        out[P_HAS_RETH] = 0
    out[P_PAYLOAD_OFF] = payload_off
    out[P_PAYLOAD_LEN] = payload_len
    out[P_ECN] = tos & 0x3
    out[P_TTL] = np.int64(frame[_IP + 8])
    return drops.OK


# ---------------------------------------------------------------------------------------------
# Python conveniences (tools and tests; not for the hot path).

def node_mac(n: int) -> str:
    """MAC address of node ``n``: ``02:00:00`` + the 24-bit id, big-endian."""
    _check_node(n)
    return "02:00:00:%02x:%02x:%02x" % ((n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF)


def node_ip(n: int) -> str:
    """IPv4 address of node ``n``: ``10.`` + the 24-bit id, big-endian."""
    _check_node(n)
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF}"


def mac_node(mac: str) -> int:
    """Inverse of ``node_mac``."""
    parts = mac.split(":")
    if len(parts) != 6 or [p.lower() for p in parts[:3]] != ["02", "00", "00"]:
        raise WireError(f"{mac!r} is not a spin node MAC (02:00:00:NN:NN:NN)")
    return int("".join(parts[3:]), 16)


def ip_node(ip: str) -> int:
    """Inverse of ``node_ip``."""
    parts = ip.split(".")
    if len(parts) != 4 or parts[0] != "10":
        raise WireError(f"{ip!r} is not a spin node address (10.N.N.N)")
    a, b, c = (int(p) for p in parts[1:])
    return (a << 16) | (b << 8) | c


def _check_node(n: int) -> None:
    if not 0 <= n <= NODE_ID_MASK:
        raise WireError(f"node id {n} outside 0..{NODE_ID_MASK}")


def _check_range(name: str, v: int, bits: int) -> None:
    if not 0 <= v < (1 << bits):
        raise WireError(f"{name}={v} outside 0..{(1 << bits) - 1}")


@dataclass(frozen=True)
class ParsedFrame:
    """A validated RoCEv2 RDMA WRITE frame, as ``parse`` returns it."""

    src_node: int
    dst_node: int
    ev: int
    opcode: int
    dest_qp: int
    psn: int
    ack_req: bool
    reth: tuple[int, int, int] | None      # (va, rkey, dma_len), on FIRST/ONLY only
    payload: bytes
    payload_off: int
    ecn: int
    ttl: int


def build_frame(src_node: int, dst_node: int, ev: int, opcode: int, dest_qp: int, psn: int,
                payload: bytes, ack_req: bool = False,
                reth: tuple[int, int, int] | None = None, ip_id: int = 0) -> bytes:
    """Build one complete frame (same bytes as the Numba path). ``reth`` is required exactly on
    FIRST/ONLY opcodes."""
    _check_node(src_node)
    _check_node(dst_node)
    _check_range("ev", ev, 16)
    _check_range("dest_qp", dest_qp, 24)
    _check_range("psn", psn, 24)
    _check_range("ip_id", ip_id, 16)
    if opcode not in H.VALID_OPCODES:
        raise WireError(f"opcode {opcode:#x} is not an RDMA WRITE opcode; valid: "
                        f"{sorted(hex(o) for o in H.VALID_OPCODES)}")
    needs_reth = opcode in H.RETH_OPCODES
    if needs_reth != (reth is not None):
        raise WireError(f"opcode {opcode:#x} {'needs' if needs_reth else 'takes no'} RETH")
    va, rkey, dma_len = reth if reth is not None else (0, 0, 0)
    _check_range("reth va", va, 64)
    _check_range("reth rkey", rkey, 32)
    _check_range("reth dma_len", dma_len, 32)
    va_signed = va - (1 << 64) if va >= (1 << 63) else va
    plen = len(payload)
    frame = np.zeros(H.roce_frame_len(plen, needs_reth), dtype=np.uint8)
    off = write_roce_headers(frame, src_node, dst_node, ev, opcode, dest_qp, psn, bool(ack_req),
                             va_signed, rkey, dma_len, plen, ip_id)
    if off < 0:
        raise WireError(f"payload of {plen} B does not fit in a frame")
    frame[off:off + plen] = np.frombuffer(payload, dtype=np.uint8)
    total = finalize_roce_frame(frame, off, plen)
    return frame[:total].tobytes()


def parse(frame: bytes | bytearray | memoryview | np.ndarray,
          check_icrc: bool = True) -> ParsedFrame:
    """Validate and parse one frame; raises ``WireError`` naming the drop reason."""
    buf = np.frombuffer(bytes(frame), dtype=np.uint8) if not isinstance(frame, np.ndarray) \
        else np.ascontiguousarray(frame, dtype=np.uint8)
    out = np.zeros(NUM_PARSED_FIELDS, dtype=np.int64)
    code = parse_frame(buf, buf.shape[0], check_icrc, out)
    if code != drops.OK:
        raise WireError(f"bad frame ({buf.shape[0]} B): "
                        f"{drops.DROP_REASON_NAMES.get(code, code)}")
    o = [int(x) for x in out]
    off, plen = o[P_PAYLOAD_OFF], o[P_PAYLOAD_LEN]
    return ParsedFrame(
        src_node=o[P_SRC_NODE], dst_node=o[P_DST_NODE], ev=o[P_EV], opcode=o[P_OPCODE],
        dest_qp=o[P_DEST_QP], psn=o[P_PSN], ack_req=bool(o[P_ACK_REQ]),
        reth=(o[P_RETH_VA] & 0xFFFF_FFFF_FFFF_FFFF, o[P_RETH_RKEY], o[P_RETH_DMA_LEN])
        if o[P_HAS_RETH] else None,
        payload=buf[off:off + plen].tobytes(), payload_off=off, ecn=o[P_ECN], ttl=o[P_TTL])
