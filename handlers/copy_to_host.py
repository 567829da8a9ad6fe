"""Copy every packet to a host buffer the NIC chooses (PsPIN ``copy_to_host``).

The payload handler DMAs each packet to ``host_base + message offset``, a buffer configured in
handler memory instead of the RETH address the sender named: the NIC, not the sender, decides
where data lands (e.g. a log or a receive ring). The completion handler returns PROCEED so the
host gets its usual completion-queue entry.

Handler memory (int64): ``[host_base]``.
"""
import numpy as np

from spin.api import PROCEED, SUCCESS, spin_dma_to_host, spin_msg_offset
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

HOST_BASE = 0


# Address arithmetic plus one DMA command: ~30 instructions, in line with PsPIN's copy_to_host
# and ping_pong handlers (29 instructions, 38 ns warm; spcl/pspin docs/examples.md).
@handler(cycles=30)
def copy_to_host_payload(ctx, pkt, mem):
    spin_dma_to_host(ctx, mem[HOST_BASE] + spin_msg_offset(ctx), pkt, 0, pkt.shape[0])
    return SUCCESS


@handler(cycles=10)  # return a code: a handful of instructions
def copy_to_host_completion(ctx, pkt, mem):
    return PROCEED


@program_factory
def copy_to_host_program(host_base: int) -> HandlerProgram:
    return HandlerProgram("copy_to_host", payload=copy_to_host_payload,
                          completion=copy_to_host_completion,
                          memory=np.array([host_base], dtype=np.int64))
