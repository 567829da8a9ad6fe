"""The RoCEv2 header stack, declared once: Ethernet II / IPv4 / UDP / BTH / RETH.

Field names follow the IBTA spec (BTH ``resv8a``, ``dest_qp``...) and RFC 791/768. Defaults are
the values spin puts on the wire (IPv4 TOS 0x02 = ECT(0), DF, TTL 64; BTH P_Key 0xFFFF).
"""

from __future__ import annotations

from spin.wire.fields import Field, HeaderFormat

ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
ROCE_UDP_PORT = 4791

# BTH opcodes of RDMA WRITE (IBTA vol. 1, table 38): RC transport 0x00-0x1F, UC 0x20-0x3F.
OP_RC_RDMA_WRITE_FIRST = 0x06
OP_RC_RDMA_WRITE_MIDDLE = 0x07
OP_RC_RDMA_WRITE_LAST = 0x08
OP_RC_RDMA_WRITE_ONLY = 0x0A
OP_UC_RDMA_WRITE_FIRST = 0x26
OP_UC_RDMA_WRITE_MIDDLE = 0x27
OP_UC_RDMA_WRITE_LAST = 0x28
OP_UC_RDMA_WRITE_ONLY = 0x2A
# Short aliases: spin sends RC opcodes.
OP_WRITE_FIRST = OP_RC_RDMA_WRITE_FIRST
OP_WRITE_MIDDLE = OP_RC_RDMA_WRITE_MIDDLE
OP_WRITE_LAST = OP_RC_RDMA_WRITE_LAST
OP_WRITE_ONLY = OP_RC_RDMA_WRITE_ONLY

VALID_OPCODES = frozenset({0x06, 0x07, 0x08, 0x0A, 0x26, 0x27, 0x28, 0x2A})
RETH_OPCODES = frozenset({0x06, 0x0A, 0x26, 0x2A})

# Reliable-transport frames (nic_emulator.transports). ACKNOWLEDGE carries an AETH (IBTA
# vol. 1 9.3.5); the RoCEv2 congestion notification packet (CNP, IBTA RoCEv2 annex A17.9.3)
# has BECN set in the BTH and 16 reserved bytes. 0xC0-0xFF are manufacturer-specific opcodes
# (IBTA table 38): spin's Ultra-Ethernet-style transport uses 0xC0 for a sprayed WRITE packet
# (a PLH on every packet, so it can be placed in any order) and 0xC1 for its selective ACK
# or NACK (AETH then SACKH).
OP_RC_ACKNOWLEDGE = 0x11
OP_CNP = 0x81
OP_UE_WRITE = 0xC0
OP_UE_ACK = 0xC1
TRANSPORT_OPCODES = frozenset({OP_RC_ACKNOWLEDGE, OP_CNP, OP_UE_WRITE, OP_UE_ACK})
BTH_BECN = 0x40          # in BTH resv8a (FECN 0x80, BECN 0x40), as scapy's BTH names them
# AETH syndrome (IBTA 9.7.5.1.1): bits 6-5 = 00 ACK (low 5 bits: credits, 0x1F = none
# advertised), 11 NAK (low 5 bits: NAK code, 0 = PSN sequence error)
AETH_ACK = 0x1F
AETH_NAK_PSN_SEQUENCE = 0x60
SACK_FLAG_ECN = 0x1      # the acknowledged packet arrived marked Congestion Experienced

IPV4_TOS_ECT0 = 0x02
IPV4_FLAG_DF = 0x2
IPV4_TTL = 64
BTH_PKEY_DEFAULT = 0xFFFF

ETH = HeaderFormat("ETH", [
    Field("dst", 48),
    Field("src", 48),
    Field("type", 16, ETHERTYPE_IPV4),
])

IPV4 = HeaderFormat("IPV4", [
    Field("version", 4, 4),
    Field("ihl", 4, 5),
    Field("tos", 8, IPV4_TOS_ECT0),
    Field("total_len", 16),
    Field("id", 16),
    Field("flags", 3, IPV4_FLAG_DF),
    Field("frag", 13),
    Field("ttl", 8, IPV4_TTL),
    Field("proto", 8, IPPROTO_UDP),
    Field("csum", 16),
    Field("src", 32),
    Field("dst", 32),
])

UDP = HeaderFormat("UDP", [
    Field("sport", 16),
    Field("dport", 16, ROCE_UDP_PORT),
    Field("len", 16),
    Field("csum", 16),
])

