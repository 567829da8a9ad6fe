"""Handlers that make the mistakes users make: indexing past their arrays, returning a value
that is not a return code, handing a non-byte buffer to a DMA or send call."""
import numpy as np

from spin.api import SUCCESS, spin_host_write, spin_send_packet
from spin.engine import state as S
from spin.engine.handler_context import HC_PEND_N
from spin.handler import HandlerProgram


def oob_memory_payload(ctx, pkt, mem):
    mem[mem.shape[0] + 1000] = 1        # far past the handler memory
    return SUCCESS


def oob_packet_payload(ctx, pkt, mem):
    pkt[pkt.shape[0] + 64] = 7          # past the payload, into the next slot's bytes
    return SUCCESS


def bad_return_payload(ctx, pkt, mem):
    return 42


def wide_buffer_payload(ctx, pkt, mem):
    spin_send_packet(ctx, 0, 1, mem, 0, 8, 0)   # mem is int64: not bytes
    return SUCCESS


def other_host_payload(ctx, pkt, mem):
    ctx.host_mem[ctx.host_mem.shape[0] + 8] = 1   # past its own host: another node's memory
    return SUCCESS


def other_host_dma_payload(ctx, pkt, mem):
    spin_host_write(ctx, ctx.host_mem.shape[0], 1)   # the first address past its own host
    return SUCCESS


def own_host_payload(ctx, pkt, mem):
    spin_host_write(ctx, 0, 0x0102030405060708)      # its own host: allowed
    mem[0] = ctx.host_mem.shape[0]
    return SUCCESS


def forged_multicast_payload(ctx, pkt, mem):
    ctx.pend[0, 0] = S.ACT_MULTICAST                 # a switch command, written by hand
    ctx.pend[0, 1] = 999
    ctx.ctl[HC_PEND_N] = 1
    return SUCCESS


def forged_count_payload(ctx, pkt, mem):
    ctx.ctl[HC_PEND_N] = 1 << 40                     # claims more commands than the table has
    return SUCCESS


def forged_send_payload(ctx, pkt, mem):
    ctx.pend[0, 0] = S.ACT_SEND_PACKET               # a send of bytes it never staged
    ctx.pend[0, 1] = 0
    ctx.pend[0, 3] = 0
    ctx.pend[0, 4] = 64
    ctx.ctl[HC_PEND_N] = 1
    return SUCCESS


def _program(name, fn) -> HandlerProgram:
    return HandlerProgram(name, payload=fn, memory=np.zeros(4, np.int64))


def safety_programs() -> list[HandlerProgram]:
    return [_program("oob_memory", oob_memory_payload), _program("oob_packet", oob_packet_payload),
            _program("bad_return", bad_return_payload), _program("wide_buffer", wide_buffer_payload),
            _program("other_host", other_host_payload),
            _program("other_host_dma", other_host_dma_payload),
            _program("own_host", own_host_payload),
            _program("forged_multicast", forged_multicast_payload),
            _program("forged_count", forged_count_payload),
            _program("forged_send", forged_send_payload)]
