"""Wire formats: header declarations, RoCEv2 frame build/parse (Numba) and CRC-32.

The scapy mirror lives in ``spin.wire.scapy_layers`` and is imported only on demand, so importing
``spin.wire`` never imports scapy. The CRC-32 function is ``spin.wire.crc32.crc32`` (not re-exported
here, where its name would shadow the submodule).
"""

from spin.wire.fields import BitSlot, Field, HeaderFormat
from spin.wire.headers import (
    BTH, BTH_BYTES, ETH, ETH_BYTES, ETHERTYPE_IPV4, ICRC_BYTES, IPV4, IPV4_BYTES,
    OP_RC_RDMA_WRITE_FIRST, OP_RC_RDMA_WRITE_LAST, OP_RC_RDMA_WRITE_MIDDLE,
    OP_RC_RDMA_WRITE_ONLY, OP_UC_RDMA_WRITE_FIRST, OP_UC_RDMA_WRITE_LAST,
    OP_UC_RDMA_WRITE_MIDDLE, OP_UC_RDMA_WRITE_ONLY, OP_WRITE_FIRST, OP_WRITE_LAST,
    OP_WRITE_MIDDLE, OP_WRITE_ONLY, RETH, RETH_BYTES, RETH_OPCODES, ROCE_HEADER_BYTES,
    ROCE_UDP_PORT, UDP, UDP_BYTES, VALID_OPCODES, pad_count, roce_frame_len,
)

__all__ = [
    # declarations
    "BitSlot", "Field", "HeaderFormat", "ETH", "IPV4", "UDP", "BTH", "RETH",
    "ETH_BYTES", "IPV4_BYTES", "UDP_BYTES", "BTH_BYTES", "RETH_BYTES", "ICRC_BYTES",
    "ROCE_HEADER_BYTES", "ROCE_UDP_PORT", "ETHERTYPE_IPV4", "VALID_OPCODES", "RETH_OPCODES",
    "OP_RC_RDMA_WRITE_FIRST", "OP_RC_RDMA_WRITE_MIDDLE", "OP_RC_RDMA_WRITE_LAST",
    "OP_RC_RDMA_WRITE_ONLY", "OP_UC_RDMA_WRITE_FIRST", "OP_UC_RDMA_WRITE_MIDDLE",
    "OP_UC_RDMA_WRITE_LAST", "OP_UC_RDMA_WRITE_ONLY", "OP_WRITE_FIRST", "OP_WRITE_MIDDLE",
    "OP_WRITE_LAST", "OP_WRITE_ONLY", "pad_count", "roce_frame_len",
    # Numba hot path
    "write_roce_headers", "finalize_roce_frame", "compute_icrc", "ipv4_checksum", "parse_frame",
    "P_SRC_NODE", "P_DST_NODE", "P_EV", "P_OPCODE", "P_DEST_QP", "P_PSN", "P_ACK_REQ",
    "P_RETH_VA", "P_RETH_RKEY", "P_RETH_DMA_LEN", "P_PAYLOAD_OFF", "P_PAYLOAD_LEN", "P_ECN",
    "P_TTL", "P_HAS_RETH", "NUM_PARSED_FIELDS",
    # Python conveniences
    "ParsedFrame", "build_frame", "parse", "node_mac", "node_ip", "mac_node", "ip_node",
]

# the Numba hot path and its Python conveniences (spin.wire.roce: every name of __all__ not
# imported above), imported on first use: the declarations, and the drop reasons, need no
# Numba (importing it takes 0.2 s)
_FROM_ROCE = frozenset(__all__) - set(globals())


def __getattr__(name: str):
    if name in _FROM_ROCE:
        from spin.wire import roce
        return getattr(roce, name)
    raise AttributeError(f"module 'spin.wire' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _FROM_ROCE)
