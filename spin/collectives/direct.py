"""Direct allreduce: a reduce-scatter and an allgather in which every block goes straight to
its owner, one message per pair and phase. 2(n-1) messages per rank and 2(n-1)/n * S bytes,
as the ring, but two steps of latency instead of 2(n-1): the allreduce of small blocks on hosts
whose per-message overheads are small (GPU-initiated sends), where the ring and even
Rabenseifner's 2 log2 n steps are latency-bound.

* Reduce-scatter (QP +0): rank r sends block p of its data to rank p, into the scratch region
  of their distance (p - r) mod n - 1; each rank waits for the n-1 blocks it is owed and adds
  them into its own block r, which then holds the sum.
* Allgather (QP +1): rank r sends its summed block r to every other rank, into the same place
  of their data, and waits for the n-1 it is owed.

Why nothing is overwritten while needed: scratch regions are one per sender; an allgather
message from rank q lands on block q of our data, which we last read for our reduce-scatter
send to q, and q sends it only after it received that very send.
"""
from __future__ import annotations

from .common import (AllreducePlan, Builder, block_layout, scratch_regions_memory,
                     write_inputs)

NAME = "direct"


plan_memory = scratch_regions_memory   # the data and a region per other rank


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a direct allreduce of ``count`` elements per rank to ``scenario``."""
    layout = block_layout(scenario, NAME, count, dtype, hosts, (qp, qp + 1))
    plan, hosts, n, w = layout.plan, layout.plan.hosts, layout.n, layout.width
    counts, off, region = layout.counts, layout.offsets, layout.region
    data, scratch = layout.data, layout.scratch
    b = Builder(scenario, hosts, dtype, qp, 2)
    b.mark_all(plan.start_mark)
    for r in range(n):
        for s in range(1, n):                        # reduce-scatter: block p to rank p
            p = (r + s) % n
            b.send(r, p, 0, data + off[p] * w, scratch + (s - 1) * region, counts[p])
        for s in range(1, n):
            b.recv(r, 0, counts[r])
        for s in range(1, n):
            b.reduce(r, data + off[r] * w, scratch + (s - 1) * region, counts[r])
        for s in range(1, n):                        # allgather: our sum to every rank
            at = data + off[r] * w
            b.send(r, (r + s) % n, 1, at, at, counts[r])
        for s in range(1, n):
            b.recv(r, 1, counts[(r - s) % n])
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
