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

from .common import (AllreducePlan, Builder, block_layout, scratch_regions_memory,
                     write_inputs)

NAME = "ring"
# A block is cut into at most this many chunks: NCCL's Simple protocol splits its channel
# buffer into NCCL_STEPS = 8 slots, and a transfer smaller than the buffer into that many.
CHUNKS_PER_BLOCK = 8
MIN_CHUNK_BYTES = 4096    # one MTU of payload: smaller chunks only add per-message costs
OVERHEAD_SHARE = 0.1      # host overheads per chunk: at most this share of its wire time


plan_memory = scratch_regions_memory   # the data and a region per other rank


def chunk_ranges(count: int, width: int, chunk_bytes: int) -> list[tuple[int, int]]:
    """(first element, elements) of each chunk of a ``count``-element block: one chunk when
    ``chunk_bytes`` is 0, else pieces of ``chunk_bytes`` (whole elements, the last shorter)."""
    if chunk_bytes <= 0 or count * width <= chunk_bytes:
        return [(0, count)]
    per = max(1, chunk_bytes // width)
    return [(lo, min(per, count - lo)) for lo in range(0, count, per)]


def chunk_bytes(scenario, block_bytes: int) -> int:
    """Bytes per chunk of a ``block_bytes`` block (0: the block goes whole).

    At most ``HostConfig.pipeline_chunk_bytes``; a smaller block is cut into CHUNKS_PER_BLOCK
    chunks, as NCCL shrinks its chunks for small transfers, so the chunks of one block cover
    the hops of the next. But never below MIN_CHUNK_BYTES, nor so small that the hosts'
    per-message overheads exceed OVERHEAD_SHARE of a chunk's time on the wire: the hosts, not
    the link, would pace the ring (with the cpu overheads, 1.5 us a side, chunks stay whole)."""
    cap = scenario.host.pipeline_chunk_bytes
    if cap <= 0:
        return 0
    host = scenario.host
    rate_gbps = min(link.config.rate_gbps for link in scenario.topology.links)
    overhead_bytes = (host.send_overhead_ns + host.recv_overhead_ns) * rate_gbps / 8
    floor = max(MIN_CHUNK_BYTES, int(overhead_bytes / OVERHEAD_SHARE))
    return min(cap, max(floor, -(-block_bytes // CHUNKS_PER_BLOCK)))


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a ring allreduce of ``count`` elements per rank to ``scenario``'s host programs.

    With ``HostConfig.pipeline_chunk_bytes`` > 0 every step moves its block as chunks (of at
    most that size, ``chunk_bytes``) and each chunk goes on as soon as it is reduced, so the
    reduction of one chunk overlaps the transfer of the next (NCCL's ring pipelines its steps
    so); 0 sends one message per block and step."""
    layout = block_layout(scenario, NAME, count, dtype, hosts, (qp,))
    plan, hosts, n, w = layout.plan, layout.plan.hosts, layout.n, layout.width
    counts, off, region = layout.counts, layout.offsets, layout.region
    data, scratch = layout.data, layout.scratch
    chunk = chunk_bytes(scenario, max(counts) * w)
    b = Builder(scenario, hosts, dtype, qp, 1)
    b.mark_all(plan.start_mark)
    def send(r: int, blk: int, to_scratch: int | None, lo: int, c: int) -> None:
        """Rank r posts chunk [lo, lo + c) of block ``blk`` to its right neighbour: into its
        scratch region ``to_scratch`` (reduce-scatter) or in place (allgather, None)."""
        at = data + (off[blk] + lo) * w
        dst = at if to_scratch is None else scratch + to_scratch * region + lo * w
        b.send(r, (r + 1) % n, 0, at, dst, c)

    for r in range(n):
        for lo, c in chunk_ranges(counts[r], w, chunk):      # reduce-scatter step 0
            send(r, r, 0, lo, c)
        for s in range(n - 1):                       # reduce-scatter: reduce, pass on
            in_blk = (r - s - 1) % n
            for lo, c in chunk_ranges(counts[in_blk], w, chunk):
                b.recv(r, 0, c)
                b.reduce(r, data + (off[in_blk] + lo) * w, scratch + s * region + lo * w, c)
                # step s+1 of the reduce-scatter, or allgather step 0 once the sum is whole
                send(r, in_blk, s + 1 if s < n - 2 else None, lo, c)
        for s in range(n - 1):                       # allgather: receive in place, pass on
            in_blk = (r - s) % n
            for lo, c in chunk_ranges(counts[in_blk], w, chunk):
                b.recv(r, 0, c)
                if s < n - 2:
                    send(r, in_blk, None, lo, c)
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
