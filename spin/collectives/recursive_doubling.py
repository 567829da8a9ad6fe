"""Recursive-doubling allreduce (Thakur, Rabenseifner & Gropp, IJHPCA 2005): log2 p steps in
which partners r xor 2^k exchange their whole current vectors and both add. Latency-optimal
(log2 p messages per rank), bandwidth-poor (S bytes per step).

A non-power-of-two n folds first (``common.Fold``): even ranks below 2(n-p) send their vector
to the odd rank above them (QP step 0), which adds it; the p survivors exchange; the odd ranks
send the result back (last QP). Every step has its own QP, so a fast partner of step k+1 can
never be mistaken for the partner of step k.

Ping-pong-free buffering: step k receives into scratch region k and adds the current vector
*into the scratch* (a + b = b + a exactly in IEEE arithmetic, so both partners hold the same
bits); the scratch becomes the current vector. No buffer is written after a send read it, so a
send still draining never sees its data change. The result ends in the last region, on every
rank (folded ranks receive it there).
"""
from __future__ import annotations

from .common import (AllreducePlan, Builder, Fold, align, check_args, check_memory, itemsize,
                     write_inputs)

NAME = "rd"


def _steps(n: int) -> int:
    return Fold(n).p.bit_length() - 1


def plan_memory(n: int, count: int, dtype: str) -> int:
    return align(count * itemsize(dtype)) * (2 + _steps(n))


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a recursive-doubling allreduce of ``count`` elements per rank to ``scenario``."""
    hosts = check_args(scenario, count, dtype, hosts)
    n = len(hosts)
    fold, steps = Fold(n), _steps(n)
    size = align(count * itemsize(dtype))
    data = 0
    fold_buf = size                                    # the folded-in vector of an odd rank
    region = [size * (2 + k) for k in range(steps)]    # one receive region per exchange step
    result = region[-1]
    n_qps = steps + 2
    plan = AllreducePlan(NAME, hosts, count, dtype, data, result, fold_buf,
                         plan_memory(n, count, dtype), tuple(range(qp, qp + n_qps)))
    check_memory(scenario, plan)
    b = Builder(scenario, hosts, dtype, qp, n_qps)
    fold_qp, back_qp = 0, steps + 1
    b.mark_all(plan.start_mark)
    for r in range(n):
        new = fold.new_rank(r)
        if new < 0:                                    # hand the vector over, await the result
            b.send(r, r + 1, fold_qp, data, fold_buf, count)
            b.recv(r, back_qp, count)
            continue
        cur = data
        if r < 2 * fold.extra:                         # odd rank: add the neighbour's vector
            b.recv(r, fold_qp, count)
            b.reduce(r, fold_buf, data, count)
            cur = fold_buf
        for k in range(steps):
            partner = fold.old_rank(new ^ (1 << k))
            b.send(r, partner, 1 + k, cur, region[k], count)
            b.recv(r, 1 + k, count)
            b.reduce(r, region[k], cur, count)
            cur = region[k]
        if r < 2 * fold.extra:
            b.send(r, r - 1, back_qp, result, result, count)
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
