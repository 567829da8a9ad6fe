"""Serve read requests from host memory without the host (PsPIN ``copy_from_host``).

A request packet carries int64 block indices. For each index ``k`` the payload handler reads
block ``k`` of a host-resident table with a blocking ``spin_dma_from_host`` (its HPU waits for
the PCIe round trip) into its own scratch area, then ``spin_send_packet``s it back to the
requester at ``reply_base + k * block_bytes`` on ``reply_qp``. Each HPU has a private scratch
block, as PsPIN handlers use their cluster's scratchpad, so concurrent handlers never share one.

Handler memory (int64): ``[src_base, block_bytes, reply_qp, reply_base, scratch...]``.
"""
import numpy as np

from spin.api import (SUCCESS, spin_add_cycles, spin_dma_from_host, spin_hpu, spin_send_packet,
                      spin_source)
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

SRC_BASE, BLOCK_BYTES, REPLY_QP, REPLY_BASE, HEADER_WORDS = 0, 1, 2, 3, 4
# Per block: index load, two address computations, one DMA and one send command.
CYCLES_PER_BLOCK = 20


# Parse the request and loop over it; the per-block work is charged with spin_add_cycles.
@handler(cycles=40)
def copy_from_host_payload(ctx, pkt, mem):
    block = mem[BLOCK_BYTES]
    scratch = mem[HEADER_WORDS:].view(np.uint8)
    off = spin_hpu(ctx) * block
    indices = pkt.view(np.int64)
    for i in range(indices.shape[0]):
        k = indices[i]
        spin_dma_from_host(ctx, mem[SRC_BASE] + k * block, scratch, off, block)
        spin_send_packet(ctx, spin_source(ctx), mem[REPLY_QP], scratch, off, block,
                         mem[REPLY_BASE] + k * block)
    spin_add_cycles(ctx, CYCLES_PER_BLOCK * indices.shape[0])
    return SUCCESS


@program_factory
def copy_from_host_program(src_base: int, block_bytes: int, reply_qp: int, reply_base: int,
                           hpus: int = 32) -> HandlerProgram:
    """``hpus`` must be at least ``NicConfig.hpus`` (one scratch block per HPU)."""
    if block_bytes <= 0 or block_bytes % 8:
        raise ConfigError(f"copy_from_host: block_bytes={block_bytes} must be a positive "
                          f"multiple of 8")
    mem = np.zeros(HEADER_WORDS + hpus * block_bytes // 8, np.int64)
    mem[:HEADER_WORDS] = (src_base, block_bytes, reply_qp, reply_base)
    return HandlerProgram("copy_from_host", payload=copy_from_host_payload, memory=mem)
