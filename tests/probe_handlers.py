"""Handlers that record when and where they ran, to test sPIN ordering and the cost model.

Handler memory (int64): [header_calls, header_start, completion_calls, completion_start,
payload_calls, violations, 0, 0, then per packet index: start, hpu, 0, 0].
"""
import numpy as np

from spin.api import (PROCEED, SUCCESS, spin_frame, spin_hpu, spin_msg_offset, spin_msg_state,
                      spin_now_ps)
from spin.handler import HandlerProgram, handler

H_CALLS, H_START, C_CALLS, C_START, P_CALLS, VIOLATIONS, MSG_STATE_COUNT = 0, 1, 2, 3, 4, 5, 6
PER_PKT = 8
PROBE_HEADER_CYCLES = 50
PROBE_PAYLOAD_CYCLES = 2000
MTU = 1024


@handler(cycles=PROBE_HEADER_CYCLES)
def probe_header(ctx, pkt, mem):
    mem[H_CALLS] += 1
    mem[H_START] = spin_now_ps(ctx)
    if mem[P_CALLS] != 0:
        mem[VIOLATIONS] += 1
    return SUCCESS


@handler(cycles=PROBE_PAYLOAD_CYCLES)
def probe_payload(ctx, pkt, mem):
    if mem[H_CALLS] != 1 or mem[C_CALLS] != 0:
        mem[VIOLATIONS] += 1
    mem[P_CALLS] += 1
    idx = PER_PKT + 4 * (spin_msg_offset(ctx) // MTU)
    mem[idx] = spin_now_ps(ctx)
    mem[idx + 1] = spin_hpu(ctx)
    spin_msg_state(ctx)[0] += 1                   # per-message scratch state
    mem[idx + 2] = spin_frame(ctx).shape[0] - pkt.shape[0]   # header + ICRC bytes
    return PROCEED


@handler(cycles=30)
def probe_completion(ctx, pkt, mem):
    mem[C_CALLS] += 1
    mem[C_START] = spin_now_ps(ctx)
    mem[MSG_STATE_COUNT] = spin_msg_state(ctx)[0]
    return PROCEED


def probe_program(max_packets: int = 64) -> HandlerProgram:
    return HandlerProgram("probe", header=probe_header, payload=probe_payload,
                          completion=probe_completion,
                          memory=np.zeros(PER_PKT + 4 * max_packets, np.int64))


def probe_program_without_completion(max_packets: int = 64) -> HandlerProgram:
    """Same payload handler (returns PROCEED), no completion handler."""
    return HandlerProgram("probe_nocomp", header=probe_header, payload=probe_payload,
                          memory=np.zeros(PER_PKT + 4 * max_packets, np.int64))


def failing_payload(ctx, pkt, mem):
    if pkt[0] == 0xEE:
        raise ValueError("payload byte 0 is 0xEE")
    mem[0] += 1
    return SUCCESS


def failing_program() -> HandlerProgram:
    return HandlerProgram("failing", payload=failing_payload, memory=np.zeros(1, np.int64))


def engine_test_programs() -> list[HandlerProgram]:
    """One shared list, so every engine test reuses one compiled engine."""
    from handlers.reduce import reduce_program
    return [probe_program(), failing_program(), probe_program_without_completion(),
            reduce_program(1, 1)]


def out_of_bounds_payload(ctx, pkt, mem):
    mem[pkt.shape[0] + 10] = 1     # handler memory has 4 words: always out of bounds
    return SUCCESS


def out_of_bounds_program() -> HandlerProgram:
    return HandlerProgram("oob", payload=out_of_bounds_payload, memory=np.zeros(4, np.int64))
