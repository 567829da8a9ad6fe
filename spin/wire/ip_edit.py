"""In-flight header edits a switch makes: ECN marking, TTL decrement, trimming, and the IEEE
802.1Qbb priority-flow-control (PFC) frames of lossless Ethernet.

ECN and TTL live in IP fields that the RoCEv2 ICRC masks out (TOS, TTL, checksum), so editing
them keeps the ICRC valid; the IPv4 checksum is updated incrementally (RFC 1624). Trimming
changes lengths, so the caller must have the ICRC rewritten (``ICRC_PENDING``).
"""
import numpy as np

from spin.wire import headers as H
from spin.jit import njit

_ETH_TYPE = 12
_IP = H.IP_OFF
_UDP = H.UDP_OFF
_BTH = H.BTH_OFF
_IP_TTL = _IP + H.IPV4.offsets["ttl"]
_IP_CSUM = _IP + H.IPV4.offsets["csum"]
if H.IPV4.offsets["tos"] != 1:
    raise ImportError("spin.wire.ip_edit assumes the IPv4 TOS byte at offset 1")

ECN_MASK = 0x03
ECN_CE = 0x03

# IEEE 802.3 Annex 31D / 802.1Qbb: MAC control frame, opcode 0x0101 (priority-based pause)
ETHERTYPE_MAC_CONTROL = 0x8808
PFC_OPCODE = 0x0101
PFC_FRAME_BYTES = 60          # minimum Ethernet frame without FCS (payload padded to 46 B)
PFC_DST_MAC = (0x01, 0x80, 0xC2, 0x00, 0x00, 0x01)
PAUSE_QUANTUM_BITS = 512


@njit(cache=True, inline="always", _nrt=False)
def _be16(frame, off):
    return (np.int64(frame[off]) << 8) | np.int64(frame[off + 1])


@njit(cache=True, _nrt=False)
def is_ipv4(frame, length):
    return length >= _UDP and frame[_ETH_TYPE] == 0x08 and frame[_ETH_TYPE + 1] == 0x00 \
        and (frame[_IP] >> 4) == 4


@njit(cache=True, _nrt=False)
def _csum_replace16(frame, old16, new16):
    """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')."""
    hc = _be16(frame, _IP_CSUM)
    s = (~hc & 0xFFFF) + (~old16 & 0xFFFF) + (new16 & 0xFFFF)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    s = ~s & 0xFFFF
    frame[_IP_CSUM] = (s >> 8) & 0xFF
    frame[_IP_CSUM + 1] = s & 0xFF


@njit(cache=True, _nrt=False)
def mark_ce(frame):
    """Mark Congestion Experienced on an ECN-capable IPv4 frame. Returns True if it was marked
    now (frames that are not ECN-capable, or already marked, are left alone)."""
    tos = np.int64(frame[_IP + 1])
    ecn = tos & ECN_MASK
    if ecn == 0 or ecn == ECN_CE:
        return False
    old = (np.int64(frame[_IP]) << 8) | tos
    new_tos = tos | ECN_CE
    frame[_IP + 1] = new_tos
    _csum_replace16(frame, old, (np.int64(frame[_IP]) << 8) | new_tos)
    return True


@njit(cache=True, _nrt=False)
def decrement_ttl(frame):
    """Decrement the IPv4 TTL; returns False (frame untouched) when it would reach zero."""
    ttl = np.int64(frame[_IP_TTL])
    if ttl <= 1:
        return False
    proto = np.int64(frame[_IP_TTL + 1])
    frame[_IP_TTL] = ttl - 1
    _csum_replace16(frame, (ttl << 8) | proto, ((ttl - 1) << 8) | proto)
    return True


@njit(cache=True, _nrt=False)
def set_dscp(frame, dscp):
    tos = np.int64(frame[_IP + 1])
    new_tos = ((np.int64(dscp) & 0x3F) << 2) | (tos & ECN_MASK)
    old = (np.int64(frame[_IP]) << 8) | tos
    frame[_IP + 1] = new_tos
    _csum_replace16(frame, old, (np.int64(frame[_IP]) << 8) | new_tos)


@njit(cache=True, _nrt=False)
def dscp_of(frame):
    return np.int64(frame[_IP + 1]) >> 2


