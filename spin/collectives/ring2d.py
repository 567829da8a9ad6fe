"""Two-dimensional rings: the allreduce the HammingMesh paper runs on its accelerators' four
ports (Hoefler et al., "HammingMesh: A Network Topology for Large-Scale Deep Learning", SC22,
arXiv 2209.01346): a reduce-scatter along one dimension of the rank grid, a reduce-scatter of
the block each rank then owns along the other, and the two allgathers in reverse, with the
vector split into streams that run in opposite dimension orders and ring directions at once,
so that every direction of every port carries one stream (``spin.collectives.grid``).

With ranks on a q x p grid (``Grid``), a stream of c elements moves, per rank and direction,
c (p-1)/p in its first reduce-scatter and c (q-1)/(pq) in its second, the same again in the
allgathers: 2 c (n-1)/n in all, as one ring, but in p + q steps per phase pair instead of n,
and over as many ports as there are streams. Four streams on a four-port accelerator bound the
time by 2 (n-1)/n * S / (4 B) (``spin.collectives.theory.injection_bound_ps``).

Each phase is a ring step by step as ``spin.collectives.ring``: step s of a reduce-scatter
receives into its own scratch region (a left neighbour may run ahead), an allgather receives in
place (a block is overwritten only after the chain of messages that carried our read of it).
Every (stream, phase) has its own QP, so a wait counts one sender's messages in order. A rank's
program interleaves its streams step by step: a step waits only for the step before it at a
neighbour, so the interleaving cannot deadlock. With ``HostConfig.pipeline_chunk_bytes`` every
step moves its block in chunks, each passed on once reduced.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from .common import (AllreducePlan, Builder, align, block_counts, check_args, check_memory,
                     itemsize, offsets, write_inputs)
from .grid import STREAMS, Grid, check_streams, default_streams, grid_for
from .ring import chunk_ranges

NAME = "ring2d"
PHASES = 4          # QPs per stream: reduce-scatter 1 and 2, allgather 2 and 1


@dataclass(frozen=True)
class StreamLayout:
    """One stream's share of the vector and of the scratch area (byte addresses)."""

    first: str               # the dimension it reduces first
    sign: int                # ring direction, +1 or -1
    counts: tuple[int, ...]  # elements of each block along the first dimension
    addrs: tuple[int, ...]   # where each block starts in data
    rs1_at: int              # first reduce-scatter: one region per step
    rs1_region: int
    rs2_at: int              # second reduce-scatter (of the owned block): one region per step
    rs2_region: int


