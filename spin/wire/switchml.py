"""The SwitchML header as spin carries it: 8 bytes in the RETH virtual address of an RDMA WRITE.

SwitchML's UDP variant puts an 8-byte ``switchml_h`` (msg_type, size, job_number, tsi,
pool_index) between UDP and the data; its RDMA variant runs over RoCEv2 UC and keeps the slot
metadata in RoCE header fields. spin's NICs speak RoCEv2 only, so spin follows the RDMA
variant: every contribution is one RDMA WRITE ONLY packet whose RETH ``va`` field holds this
header and whose payload is the data alone (k = MTU/w elements of w bytes: int32 and float32
w = 4, float16 and bfloat16 w = 2, the big part of the frame). That
lets a worker's NIC send a chunk straight from host memory (``spin_put_from_host``, no copy
through NIC memory), and lets a switch read the header without touching the frame
(``spin_msg_addr``). Fields, most significant first (the VA is big-endian on the wire):

    msg_type:4   1 sum of int32, 2 sum of float32, 3 max of int32, 4 sum of float16,
                 5 sum of bfloat16 (both summed in float32 in the switch), 7 control (worker
                 NICs only)
    unused:4
    job:8        SwitchML's job_number: selects the job's slot range and tree in a switch
    pool_index:16  slot; the MSB selects the shadow set, as SwitchML's client does
    tsi:32       element offset of the packet's first element in the worker's vector

``msg_type`` stays below 8, so the VA is a non-negative int64. A packet from the parent switch
of a tree is told from a child's contribution by its IPv4 source (a switch address), as a
SwitchML switch tells workers apart by their source addresses.
"""
from __future__ import annotations

from spin.wire.fields import Field, HeaderFormat

SWITCHML = HeaderFormat("SWITCHML", [
    Field("msg_type", 4),
    Field("unused", 4),
    Field("job", 8),
    Field("pool_index", 16),
    Field("tsi", 32),
])

MSG_SUM_INT32 = 1
MSG_SUM_FLOAT32 = 2
MSG_MAX_INT32 = 3
MSG_SUM_FLOAT16 = 4
MSG_SUM_BFLOAT16 = 5
MSG_CONTROL = 7
AGGREGATING_TYPES = (MSG_SUM_INT32, MSG_SUM_FLOAT32, MSG_MAX_INT32, MSG_SUM_FLOAT16,
                     MSG_SUM_BFLOAT16)
MSG_NAMES = {MSG_SUM_INT32: "sum_int32", MSG_SUM_FLOAT32: "sum_float32",
             MSG_MAX_INT32: "max_int32", MSG_SUM_FLOAT16: "sum_float16",
             MSG_SUM_BFLOAT16: "sum_bfloat16", MSG_CONTROL: "control"}
SUM_TYPES = {"int32": MSG_SUM_INT32, "float32": MSG_SUM_FLOAT32, "float16": MSG_SUM_FLOAT16,
             "bfloat16": MSG_SUM_BFLOAT16}      # allreduce dtype -> msg_type


def element_bytes(msg_type: int) -> int:
    """Bytes per element a packet of ``msg_type`` carries (2 for the 16-bit floats, else 4)."""
    return 2 if msg_type in (MSG_SUM_FLOAT16, MSG_SUM_BFLOAT16) else 4

SET_BIT = 0x8000          # pool_index MSB: the shadow set
MAX_SLOTS = 0x8000        # slots addressable per job (15 bits)

# control packets (msg_type 7) name what they do in pool_index
CONTROL_KICK = 1          # host -> own NIC: start streaming (packet p starts window part p)
CONTROL_TICK = 2          # NIC -> itself: retransmission timer tick


def pack(msg_type: int, job: int, pool_index: int, tsi: int) -> int:
    """The header as the int64 RETH VA (what ``HostProgram.send(remote_addr=...)`` takes)."""
    for name, value, nbits in (("msg_type", msg_type, 3), ("job", job, 8),
                               ("pool_index", pool_index, 16), ("tsi", tsi, 32)):
        if not 0 <= value < (1 << nbits):
            raise ValueError(f"SwitchML header {name}={value} outside 0..{(1 << nbits) - 1}")
    return (msg_type << 60) | (job << 48) | (pool_index << 32) | tsi


def unpack(va: int) -> dict[str, int]:
    """Fields of a header given as the RETH VA."""
    va &= (1 << 64) - 1
    return {"msg_type": va >> 60, "unused": (va >> 56) & 0xF, "job": (va >> 48) & 0xFF,
            "pool_index": (va >> 32) & 0xFFFF, "tsi": va & 0xFFFFFFFF}
