"""Sum every int32 of every packet into one scalar on the NIC (PsPIN ``aggregate``).

Payload handlers sum their packet locally, then add the partial sum to handler memory with one
atomic fetch-add (PsPIN does one ``amo_add`` per packet into L2). Accumulation is in int64, so
the total is exact (no int32 wraparound) for up to 2**32 values. After ``expected`` messages
the completion handler writes the total to the host with ``spin_host_write`` and raises a host
event; it then resets the accumulator for the next round.

Handler memory (int64): ``[total, done, expected, host_addr]``.
"""
import numpy as np

from spin.api import SUCCESS, spin_fetch_add, spin_host_event, spin_host_write
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

TOTAL, DONE, EXPECTED, HOST_ADDR = 0, 1, 2, 3


# One load+add per 4-byte value (0.25 cycle/byte) plus loop setup and the atomic: the same
# budget as the reduce handler, within PsPIN's 655 cycles per 1 KiB packet at 400 Gb/s.
@handler(cycles=40, cycles_per_byte=0.25)
def aggregate_payload(ctx, pkt, mem):
    vals = pkt.view(np.int32)
    s = np.int64(0)
    for i in range(vals.shape[0]):
        s += vals[i]
    spin_fetch_add(mem, TOTAL, s)
    return SUCCESS


@handler(cycles=40)  # counter update, compare, two commands
def aggregate_completion(ctx, pkt, mem):
    if spin_fetch_add(mem, DONE, 1) + 1 == mem[EXPECTED]:
        spin_host_write(ctx, mem[HOST_ADDR], mem[TOTAL])
        spin_host_event(ctx, 1)
        mem[TOTAL] = 0
        mem[DONE] = 0
    return SUCCESS


@program_factory
def aggregate_program(host_addr: int, expected_messages: int) -> HandlerProgram:
    mem = np.array([0, 0, expected_messages, host_addr], dtype=np.int64)
    return HandlerProgram("aggregate", payload=aggregate_payload,
                          completion=aggregate_completion, memory=mem)
