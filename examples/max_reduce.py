"""A user's handler: element-wise int32 maximum of every contributor's vector, on the root's NIC.

Contributors RDMA-write their vectors to the same address of the root. Payload handlers keep the
running maximum in handler memory; the last completion DMAs it to that address and raises one
host event. Handler memory (int32): ``[done, expected, n_elems, 0, acc[0], acc[1], ...]``.
"""
import numpy as np

from spin.api import SUCCESS, spin_dma_to_host, spin_host_event, spin_msg_addr, spin_msg_offset
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

DONE, EXPECTED, N_ELEMS, HEADER_WORDS = 0, 1, 2, 4
LOWEST = np.iinfo(np.int32).min


@handler(cycles=40, cycles_per_byte=0.25)     # one compare per 4-byte element
def max_payload(ctx, pkt, mem):
    vals = pkt.view(np.int32)
    base = HEADER_WORDS + spin_msg_offset(ctx) // 4
    for i in range(vals.shape[0]):
        if vals[i] > mem[base + i]:
            mem[base + i] = vals[i]
    return SUCCESS


@handler(cycles=60)
def max_completion(ctx, pkt, mem):
    mem[DONE] += 1
    if mem[DONE] == mem[EXPECTED]:
        n = mem[N_ELEMS]
        acc = mem[HEADER_WORDS:HEADER_WORDS + n]
        spin_dma_to_host(ctx, spin_msg_addr(ctx), acc.view(np.uint8), 0, 4 * n)
        spin_host_event(ctx, 1)
        mem[DONE] = 0
        for i in range(n):
            acc[i] = LOWEST
    return SUCCESS


@program_factory
def max_reduce_program(n_elems: int, n_contributors: int) -> HandlerProgram:
    mem = np.full(HEADER_WORDS + n_elems, LOWEST, np.int32)
    mem[:HEADER_WORDS] = 0, n_contributors, n_elems, 0
    return HandlerProgram("max_reduce", payload=max_payload, completion=max_completion, memory=mem)
