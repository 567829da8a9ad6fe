"""Ring allreduce: reduce-scatter then allgather around a ring of n ranks (Patarasuk & Yuan,
2009; NCCL's ring). Bandwidth-optimal: every rank sends 2(n-1)/n * S bytes in 2(n-1) steps.

Rank r sends to r+1 and receives from r-1, on one QP (messages of one sender on one QP arrive
in order, so "s+1 messages arrived" means step s arrived). The vector is split into n blocks
that differ by at most one element.

* Reduce-scatter step s (0..n-2): send block (r-s) mod n from data; receive block (r-s-1) into
  scratch region s (one region per step: the left neighbour runs ahead of us at will); reduce
  it into data. After n-1 steps rank r holds the full sum of block (r+1) mod n.
* Allgather step s: send block (r+1-s) mod n from data; receive block (r-s) mod n straight into
  data. That block of data was last read by our reduce-scatter send of step s, and the chain of
  messages that lets the left neighbour send it to us runs through the receipt of that very
  send at r+1, so it has been read before it is overwritten.
"""
from __future__ import annotations

from .common import (AllreducePlan, Builder, align, block_counts, check_args, check_memory,
                     itemsize, offsets, write_inputs)

NAME = "ring"


def plan_memory(n: int, count: int, dtype: str) -> int:
    w = itemsize(dtype)
    return align(count * w) + (n - 1) * align(max(block_counts(count, n)) * w)


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a ring allreduce of ``count`` elements per rank to ``scenario``'s host programs."""
    hosts = check_args(scenario, count, dtype, hosts)
    n, w = len(hosts), itemsize(dtype)
    counts = block_counts(count, n)
    off = offsets(counts)
    data, scratch = 0, align(count * w)
    region = align(max(counts) * w)
    plan = AllreducePlan(NAME, hosts, count, dtype, data, data, scratch,
                         plan_memory(n, count, dtype), (qp,))
    check_memory(scenario, plan)
    b = Builder(scenario, hosts, dtype, qp, 1)
    b.mark_all(plan.start_mark)
    for r in range(n):
        right = (r + 1) % n
        for s in range(n - 1):                       # reduce-scatter
            out_blk, in_blk = (r - s) % n, (r - s - 1) % n
            b.send(r, right, 0, data + off[out_blk] * w, scratch + s * region, counts[out_blk])
            b.recv(r, 0, counts[in_blk])
            b.reduce(r, data + off[in_blk] * w, scratch + s * region, counts[in_blk])
        for s in range(n - 1):                       # allgather
            out_blk, in_blk = (r + 1 - s) % n, (r - s) % n
            b.send(r, right, 0, data + off[out_blk] * w, data + off[out_blk] * w,
                   counts[out_blk])
            b.recv(r, 0, counts[in_blk])
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
