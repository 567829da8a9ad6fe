"""Handlers for the debug-mode tests (module level, as every handler must be)."""
import numpy as np

from spin.api import SUCCESS

MEMORY = np.zeros(4, np.int64)


def sum_and_print(ctx, pkt, mem):
    total = 0
    for i in range(pkt.shape[0]):
        total += int(pkt[i])
    mem[0] += total
    mem[1] += 1
    mem[2] = max(mem[2], ctx.psn)
    print("debug handler saw psn", ctx.psn)
    return SUCCESS


def index_past_the_end(ctx, pkt, mem):
    mem[1] += 1
    i = mem.shape[0] + ctx.psn
    mem[i] = 1           # the failing line
    return SUCCESS


def returns_a_float(ctx, pkt, mem):
    return 1.5


def sum_without_int(ctx, pkt, mem):
    total = 0
    for i in range(pkt.shape[0]):
        total += pkt[i]        # uint8 in plain Python, int64 compiled
    mem[0] += total
    return SUCCESS
