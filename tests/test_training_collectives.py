"""The collectives a trace calls besides all-reduce move the right bytes: every rank's data
after the run is what the collective defines (all-gather, reduce-scatter, all-to-all,
broadcast), and a barrier lets no rank out before the last one came in. n = 4 and 5 (a ring
and a tree that do not fold evenly)."""
from __future__ import annotations

import numpy as np
import pytest

from spin.collectives.common import align, block_counts, offsets
from spin.config import HostConfig
from spin.runs import run
from spin.simulation import Scenario
from spin.topology import Topology
from spin.traces.model import COLLECTIVE, RankTrace, StepTrace, TraceOp
from spin.training import collectives as other
from spin.training.replay import ComputeModel, ReplayConfig, replay

NBYTES = 40_000          # not a multiple of n: blocks differ by one element


def _run(kind: str, n: int, inputs: np.ndarray, extra: int = 0):
    sc = Scenario(Topology.star(n), host=HostConfig(
        memory_bytes=-(-(other.memory_needed(kind, n, NBYTES) + extra) // 4096) * 4096))
    for r in range(n):
        sc.write_host_memory(r, 0, inputs[r])
    other.build(kind, sc, tuple(range(n)), NBYTES, qp=0)
    size = sc.host.memory_bytes
    res = run(sc, read=[(r, 0, size // 4, "float32") for r in range(n)]).require_finished()
    return [res.read(r, 0, size // 4, "float32") for r in range(n)]


def _inputs(n: int) -> np.ndarray:
    count = other.elements(NBYTES)
    return np.random.default_rng(n).integers(-100, 100, (n, count)).astype(np.float32)


@pytest.mark.parametrize("n", (4, 5))
def test_all_gather_gives_every_rank_every_block(n):
    x = _inputs(n)
    counts = block_counts(x.shape[1], n)
    off = offsets(counts)
    want = np.concatenate([x[r, off[r]:off[r + 1]] for r in range(n)])
    for mem in _run("all_gather", n, x):
        assert np.array_equal(mem[:x.shape[1]], want)


@pytest.mark.parametrize("n", (4, 5))
def test_reduce_scatter_leaves_each_rank_one_summed_block(n):
    """Ring order: rank r ends with the sum of block (r + 1) mod n (``spin.collectives.ring``)."""
    x = _inputs(n)
    counts = block_counts(x.shape[1], n)
    off = offsets(counts)
    total = x.sum(axis=0)
    for r, mem in enumerate(_run("reduce_scatter", n, x)):
        b = (r + 1) % n
        assert np.array_equal(mem[off[b]:off[b + 1]], total[off[b]:off[b + 1]])


@pytest.mark.parametrize("n", (4, 5))
def test_all_to_all_delivers_block_p_of_rank_r_to_rank_p(n):
    x = _inputs(n)
    count = x.shape[1]
    counts = block_counts(count, n)
    off = offsets(counts)
    out = align(count * 4) // 4
    mems = _run("all_to_all", n, x)
    for p in range(n):
        for r in range(n):
            if r != p:
                got = mems[p][out + off[r]:out + off[r] + counts[p]]
                assert np.array_equal(got, x[r, off[p]:off[p + 1]])


@pytest.mark.parametrize("n", (4, 5))
def test_broadcast_copies_the_roots_buffer_everywhere(n):
    x = _inputs(n)
    for mem in _run("broadcast", n, x):
        assert np.array_equal(mem[:x.shape[1]], x[0])


def test_barrier_releases_no_rank_before_the_last_arrives():
    n = 5
    ops = (TraceOp(1, COLLECTIVE, collective="barrier"),)
    trace = StepTrace("barrier", "test", tuple(RankTrace(r, f"r{r}", ops) for r in range(n)))
    late = replay(trace, config=ReplayConfig(compute=ComputeModel(delay_us={3: 20.0})))
    ends = [s.end_ps for s in late.spans]
    assert min(ends) > 20_000_000 and late.collectives[0].algo == "dissemination"
