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

ETH_BYTES = ETH.size_bytes            # 14
IPV4_BYTES = IPV4.size_bytes          # 20 (no options)
UDP_BYTES = UDP.size_bytes            # 8
BTH_BYTES = BTH.size_bytes            # 12
RETH_BYTES = RETH.size_bytes          # 16
ICRC_BYTES = 4
ROCE_HEADER_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES + BTH_BYTES   # 54

# Byte offsets of each header in a frame spin builds (IPv4 without options).
IP_OFF = ETH_BYTES
UDP_OFF = IP_OFF + IPV4_BYTES
BTH_OFF = UDP_OFF + UDP_BYTES
RETH_OFF = BTH_OFF + BTH_BYTES


def pad_count(payload_len: int) -> int:
    """BTH PadCnt: bytes appended so that payload + pad is a multiple of 4."""
    return (4 - payload_len % 4) % 4


def roce_frame_len(payload_len: int, has_reth: bool) -> int:
    """Total frame bytes (no Ethernet FCS) for a RoCEv2 frame carrying ``payload_len`` bytes."""
    return (ROCE_HEADER_BYTES + (RETH_BYTES if has_reth else 0) + payload_len
            + pad_count(payload_len) + ICRC_BYTES)
