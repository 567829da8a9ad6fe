"""Hierarchical collectives on a rail-optimised fabric: local groups come from the topology
(a server's GPUs behind NVLink), the hierarchical all-reduce, all-gather and reduce-scatter
give exactly the flat ones' results (int32 sums equal numpy's, every block everywhere), take less virtual time
than the flat ring where a NIC then carries 1/g of the ring's bytes, and are what "auto" picks
there, and only there."""
from __future__ import annotations

import numpy as np
import pytest

from spin.collectives.common import block_counts, offsets
from spin.collectives.locality import local_groups
from spin.collectives.measure import lossless, measure
from spin.config import HostConfig, NicConfig, SwitchConfig
from spin.runs import run
from spin.simulation import Scenario
from spin.topologies import build_topology
from spin.topology import Topology
from spin.trace_formats.model import COLLECTIVE, RankTrace, StepTrace, TraceOp
from spin.training import collectives as other
from spin.training.collective_choice import PathCosts, resolve, resolve_allreduce
from spin.training.plan import plan_replay


def _rail(**extra) -> Topology:
    """4 servers of 4 GPUs, 2 servers per scalable unit: 16 ranks, groups of 4."""
    return build_topology("rail_optimized", servers=4, gpus_per_server=4, servers_per_su=2,
                          **extra)


def _costs(topology, preset: str = "gpu") -> PathCosts:
    return PathCosts.of(topology, HostConfig.preset(preset), NicConfig(), SwitchConfig())


def test_a_servers_gpus_are_its_local_group_and_a_star_has_none():
    found = local_groups(_rail(), tuple(range(16)))
    assert found.groups == tuple(tuple(range(s * 4, s * 4 + 4)) for s in range(4))
    assert found.rails[1] == (1, 5, 9, 13)
    assert (found.local_gbps, found.remote_gbps, found.faster_inside) == (1600, 400, True)
    assert local_groups(Topology.star(8), tuple(range(8))) is None
    # without NVLink the nearest ranks share a rail leaf, over the same 400 Gb/s links as
    # everyone else: groups, but no faster inside
    flat = local_groups(_rail(scale_up=False), tuple(range(16)))
    assert flat.groups[0] == (0, 4) and not flat.faster_inside
    assert not local_groups(build_topology("fat_tree", k=4), tuple(range(16))).faster_inside


@pytest.mark.parametrize("preset", ("cpu", "gpu"))
def test_hierarchical_all_reduce_sums_exactly_and_beats_the_flat_ring(preset):
    """int32 inputs over the whole range (sums wrap) and 40,004 B, not a multiple of the 16
    blocks: every rank's result equals numpy's sum; the hierarchy takes 2(g-1) + 2(M-1) = 12
    steps instead of 30 and a NIC carries 2(M-1)/M S/g instead of 2(n-1)/n S, so it is faster
    (measured 74.8 against 184.0 us, gpu preset)."""
    topo, host = _rail(), HostConfig.preset(preset)
    hier = measure("hierarchical", 16, 40_004, "int32", topology=topo, host=host)
    ring = measure("ring", 16, 40_004, "int32", topology=topo, host=host)
    assert hier.correct and ring.correct
    assert hier.time_ps < 0.6 * ring.time_ps, (hier.time_ps, ring.time_ps)


def test_hierarchical_all_reduce_on_a_star_is_the_ring():
    """No local groups: one group, whose rings are the flat ring's, to the picosecond."""
    host = HostConfig.preset("gpu")
    hier = measure("hierarchical", 5, 40_004, "int32", host=host)
    ring = measure("ring", 5, 40_004, "int32", host=host)
    assert hier.correct and hier.time_ps == ring.time_ps