def layout(p: int, q: int, count: int, width: int, streams: int
           ) -> tuple[list[StreamLayout], int]:
    """The streams' layouts and the host memory they need: data, then per stream the scratch
    of its two reduce-scatters."""
    at = align(count * width)
    shares = block_counts(count, streams)
    out = []
    for (first, sign), c, start in zip(STREAMS[streams], shares, offsets(shares)):
        l1, l2 = (p, q) if first == "row" else (q, p)
        counts = block_counts(c, l1)
        region1 = align(max(counts) * width)
        region2 = align(-(-max(counts) // l2) * width)
        rs2_at = at + (l1 - 1) * region1
        out.append(StreamLayout(first, sign, tuple(counts),
                                tuple((start + o) * width for o in offsets(counts)[:-1]),
                                at, region1, rs2_at, region2))
        at = rs2_at + (l2 - 1) * region2
    return out, at


def plan_memory(n: int, count: int, dtype: str) -> int:
    """Host memory for any grid of n ranks and any stream count (the grid is known only once
    the topology is)."""
    w = itemsize(dtype)
    return max(layout(n // q, q, count, w, s)[1]
               for q in range(1, n + 1) if n % q == 0 for s in STREAMS)


def _reduce_scatter(ring, pos, counts, addrs, scratch, region, qp, w, chunk):
    """Steps (lists of ops) of a ring reduce-scatter; the rank ends owning block pos+1."""
    size = len(ring)
    if size == 1:
        return []
    right = ring[(pos + 1) % size]
    steps = [[("send", right, qp, addrs[pos] + lo * w, scratch + lo * w, c)
              for lo, c in chunk_ranges(counts[pos], w, chunk)]]
    for s in range(size - 1):
        blk = (pos - s - 1) % size
        ops = []
        for lo, c in chunk_ranges(counts[blk], w, chunk):
            at = addrs[blk] + lo * w
            ops += [("recv", qp, c), ("reduce", at, scratch + s * region + lo * w, c)]
            if s < size - 2:
                ops.append(("send", right, qp, at, scratch + (s + 1) * region + lo * w, c))
        steps.append(ops)
    return steps


def _allgather(ring, pos, counts, addrs, qp, w, chunk):
    """Steps of a ring allgather in place, starting from the owned block pos+1."""
    size = len(ring)
    if size == 1:
        return []
    right, own = ring[(pos + 1) % size], (pos + 1) % size
    steps = [[("send", right, qp, addrs[own] + lo * w, addrs[own] + lo * w, c)
              for lo, c in chunk_ranges(counts[own], w, chunk)]]
    for s in range(size - 1):
        blk = (pos - s) % size
        ops = []
        for lo, c in chunk_ranges(counts[blk], w, chunk):
            ops.append(("recv", qp, c))
            if s < size - 2:
                ops.append(("send", right, qp, addrs[blk] + lo * w, addrs[blk] + lo * w, c))
        steps.append(ops)
    return steps


def _stream_steps(grid: Grid, lay: StreamLayout, qp: int, w: int, chunk: int):
    """rank -> its steps of this stream: reduce-scatter along the first dimension, then along
    the second on the owned block, allgather along the second, then along the first."""
    other = "column" if lay.first == "row" else "row"
    first = grid.positions(lay.first, lay.sign)
    second = grid.positions(other, lay.sign)
    out = {}
    for rank, (ring1, pos1) in first.items():
        ring2, pos2 = second[rank]
        own = (pos1 + 1) % len(ring1)
        sub = block_counts(lay.counts[own], len(ring2))
        sub_addrs = [lay.addrs[own] + o * w for o in offsets(sub)[:-1]]
        out[rank] = (
            _reduce_scatter(ring1, pos1, lay.counts, lay.addrs, lay.rs1_at, lay.rs1_region,
                            qp, w, chunk)
            + _reduce_scatter(ring2, pos2, sub, sub_addrs, lay.rs2_at, lay.rs2_region, qp + 1,
                              w, chunk)
            + _allgather(ring2, pos2, sub, sub_addrs, qp + 2, w, chunk)
            + _allgather(ring1, pos1, lay.counts, lay.addrs, qp + 3, w, chunk))
    return out


def _emit(b: Builder, rank: int, ops) -> None:
    for op in ops:
        if op[0] == "send":
            b.send(rank, *op[1:])
        elif op[0] == "recv":
            b.recv(rank, *op[1:])
        else:
            b.reduce(rank, *op[1:])


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0, streams: int | None = None,
          shape: tuple[int, int] | None = None) -> AllreducePlan:
    """Add a two-dimensional-ring allreduce of ``count`` elements per rank to ``scenario``.

    ``streams`` (1, 2 or 4; default 4 on a HammingMesh, else 1) splits the vector: 4 drives
    every port direction of a four-port accelerator. ``shape`` (rows, ranks per row) overrides
    the grid (``spin.collectives.grid.grid_for``). Uses QPs ``qp`` .. ``qp + 4 streams - 1``."""
    hosts = check_args(scenario, count, dtype, hosts)
    topo = scenario.topology
    streams = default_streams(topo) if streams is None else check_streams(streams)
    grid = grid_for(topo, hosts, shape)
    w = itemsize(dtype)
    layouts, memory = layout(grid.p, grid.q, count, w, streams)
    plan = AllreducePlan(NAME, hosts, count, dtype, 0, 0, align(count * w), memory,
                         tuple(range(qp, qp + PHASES * streams)))
    check_memory(scenario, plan)
    b = Builder(scenario, hosts, dtype, qp, PHASES * streams)
    chunk = scenario.host.pipeline_chunk_bytes
    per_stream = [_stream_steps(grid, lay, PHASES * k, w, chunk)
                  for k, lay in enumerate(layouts)]
    b.mark_all(plan.start_mark)
    for rank in range(len(hosts)):
        for same_step in zip_longest(*(steps[rank] for steps in per_stream)):
            for ops in same_step:
                if ops:
                    _emit(b, rank, ops)
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
