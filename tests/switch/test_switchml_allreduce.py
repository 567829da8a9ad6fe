"""Allreduce by SwitchML aggregation in the switches, end to end: results against numpy (int32
exactly, float32 within the documented bounds), hierarchical trees with jobs sharing switches,
loss recovered from the shadow copies, identical results on 1 and 2 workers, and the speedup
over ring against the framing-corrected bound."""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switchml import G_ANSWERED, G_DROPPED
from handlers.switchml_worker import G_RETRANSMITS
from spin.collectives import switch as SWC
from spin.collectives.measure import allreduce_scenario, evaluate
from spin.collectives.switch import SwitchMLJob, install_jobs, switch_result_bound
from spin.collectives.theory import switch_speedup_bound
from spin.config import HostConfig, LinkConfig, NicConfig, SwitchConfig
from spin.simulation import Scenario, Simulation
from spin.testing import run, run_both
from spin.topologies import build_topology
from spin.wire import switchml as SW

from .conftest import SWITCH_LIBRARY

K = 256                                   # elements per packet at the default 1 KiB MTU


def _scenario(alg: str, n: int, count: int, dtype: str, **configs):
    sc, plan, inputs = allreduce_scenario(alg, n, count, dtype, **configs)
    sc.engine_programs = SWITCH_LIBRARY   # one engine for the whole switch suite
    return sc, plan, inputs


def _results(result, plan) -> np.ndarray:
    return np.array([result.read(h, plan.result_addr, plan.count, plan.storage_dtype)
                     for h in plan.hosts])


@pytest.mark.parametrize("mode", ["native", "quantized"])
def test_float32_within_the_documented_error(mode: str) -> None:
    count = 2 * K + 100
    sc, plan, inputs = _scenario("switch", 5, count, "float32")
    if mode == "quantized":                # rebuild the same inputs with the quantized mode
        sc = Scenario(sc.topology, host=sc.host, engine_programs=SWITCH_LIBRARY)
        plan = SWC.build(sc, count, "float32", inputs=inputs, mode="quantized")
    inputs = inputs * np.exp2(np.arange(count) % 7 * 3.0).astype(np.float32)  # mixed scales
    for rank, h in enumerate(plan.hosts):
        sc.write_host_memory(h, plan.input_addr, inputs[rank])
    result = run(sc, 1, read=plan.reads())
    result.require_finished()
    out = _results(result, plan)
    assert all(np.array_equal(o.view(np.uint32), out[0].view(np.uint32)) for o in out)
    exact = inputs.astype(np.float64).sum(axis=0)
    err = np.abs(out[0].astype(np.float64) - exact)
    bound = switch_result_bound(inputs, "float32", mode, K)
    assert np.all(err <= bound)
    assert err.max() > 0                    # float sums do round: the check can fail
    if mode == "quantized":                 # and the bound is tight: within 2**4 of the error
        assert err.max() > bound.max() / 16


def test_quantization_helpers_follow_switchml() -> None:
    from spin.collectives.quantize import block_exponents, dequantize, quantize
    x = np.array([0.75, -3.0, 0.0, 1e-3] + [0.0] * 4, np.float32)
    e = block_exponents(x, 4)
    assert list(e) == [2, -126]             # max|x| = 3 < 2**2; a zero block never raises e
    q = quantize(x, e, 2, 4)
    assert abs(int(q[1])) <= (2**31 - 1) // 2                 # n values cannot overflow
    assert np.allclose(dequantize(q, e, 2, 4), x, atol=2.0 ** -28)


@pytest.mark.parametrize("kind,params", [("leaf_spine", {}), ("fat_tree", {"k": 4}),
                                         ("hamming_mesh", {})])
