"""The collectives a training trace calls besides all-reduce, as host programs on the fabric
(all-reduce itself comes from ``spin.collectives.ALGORITHMS``). Sizes follow nccl-tests: S is
the all-gather's output, the reduce-scatter's and all-to-all's input, the broadcast's buffer.

* all-gather: the ring's second half (Patarasuk & Yuan, 2009): n-1 steps, S/n per step.
* reduce-scatter: the ring's first half, each received block reduced into the data.
* all-to-all: every rank posts its n-1 blocks of S/n at once (pairwise order r+1, r+2, ...,
  as NCCL posts them) and waits for the n-1 it is owed.
* broadcast: binomial tree from the group's first rank (MPICH's short-message broadcast).
* barrier: dissemination (Hensgen, Finkel & Manber, 1988): ceil(log2 n) rounds of 8 B.

Each builder appends to the hosts' programs and returns the host memory its layout needs;
messages of one collective use ``qps`` QPs from ``qp`` on, where every receiver hears from
exactly one sender per QP, so in-order delivery keeps the cumulative receive counts exact
even when consecutive collectives overlap on the wire."""
from __future__ import annotations

from ..collectives.common import Builder, align, block_counts, offsets

DTYPE, WIDTH = "float32", 4          # elements the replay moves (sizes round up to them)
BARRIER_BYTES = 8


def elements(nbytes: int) -> int:
    """float32 elements holding ``nbytes`` (at least one)."""
    return max(1, -(-nbytes // WIDTH))


def qps_needed(kind: str, n: int) -> int:
    """QPs a collective of ``kind`` on ``n`` ranks uses (a barrier: one per round)."""
    return max(1, (n - 1).bit_length()) if kind == "barrier" else 1


def memory_needed(kind: str, n: int, nbytes: int) -> int:
    """Host bytes per rank its layout needs (data, and scratch or output regions)."""
    count = elements(nbytes)
    blk = align(max(block_counts(count, n)) * WIDTH)
    return {"all_gather": align(count * WIDTH),
            "reduce_scatter": align(count * WIDTH) + (n - 1) * blk,
            "all_to_all": 2 * align(count * WIDTH),
            "broadcast": align(count * WIDTH),
            "barrier": align(BARRIER_BYTES)}[kind]


def build(kind: str, scenario, hosts: tuple[int, ...], nbytes: int, qp: int) -> None:
    """Append collective ``kind`` of ``nbytes`` over ``hosts`` (rank order) to their programs."""
    n = len(hosts)
    b = Builder(scenario, hosts, DTYPE, qp, qps_needed(kind, n))
    BUILDERS[kind](b, n, elements(nbytes))


def _all_gather(b: Builder, n: int, count: int) -> None:
    counts = block_counts(count, n)
    off = offsets(counts)
    for r in range(n):
        for s in range(n - 1):
            out_blk, in_blk = (r - s) % n, (r - s - 1) % n
            b.send(r, (r + 1) % n, 0, off[out_blk] * WIDTH, off[out_blk] * WIDTH,
                   counts[out_blk])
            b.recv(r, 0, counts[in_blk])


def _reduce_scatter(b: Builder, n: int, count: int) -> None:
    counts = block_counts(count, n)
    off = offsets(counts)
    scratch, region = align(count * WIDTH), align(max(counts) * WIDTH)
    for r in range(n):
        for s in range(n - 1):
            out_blk, in_blk = (r - s) % n, (r - s - 1) % n
            b.send(r, (r + 1) % n, 0, off[out_blk] * WIDTH, scratch + s * region,
                   counts[out_blk])
            b.recv(r, 0, counts[in_blk])
            b.reduce(r, off[in_blk] * WIDTH, scratch + s * region, counts[in_blk])


def _all_to_all(b: Builder, n: int, count: int) -> None:
    counts = block_counts(count, n)
    off = offsets(counts)
    out = align(count * WIDTH)
    for r in range(n):
        for s in range(1, n):
            peer = (r + s) % n
            b.send(r, peer, 0, off[peer] * WIDTH, out + off[r] * WIDTH, counts[peer])
    for r in range(n):
        for s in range(1, n):
            b.recv(r, 0, counts[r])


def _broadcast(b: Builder, n: int, count: int) -> None:
    rounds = (n - 1).bit_length()
    for v in range(n):                  # v: rank relative to the root (rank 0 of the group)
        if v:
            b.recv(v, 0, count)
        first = v.bit_length()          # a rank receives in round bit_length(v) - 1
        for k in range(first, rounds):
            child = v + (1 << k)
            if child < n:
                b.send(v, child, 0, 0, 0, count)


def _barrier(b: Builder, n: int, count: int) -> None:
    words = BARRIER_BYTES // WIDTH
    for r in range(n):
        for k in range(qps_needed("barrier", n)):
            b.send(r, (r + (1 << k)) % n, k, 0, 0, words)
            b.recv(r, k, words)


BUILDERS = {"all_gather": _all_gather, "reduce_scatter": _reduce_scatter,
            "all_to_all": _all_to_all, "broadcast": _broadcast, "barrier": _barrier}
