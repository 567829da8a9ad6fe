"""Handlers that make the mistakes users make: indexing past their arrays, returning a value
that is not a return code, handing a non-byte buffer to a DMA or send call."""
import numpy as np

from spin.api import SUCCESS, spin_send_packet
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


def _program(name, fn) -> HandlerProgram:
    return HandlerProgram(name, payload=fn, memory=np.zeros(4, np.int64))


def safety_programs() -> list[HandlerProgram]:
    return [_program("oob_memory", oob_memory_payload), _program("oob_packet", oob_packet_payload),
            _program("bad_return", bad_return_payload), _program("wide_buffer", wide_buffer_payload)]
