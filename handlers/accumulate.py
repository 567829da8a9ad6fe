"""Accumulate an incoming vector into host memory by DMA read-modify-write (sPIN paper).

The sPIN paper's complex-number accumulate (``spcl/LogGOPSim2`` ``smp_code.c``): each payload
handler reads the target range of host memory (``spin_dma_from_host``, blocking: the HPU waits
for the PCIe round trip), combines it element-wise with the packet, and DMAs the result back to
the same address (the message's RETH address plus the packet's offset). Supported: int32, float32
and float64 addition, and complex64 multiplication. Each HPU uses its own scratch area.
The completion handler returns PROCEED, so the host is notified after the last write-back.

Handler memory (int64): ``[op, scratch_bytes, 0, 0, scratch...]``.
"""
import numpy as np

from spin.api import (PROCEED, SUCCESS, spin_add_cycles, spin_dma_from_host, spin_dma_to_host,
                      spin_hpu, spin_msg_addr, spin_msg_offset)
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

OP, SCRATCH_BYTES, HEADER_WORDS = 0, 1, 4
ADD_INT32, ADD_FLOAT32, ADD_FLOAT64, MUL_COMPLEX64 = 0, 1, 2, 3
OPS = {"add_int32": ADD_INT32, "add_float32": ADD_FLOAT32, "add_float64": ADD_FLOAT64,
       "mul_complex64": MUL_COMPLEX64}


# Two DMA commands plus one load/op/store per 4 bytes (0.25 cycle/byte, as the reduce handler).
# A complex multiply is 4 multiplies and 2 adds per 8 bytes: 0.75 cycle/byte more, charged below.
@handler(cycles=60, cycles_per_byte=0.25)
def accumulate_payload(ctx, pkt, mem):
    n = pkt.shape[0]
    off = spin_hpu(ctx) * mem[SCRATCH_BYTES]
    buf = mem[HEADER_WORDS:].view(np.uint8)
    addr = spin_msg_addr(ctx) + spin_msg_offset(ctx)
    spin_dma_from_host(ctx, addr, buf, off, n)
    op = mem[OP]
    if op == ADD_INT32:
        ai = buf[off:off + n].view(np.int32)
        bi = pkt.view(np.int32)
        for i in range(ai.shape[0]):
            ai[i] += bi[i]
    elif op == ADD_FLOAT32:
        af = buf[off:off + n].view(np.float32)
        bf = pkt.view(np.float32)
        for i in range(af.shape[0]):
            af[i] += bf[i]
    elif op == ADD_FLOAT64:
        ad = buf[off:off + n].view(np.float64)
        bd = pkt.view(np.float64)
        for i in range(ad.shape[0]):
            ad[i] += bd[i]
    else:
        ac = buf[off:off + n].view(np.float32)
        bc = pkt.view(np.float32)
        for i in range(0, ac.shape[0] - 1, 2):
            re = ac[i] * bc[i] - ac[i + 1] * bc[i + 1]
            im = ac[i] * bc[i + 1] + ac[i + 1] * bc[i]
            ac[i] = re
            ac[i + 1] = im
        spin_add_cycles(ctx, (3 * n) // 4)
    spin_dma_to_host(ctx, addr, buf, off, n)
    return SUCCESS


@handler(cycles=10)  # return a code
def accumulate_completion(ctx, pkt, mem):
    return PROCEED


@program_factory
def accumulate_program(op: str, mtu_bytes: int = 1024, hpus: int = 32) -> HandlerProgram:
    """``op`` in OPS; ``mtu_bytes``/``hpus`` >= the run's EngineConfig.mtu_bytes/NicConfig.hpus
    (one packet-sized scratch area per HPU). Packets must hold whole elements."""
    if op not in OPS:
        raise ConfigError(f"accumulate: op={op!r}; valid choices: {', '.join(OPS)}")
    mem = np.zeros(HEADER_WORDS + hpus * mtu_bytes // 8, np.int64)
    mem[OP], mem[SCRATCH_BYTES] = OPS[op], mtu_bytes
    return HandlerProgram("accumulate", payload=accumulate_payload,
                          completion=accumulate_completion, memory=mem)