@njit(cache=True, _nrt=False)
def trim_roce_frame(frame, length, dscp):
    """Cut a RoCEv2 frame to its headers (Eth/IPv4/UDP/BTH, plus RETH on FIRST/ONLY and the PLH
    of a UE WRITE) and an ICRC,
    as NDP and Ultra Ethernet switches do, and mark it with the trimmed-frame ``dscp``. Returns
    the new length, or -1 when the frame is not a trimmable RoCE frame. The caller must have the
    ICRC rewritten before the bytes are observed."""
    if length < _BTH + H.BTH_BYTES + H.ICRC_BYTES or not is_ipv4(frame, length):
        return -1
    if (frame[_IP] & 0x0F) != 5 or frame[_IP + 9] != 17 or _be16(frame, _UDP + 2) != H.ROCE_UDP_PORT:
        return -1
    op = np.int64(frame[_BTH]) & 0xFF
    hdr = _BTH + H.BTH_BYTES
    if op == 0x06 or op == 0x0A or op == 0x26 or op == 0x2A:
        hdr += H.RETH_BYTES
    elif op == H.OP_UE_WRITE:
        hdr += H.PLH_BYTES        # a trimmed UE packet keeps its placement: the NACK names it
    elif op == H.OP_RC_ACKNOWLEDGE or op == H.OP_CNP or op == H.OP_UE_ACK:
        return -1                 # control frames carry no payload to cut
    new_len = hdr + H.ICRC_BYTES
    if new_len >= length:
        return -1
    old_ip_len = _be16(frame, _IP + 2)
    ip_len = new_len - _IP
    frame[_IP + 2] = (ip_len >> 8) & 0xFF
    frame[_IP + 3] = ip_len & 0xFF
    _csum_replace16(frame, old_ip_len, ip_len)
    udp_len = ip_len - H.IPV4_BYTES
    frame[_UDP + 4] = (udp_len >> 8) & 0xFF
    frame[_UDP + 5] = udp_len & 0xFF
    frame[_BTH + 1] = frame[_BTH + 1] & 0xCF      # pad count 0: no payload left
    set_dscp(frame, dscp)
    return new_len


@njit(cache=True, _nrt=False)
def is_header_only(frame, length):
    """A transport control frame without payload: RoCE ACKNOWLEDGE (ACK/NAK), CNP, or an Ultra
    Ethernet ACK (which also carries NACKs). Switches queue these ahead of data."""
    if length < _BTH + 1 or frame[_ETH_TYPE] != 0x08 or frame[_ETH_TYPE + 1] != 0x00:
        return False
    if (frame[_IP] & 0x0F) != 5 or frame[_IP + 9] != 17 or _be16(frame, _UDP + 2) != H.ROCE_UDP_PORT:
        return False
    op = np.int64(frame[_BTH]) & 0xFF
    return op == H.OP_RC_ACKNOWLEDGE or op == H.OP_CNP or op == H.OP_UE_ACK


@njit(cache=True, _nrt=False)
def is_pfc_frame(frame, length):
    return length >= 18 and frame[_ETH_TYPE] == 0x88 and frame[_ETH_TYPE + 1] == 0x08 \
        and frame[14] == 0x01 and frame[15] == 0x01


@njit(cache=True, _nrt=False)
def pfc_quanta(frame):
    """Pause time of priority 0 (untagged traffic) in 512-bit quanta, or -1 when the frame does
    not enable that class."""
    if (frame[17] & 0x01) == 0:
        return -1
    return _be16(frame, 18)


@njit(cache=True, _nrt=False)
def write_pfc_frame(frame, src_mac_id, quanta):
    """A PFC frame pausing priority 0 for ``quanta`` (0 resumes). Frames carry no VLAN tag, so
    all traffic is priority 0. Returns the frame length (60 B)."""
    for i in range(PFC_FRAME_BYTES):
        frame[i] = 0
    for i in range(6):
        frame[i] = PFC_DST_MAC[i]
    frame[6] = 0x02
    frame[7] = 0x01            # locally administered; 0x01 tells switch MACs from NIC MACs
    frame[8] = 0x00
    frame[9] = (src_mac_id >> 16) & 0xFF
    frame[10] = (src_mac_id >> 8) & 0xFF
    frame[11] = src_mac_id & 0xFF
    frame[12] = 0x88
    frame[13] = 0x08
    frame[14] = 0x01
    frame[15] = 0x01
    frame[16] = 0x00
    frame[17] = 0x01           # class-enable vector: priority 0
    frame[18] = (quanta >> 8) & 0xFF
    frame[19] = quanta & 0xFF
    return PFC_FRAME_BYTES


@njit(cache=True, _nrt=False)
def set_destination(frame, node):
    """Address an IPv4 frame to ``node`` (MAC 02:00:00:NN:NN:NN, IP 10.N.N.N) with the IPv4
    checksum updated. The ICRC covers the destination address: the caller must have it
    rewritten."""
    for k in range(3):
        b = np.int64((node >> (8 * (2 - k))) & 0xFF)
        frame[3 + k] = b
        off = _IP + 17 + k
        old = np.int64(frame[off])
        if old != b:
            # the byte sits in a 16-bit word with its neighbour: replace the whole word
            w = off - ((off - _IP) & 1)
            old16 = (np.int64(frame[w]) << 8) | np.int64(frame[w + 1])
            frame[off] = b
            _csum_replace16(frame, old16, (np.int64(frame[w]) << 8) | np.int64(frame[w + 1]))