def test_hierarchical_jobs_share_the_switches(kind: str, params: dict) -> None:
    """Two jobs at once on one fabric: every rank of job 0 and a third of the hosts in job 5,
    each switch holding both jobs' slots; both results exact."""
    topo = build_topology(kind, **params)
    n = len(topo.hosts)
    sc = Scenario(topo, engine_programs=SWITCH_LIBRARY)
    jobs = [SwitchMLJob(0, tuple(range(n)), 2 * K + 5, 0, 0x80000, window=4),
            SwitchMLJob(5, tuple(range(1, n, 3)), K + 1, 0x40000, 0x80000, window=2)]
    rng = np.random.default_rng(7)
    data = {}
    for j in jobs:
        for h in j.hosts:
            data[j.job, h] = rng.integers(-2**31, 2**31, j.count).astype(np.int32)
            sc.write_host_memory(h, j.addr, data[j.job, h])
    setup = install_jobs(sc, jobs)
    for j in jobs:
        for h in j.hosts:
            setup.start(sc.host_program(h), j)
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    assert not result.drops
    for j in jobs:
        want = np.sum([data[j.job, h] for h in j.hosts], axis=0, dtype=np.int32)
        for h in j.hosts:
            assert np.array_equal(sim.host_memory(h)[j.addr:j.addr + 4 * j.count].view(np.int32),
                                  want), (kind, j.job, h)
    tree = setup.trees[0]
    assert len(tree) > 2 and setup.roots[0] in tree          # a real multi-level tree
    shared = [s for s in setup.trees[5] if s in tree]
    assert shared                                             # the jobs share switches


def _lossy_star_job(count: int, seed: int, link: LinkConfig = LinkConfig(), **install):
    """Scenario of one int32 SwitchML job on a 4-host star (window 32, 15 us timeout), inputs
    from ``seed``: (scenario, setup, inputs)."""
    n = 4
    sc = Scenario(build_topology("star", hosts=n, link=link), engine_programs=SWITCH_LIBRARY,
                  host=HostConfig(memory_bytes=1 << 20))
    inputs = np.random.default_rng(seed).integers(-2**31, 2**31, (n, count)).astype(np.int32)
    for h in range(n):
        sc.write_host_memory(h, 0, inputs[h])
    job = SwitchMLJob(1, tuple(range(n)), count, 0, 4 * count, SW.MSG_SUM_INT32, window=32)
    setup = install_jobs(sc, [job], timeout_us=15.0, **install)
    for h in range(n):
        setup.start(sc.host_program(h), job)
    return sc, setup, inputs


def _run_exact(sc, inputs):
    """Run to the end; every rank holds the exact sum. Returns (simulation, result)."""
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    want = inputs.sum(axis=0, dtype=np.int32)
    for h in range(inputs.shape[0]):
        assert np.array_equal(sim.host_memory(h)[:4 * inputs.shape[1]].view(np.int32), want), h
    return sim, result


def test_loss_is_recovered_from_the_shadow_copies() -> None:
    """1% of contributions and 1% of results dropped in the switch (SwitchML's drop
    simulator): workers time out and resend; the switch answers completed slots from the
    shadow copy; the sum is still exact."""
    sc, setup, inputs = _lossy_star_job(64 * K, 3, drop_ppm=10_000, drop_result_ppm=10_000)
    sim, _ = _run_exact(sc, inputs)
    sw = sim.handler_memory(setup.contexts["s0"])
    assert sw[G_DROPPED] > 0 and sw[G_ANSWERED] > 0
    assert sum(sim.handler_memory(setup.contexts[h])[G_RETRANSMITS] for h in range(4)) > 0


def test_random_link_loss_is_recovered() -> None:
    """1% of the frames on every link lost at random (LinkConfig.loss_rate): contributions and
    results alike. Workers time out and resend, the switch answers completed slots from the
    shadow copy, and the sum is exact."""
    sc, setup, inputs = _lossy_star_job(64 * K, 5, LinkConfig(loss_rate=0.01, loss_seed=7))
    sim, result = _run_exact(sc, inputs)
    assert result.drops.get("random_loss", 0) > 0
    assert sum(sim.handler_memory(setup.contexts[h])[G_RETRANSMITS] for h in range(4)) > 0


