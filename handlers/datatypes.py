"""Strided vector datatype unpacked by the NIC (sPIN paper; FPsPIN ``datatypes``).

The sender transmits a vector datatype packed (contiguous); the receiver wants it as ``count``
blocks of ``blocklen`` bytes, ``stride`` bytes apart, starting at the message's RETH address
(MPI_Type_vector). The header handler reads the datatype from handler memory, rejects an
invalid one (DROP: the whole message) and otherwise returns PROCESS_DATA. Each payload handler
maps its packet's byte range of the packed stream onto the blocks and issues one
``spin_dma_to_host`` per (partial) block, so the host receives the data already in place. The
completion handler returns PROCEED to notify the host (SUCCESS, i.e. silence, if the header
handler dropped the message).

Handler memory (int64): ``[blocklen, stride]``.
"""
import numpy as np

from spin.api import (DROP, PROCEED, PROCESS_DATA, SUCCESS, spin_add_cycles, spin_dma_to_host,
                      spin_msg_addr, spin_msg_offset)
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

BLOCKLEN, STRIDE = 0, 1
CYCLES_PER_SEGMENT = 8  # a division, a multiply-add for the address, one DMA command


@handler(cycles=30)  # two loads, a check
def datatypes_header(ctx, pkt, mem):
    if mem[BLOCKLEN] <= 0 or mem[STRIDE] < mem[BLOCKLEN]:
        return DROP
    return PROCESS_DATA


@handler(cycles=40)  # setup; each segment is charged below
def datatypes_payload(ctx, pkt, mem):
    blocklen = mem[BLOCKLEN]
    stride = mem[STRIDE]
    base = spin_msg_addr(ctx)
    pos = spin_msg_offset(ctx)
    end = pos + pkt.shape[0]
    src = 0
    segments = 0
    while pos < end:
        block = pos // blocklen
        within = pos - block * blocklen
        n = min(blocklen - within, end - pos)
        spin_dma_to_host(ctx, base + block * stride + within, pkt, src, n)
        pos += n
        src += n
        segments += 1
    spin_add_cycles(ctx, CYCLES_PER_SEGMENT * segments)
    return SUCCESS


@handler(cycles=20)  # the header handler's check again
def datatypes_completion(ctx, pkt, mem):
    if mem[BLOCKLEN] <= 0 or mem[STRIDE] < mem[BLOCKLEN]:
        return SUCCESS  # the header handler dropped the message: nothing to announce
    return PROCEED


@program_factory
def datatypes_program(blocklen: int, stride: int, mtu_bytes: int = 1024) -> HandlerProgram:
    """A packet may touch at most 256 blocks (the commands one handler may issue)."""
    if blocklen <= 0 or stride < blocklen or mtu_bytes // blocklen + 2 > 256:
        raise ConfigError(f"datatypes: blocklen={blocklen}, stride={stride}: need 0 < blocklen "
                          f"<= stride and blocklen >= {mtu_bytes // 254 + 1} for a "
                          f"{mtu_bytes} B MTU")
    return HandlerProgram("datatypes", header=datatypes_header, payload=datatypes_payload,
                          completion=datatypes_completion,
                          memory=np.array([blocklen, stride], dtype=np.int64))