BTH = HeaderFormat("BTH", [
    Field("opcode", 8),
    Field("se", 1),
    Field("m", 1),
    Field("pad_cnt", 2),
    Field("tver", 4),
    Field("pkey", 16, BTH_PKEY_DEFAULT),
    Field("resv8a", 8),
    Field("dest_qp", 24),
    Field("ack_req", 1),
    Field("resv7", 7),
    Field("psn", 24),
])

RETH = HeaderFormat("RETH", [
    Field("va", 64),
    Field("rkey", 32),
    Field("dma_len", 32),
])

AETH = HeaderFormat("AETH", [
    Field("syndrome", 8),
    Field("msn", 24),
])

CNP_PAD = HeaderFormat("CNP_PAD", [      # the 16 reserved bytes that follow a CNP's BTH
    Field("reserved1", 64),
    Field("reserved2", 64),
])

# Placement header of a UE WRITE packet: RETH's fields for the whole message (target VA, R_Key,
# message length) plus the PSN of the message's first packet, so the receiver places any packet
# at va + (psn - msg_psn) * MTU without having seen the others.
PLH = HeaderFormat("PLH", [
    Field("va", 64),
    Field("rkey", 32),
    Field("msg_len", 32),
    Field("msg_psn", 32),
])

# Selective-ACK header of a UE ACK (after its AETH): the cumulative PSN (every earlier packet
# arrived), a 64-packet bitmap starting at ``sack_psn`` (bit i: PSN sack_psn + i arrived), and
# the entropy value and ECN of the packet that triggered the ACK (REPS recycles unmarked EVs).
SACKH = HeaderFormat("SACKH", [
    Field("cum_psn", 32),
    Field("sack_psn", 32),
    Field("bitmap", 64),
    Field("ev", 16),
    Field("flags", 16),
])

ETH_BYTES = ETH.size_bytes            # 14
IPV4_BYTES = IPV4.size_bytes          # 20 (no options)
UDP_BYTES = UDP.size_bytes            # 8
BTH_BYTES = BTH.size_bytes            # 12
RETH_BYTES = RETH.size_bytes          # 16
AETH_BYTES = AETH.size_bytes          # 4
CNP_PAD_BYTES = CNP_PAD.size_bytes    # 16
PLH_BYTES = PLH.size_bytes            # 20
SACKH_BYTES = SACKH.size_bytes        # 20
ICRC_BYTES = 4
ROCE_HEADER_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES + BTH_BYTES   # 54

# Byte offsets of each header in a frame spin builds (IPv4 without options).
IP_OFF = ETH_BYTES
UDP_OFF = IP_OFF + IPV4_BYTES
BTH_OFF = UDP_OFF + UDP_BYTES
RETH_OFF = BTH_OFF + BTH_BYTES
# ... and of the fields forwarding and load balancing read: the flow's 5-tuple, where the
# destination address's low 24 bits are the node id (``roce.NODE_ID_MASK``).
IP_PROTO_OFF = IP_OFF + IPV4.offsets["proto"]     # 23
IP_SRC_OFF = IP_OFF + IPV4.offsets["src"]         # 26
IP_DST_OFF = IP_OFF + IPV4.offsets["dst"]         # 30
UDP_SPORT_OFF = UDP_OFF + UDP.offsets["sport"]    # 34: source port, then destination port
UDP_DPORT_OFF = UDP_OFF + UDP.offsets["dport"]    # 36
UDP_LEN_OFF = UDP_OFF + UDP.offsets["len"]        # 38


def pad_count(payload_len: int) -> int:
    """BTH PadCnt: bytes appended so that payload + pad is a multiple of 4."""
    return (4 - payload_len % 4) % 4


def roce_frame_len(payload_len: int, has_reth: bool) -> int:
    """Total frame bytes (no Ethernet FCS) for a RoCEv2 frame carrying ``payload_len`` bytes."""
    return (ROCE_HEADER_BYTES + (RETH_BYTES if has_reth else 0) + payload_len
            + pad_count(payload_len) + ICRC_BYTES)

# Room of a header slot, a frame slot that stores no payload (``nic_emulator.payload``): the
# longest headers spin writes or parses (Ethernet 14, IPv4 with options 60, UDP 8, BTH 12, RETH or
# PLH up to 20), their ICRC when trimmed, a PFC frame.
HEADER_SLOT_BYTES = 128