@pytest.mark.parametrize("seed,workers", [(1, 2), (2, 1), (4, 1), (6, 1)])
def test_five_percent_loss_cannot_stall_a_job(seed: int, workers: int) -> None:
    """5% loss on every link, host links included. With these seeds every host hung when the
    start message and the timer ticks still crossed the switch (a lost start message never
    starts its rank; a lost tick stopped a timer until a result came). Now both stay in the
    NIC (loopback, handler timer), so only contributions and results are lost and resent: the
    sum is exact, identically on 1 and 2 workers."""
    count = 8 * K
    sc, _, inputs = _lossy_star_job(count, seed, LinkConfig(loss_rate=0.05, loss_seed=seed))
    if workers == 1:
        _, result = _run_exact(sc, inputs)
    else:
        reads = [(h, 0, count, "int32") for h in range(4)]
        result = run_both(sc, workers, read=reads)
        result.require_finished()
        want = inputs.sum(axis=0, dtype=np.int32)
        assert all(np.array_equal(result.read(*r), want) for r in reads)
    assert result.drops.get("random_loss", 0) > 0
    assert sum(result.nic(h).loopback_frames for h in range(4)) == 4      # the start messages
    assert all(result.nic(h).timers >= 1 for h in range(4))


def test_speedup_over_ring_meets_the_framing_corrected_bound() -> None:
    """Uncongested star, large vectors: ring time / switch time within 5% of
    2(n-1)/n * eta_switch / eta_ring. As the bound, the model leaves reduction costs out
    (host reduce cost 0); the switch aggregates at line rate (enough units, as a Tofino
    pipeline) and the NIC queues enough frames to overlap the PCIe reads of its one-packet
    messages."""
    n, count = 4, (16 << 20) // 4
    configs = dict(host=HostConfig(reduce_ps_per_byte=0.0), switch=SwitchConfig(hpus=256),
                   nic=NicConfig(tx_window_frames=32))
    times = {}
    for alg in ("ring", "switch"):
        sc, plan, inputs = _scenario(alg, n, count, "int32", **configs)
        m = evaluate(run(sc, 1, read=plan.reads()), plan, inputs)
        assert m.correct
        times[alg] = m.time_ps
    bound = switch_speedup_bound(sc, n)
    assert bound == pytest.approx(1.5 * (1024 / 1122) / (1024 / 1106))
    assert times["ring"] / times["switch"] == pytest.approx(bound, rel=0.05)


def test_bad_setups_are_refused_by_name() -> None:
    from spin.errors import ConfigError
    sc = Scenario(build_topology("star", hosts=2), engine_programs=SWITCH_LIBRARY)
    job = SwitchMLJob(0, (0, 1), 10, 0, 4096)
    install_jobs(sc, [job])
    with pytest.raises(ConfigError, match="already installed on 0, 1, s0"):
        install_jobs(sc, [SwitchMLJob(1, (0, 1), 10, 0, 4096)])
    with pytest.raises(ConfigError, match="quantized mode converts float32 only"):
        SWC.build(Scenario(build_topology("star", hosts=2)), 10, "float16", mode="quantized")
    with pytest.raises(ConfigError, match="job numbers must differ"):
        install_jobs(Scenario(build_topology("star", hosts=2)), [job, job], qp=1)


# last: its worker processes load the engine the tests above compiled
def test_int32_is_exact_and_identical_on_one_and_two_workers() -> None:
    sc, plan, inputs = _scenario("switch", 4, 3 * K + 17, "int32")    # last packet is short
    result = run_both(sc, 2, read=plan.reads())
    m = evaluate(result, plan, inputs)
    assert m.correct and m.max_abs_error == 0
    assert np.array_equal(_results(result, plan)[0], inputs.sum(axis=0, dtype=np.int32))
    # the host posts one start and consumes one event: two message overheads of CPU
    assert m.host_cpu_ps_per_rank == pytest.approx(
        (sc.host.send_overhead_ns + sc.host.recv_overhead_ns) * 1000, rel=0.05)