def _collective(kind: str, topology, n: int, algo: str, nbytes: int = 40_000):
    """Run ``kind`` on small integers in float32 (exact sums); (algorithm built, inputs, each
    rank's data after the run, the last rank's end in ps)."""
    x = np.random.default_rng(3).integers(-100, 100, (n, other.elements(nbytes))
                                          ).astype(np.float32)
    memory = -(-other.memory_needed(kind, n, nbytes) // 4096) * 4096
    sc = Scenario(topology, host=HostConfig.preset("gpu").model_copy(
        update={"memory_bytes": memory}), switch=lossless())
    for r in range(n):
        sc.write_host_memory(r, 0, x[r])
    built = other.build(kind, sc, tuple(range(n)), nbytes, qp=0, algo=algo)
    for r in range(n):
        sc.host_program(r).mark("end")
    count = x.shape[1]
    res = run(sc, read=[(r, 0, count, "float32") for r in range(n)]).require_finished()
    return built, x, [res.read(r, 0, count, "float32") for r in range(n)], \
        max(res.mark("end", r) for r in range(n))


def test_hierarchical_all_gather_gives_every_rank_every_block_sooner_than_the_ring():
    topo = _rail()
    _, x, got, hier_ps = _collective("all_gather", topo, 16, "hierarchical")
    counts = block_counts(x.shape[1], 16)
    off = offsets(counts)
    want = np.concatenate([x[r, off[r]:off[r + 1]] for r in range(16)])
    for mem in got:
        assert np.array_equal(mem, want)
    _, _, flat, ring_ps = _collective("all_gather", topo, 16, "ring")
    assert all(np.array_equal(m, want) for m in flat)
    assert hier_ps < ring_ps, (hier_ps, ring_ps)


def test_hierarchical_reduce_scatter_leaves_each_rank_its_summed_block_sooner():
    """Each group sums its rails' blocks, each rail its ranks' blocks: rank r ends with the
    sum of block r (the flat ring's rank r ends with block r + 1)."""
    topo = _rail()
    _, x, got, hier_ps = _collective("reduce_scatter", topo, 16, "hierarchical")
    counts = block_counts(x.shape[1], 16)
    off = offsets(counts)
    total = x.sum(axis=0)
    for r, mem in enumerate(got):
        assert np.array_equal(mem[off[r]:off[r + 1]], total[off[r]:off[r + 1]])
    _, _, _, ring_ps = _collective("reduce_scatter", topo, 16, "ring")
    assert hier_ps < ring_ps, (hier_ps, ring_ps)


def test_auto_picks_the_hierarchy_only_where_its_groups_are_faster_inside():
    ranks, big = tuple(range(16)), 16 << 20
    for kind in ("all_gather", "reduce_scatter"):
        assert resolve(kind, "auto", 16, big, _costs(_rail()), ranks) == "hierarchical"
    assert resolve_allreduce(16, big, _costs(_rail()), ranks) == "hierarchical"
    for topo in (Topology.star(16), _rail(scale_up=False), build_topology("fat_tree", k=4)):
        for kind in ("all_gather", "reduce_scatter"):
            assert resolve(kind, "auto", 16, big, _costs(topo), ranks) == "ring"
        assert resolve_allreduce(16, big, _costs(topo), ranks) == "ring"
    # without the hosts (a caller that does not know them) auto stays flat
    assert resolve("all_gather", "auto", 16, big, _costs(_rail())) == "ring"


def test_a_replay_asking_auto_gets_the_hierarchy_on_a_rail_fabric():
    ops = (TraceOp(1, COLLECTIVE, collective="all_reduce", nbytes=16 << 20),
           TraceOp(2, COLLECTIVE, collective="all_gather", nbytes=16 << 20, deps=(1,)))
    trace = StepTrace("step", "test", tuple(RankTrace(r, f"r{r}", ops) for r in range(16)))
    plan = plan_replay(trace, "auto", {"all_gather": "auto"}, 1 << 30, costs=_costs(_rail()))
    assert [c.algo for c in plan.calls] == ["hierarchical", "hierarchical"]
    flat = plan_replay(trace, "auto", {"all_gather": "auto"}, 1 << 30,
                       costs=_costs(Topology.star(16)))
    assert [c.algo for c in flat.calls] == ["ring", "ring"]


def test_a_replayed_step_with_auto_all_reduces_exactly_over_the_hierarchy():
    """``spin train --algo auto`` on the rail fabric: two all-reduces by the hierarchy, sums
    checked exactly by the replay, sooner than with the flat ring."""
    from spin.training.replay import ReplayConfig, replay
    ops = (TraceOp(1, COLLECTIVE, collective="all_reduce", nbytes=4 << 20),
           TraceOp(2, COLLECTIVE, collective="all_reduce", nbytes=4 << 20, deps=(1,)))
    trace = StepTrace("step", "test", tuple(RankTrace(r, f"r{r}", ops) for r in range(16)))
    auto = replay(trace, _rail(), ReplayConfig(algo="auto", host_preset="gpu"))
    ring = replay(trace, _rail(), ReplayConfig(algo="ring", host_preset="gpu"))
    assert [c.algo for c in auto.collectives] == ["hierarchical"] * 2
    assert auto.allreduce_correct and ring.allreduce_correct
    assert max(s.end_ps for s in auto.spans) < max(s.end_ps for s in ring.spans)
