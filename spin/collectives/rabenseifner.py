"""Rabenseifner's allreduce (Thakur, Rabenseifner & Gropp, IJHPCA 2005): a reduce-scatter by
recursive halving, then an allgather by recursive doubling. 2 log2 p messages per rank and
2(p-1)/p * S bytes: the latency of recursive doubling with the bandwidth of the ring.

The p survivors of the fold (``common.Fold``; a non-power-of-two n folds as in
``recursive_doubling``) split the vector into p blocks (differing by at most one element).
Reduce-scatter step k (mask p/2, p/4, ..., 1): partners new xor mask share a segment of blocks;
the lower rank keeps the lower half. Each sends the half the other keeps (from data) into the
other's scratch region k, and adds the half it keeps from its own region k into data. After
log2 p steps survivor ``new`` holds block ``new`` summed. Allgather, masks 1, 2, ..., p/2:
partners send their finished segment straight into the same place in the other's data.

Why nothing is overwritten while needed: a region of data written by a reduce is never one a
pending send reads (we send the half we give away, write the half we keep, and keep only
shrinking sub-halves afterwards); an allgather message lands on the half we gave that partner at
the same level, which it sends back only after it received all of it.
"""
from __future__ import annotations

from .common import (AllreducePlan, Builder, Fold, align, block_counts, check_args, check_memory,
                     itemsize, offsets, write_inputs)

NAME = "rabenseifner"


def _layout(n: int, count: int, w: int) -> tuple[list[int], list[int], int]:
    """Scratch offsets (relative) of each halving step, and the scratch size: step k receives at
    most the larger half of a segment of p/2^k blocks."""
    fold = Fold(n)
    p = fold.p
    counts = block_counts(count, p)
    sizes = []
    seg = p
    while seg > 1:
        half = seg // 2
        most = max(sum(counts[lo + h: lo + h + half]) for lo in range(0, p, seg) for h in (0, half))
        sizes.append(align(most * w))
        seg = half
    return sizes, offsets(sizes)[:-1], sum(sizes)


def plan_memory(n: int, count: int, dtype: str) -> int:
    w = itemsize(dtype)
    _, _, scratch = _layout(n, count, w)
    return 2 * align(count * w) + scratch


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a Rabenseifner allreduce of ``count`` elements per rank to ``scenario``."""
    hosts = check_args(scenario, count, dtype, hosts)
    n, w = len(hosts), itemsize(dtype)
    fold = Fold(n)
    p = fold.p
    steps = p.bit_length() - 1
    counts = block_counts(count, p)
    off = offsets(counts)
    data, fold_buf = 0, align(count * w)
    _, step_off, _ = _layout(n, count, w)
    scratch = 2 * align(count * w)
    n_qps = 2 * steps + 2
    plan = AllreducePlan(NAME, hosts, count, dtype, data, data, fold_buf,
                         plan_memory(n, count, dtype), tuple(range(qp, qp + n_qps)))
    check_memory(scenario, plan)
    b = Builder(scenario, hosts, dtype, qp, n_qps)
    fold_qp, back_qp = 0, 2 * steps + 1

    def elems(lo: int, hi: int) -> tuple[int, int]:
        return data + off[lo] * w, off[hi] - off[lo]

    b.mark_all(plan.start_mark)
    for r in range(n):
        new = fold.new_rank(r)
        if new < 0:
            b.send(r, r + 1, fold_qp, data, fold_buf, count)
            b.recv(r, back_qp, count)
            continue
        if r < 2 * fold.extra:
            b.recv(r, fold_qp, count)
            b.reduce(r, data, fold_buf, count)
        lo, hi = 0, p
        for k in range(steps):                        # reduce-scatter by recursive halving
            mask = p >> (k + 1)
            partner = fold.old_rank(new ^ mask)
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if new & mask == 0 else ((mid, hi), (lo, mid))
            region = scratch + step_off[k]
            addr, cnt = elems(*give)
            b.send(r, partner, 1 + k, addr, region, cnt)
            addr, cnt = elems(*keep)
            b.recv(r, 1 + k, cnt)
            b.reduce(r, addr, region, cnt)
            lo, hi = keep
        for k in range(steps):                        # allgather by recursive doubling
            mask = 1 << k
            partner = fold.old_rank(new ^ mask)
            size = hi - lo
            other = (lo - size, lo) if new & mask else (hi, hi + size)
            addr, cnt = elems(lo, hi)
            b.send(r, partner, 1 + steps + k, addr, addr, cnt)
            b.recv(r, 1 + steps + k, off[other[1]] - off[other[0]])
            lo, hi = min(lo, other[0]), max(hi, other[1])
        if r < 2 * fold.extra:
            b.send(r, r - 1, back_qp, data, data, count)
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
