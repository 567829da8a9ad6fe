"""AI traffic workloads (spin.workloads): every flow delivers the right bytes, dependent steps
keep their order, phases and incast behave as the patterns say, and runs are deterministic for
any worker count. No handler programs: every test shares the plain engine."""
from pathlib import Path

import pytest

from spin import Scenario, Simulation
from spin.config import HostConfig
from spin.errors import ConfigError, HostMemoryError
from spin.fabric import run_scenario
from spin.tools.scenario_file import load_scenario, load_scenario_text
from spin.topologies import build_topology
from spin.workloads import (build_workload, flow_messages, workload_kinds, workload_report)
from spin.workloads.metrics import FctStats, PathModel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "workloads"
MIB = 1 << 20


def _run(sc):
    sim = Simulation(sc, quiet=True)
    result = sim.run(quiet=True)
    result.require_finished()
    return sim, result


def _assert_bytes(sim, wl):
    """Every flow's receiver region holds exactly its sender's bytes."""
    assert wl.flows
    for f in wl.flows:
        got = sim.host_memory(f.dst)[f.remote_addr:f.remote_addr + f.nbytes].tobytes()
        assert got == wl.expected_bytes(f), f
        assert any(got)                      # the pattern, not untouched zeros


def test_registry_lists_the_patterns():
    assert {"permutation", "ring_allreduce", "all_to_all", "incast", "htsim_cm", "shifts"} <= \
        set(workload_kinds())


def test_permutation_delivers_every_byte_and_is_a_derangement():
    sc = Scenario(build_topology("fat_tree", k=4), host=HostConfig(memory_bytes=MIB))
    wl = build_workload(sc, "permutation", message_bytes=65536, iterations=2,
                        start_skew_ns=1500, seed=3)
    sim, result = _run(sc)
    _assert_bytes(sim, wl)
    first = [f for f in wl.flows if f.iteration == 0]
    assert sorted(f.src for f in first) == sorted(f.dst for f in first) == list(range(16))
    assert all(f.src != f.dst for f in first)
    assert len(flow_messages(wl, result)) == 32
    rep = workload_report(wl, sc, result)
    assert rep.fct.count == 32 and rep.missing_flows == 0
    assert rep.fct.p50_ps <= rep.fct.p99_ps <= rep.fct.max_ps
    assert rep.slowdown_mean >= 1.0              # the ideal is a lower bound
    assert len(rep.collective_ps) == 2 and min(rep.collective_ps) >= rep.ideal_collective_ps


def test_ring_steps_wait_for_the_previous_receive():
    n, iters = 4, 2
    sc = Scenario(build_topology("star", hosts=n), host=HostConfig(memory_bytes=MIB))
    wl = build_workload(sc, "ring_allreduce", message_bytes=n * 8192, iterations=iters)
    sim, result = _run(sc)
    _assert_bytes(sim, wl)
    steps = 2 * (n - 1)
    msgs = flow_messages(wl, result)
    assert len(msgs) == iters * n * steps
    for h in range(n):
        sent = sorted(m.t_post_ps for m in msgs if m.src == h)
        got = sorted(m.t_done_ps for m in msgs if m.dst == h)
        for it in range(iters):
            for k in range(steps - 1):       # step k+1 of host h after its step k arrived
                assert sent[it * steps + k + 1] > got[it * steps + k]
        for it in range(1, iters):           # and a new iteration after the last receive
            assert sent[it * steps] > got[it * steps - 1]


def test_all_to_all_phases_deliver_n_times_n_minus_1_messages():
    n = 4
    sc = Scenario(build_topology("star", hosts=n), host=HostConfig(memory_bytes=MIB))
    wl = build_workload(sc, "all_to_all", message_bytes=4096, iterations=2)
    sim, result = _run(sc)
    _assert_bytes(sim, wl)                   # combine returns each host's own dispatched chunk
    msgs = flow_messages(wl, result)
    dispatch = [m for m in msgs if m.qp == 1]
    combine = [m for m in msgs if m.qp == 2]
    assert len(dispatch) == len(combine) == 2 * n * (n - 1)
    for h in range(n):                       # combine starts after the host's dispatch inputs
        last_in = sorted(m.t_done_ps for m in dispatch if m.dst == h)[n - 2]
        assert min(m.t_post_ps for m in combine if m.src == h) > last_in


def test_shifts_sample_the_all_to_all():
    """Every host sends to the hosts the same random offsets away and receives one chunk per
    offset; with as many shifts as peers it is the all-to-all's dispatch."""
    from spin.workloads.shifts import offsets
    n = 8
    sc = Scenario(build_topology("star", hosts=n), host=HostConfig(memory_bytes=MIB))
    wl = build_workload(sc, "shifts", message_bytes=2048, shifts=3, seed=4)
    sim, _ = _run(sc)
    _assert_bytes(sim, wl)
    ds = offsets(n, 3, 4)
    assert len(set(ds)) == 3 and all(1 <= d < n for d in ds)
    assert sorted((f.src, f.dst) for f in wl.flows) == sorted((h, (h + d) % n) for h in range(n)
                                                              for d in ds)
    assert offsets(n, 99, 0) == list(range(1, n))


def test_incast_is_bounded_by_the_receiver_link():
    sc = Scenario(build_topology("star", hosts=8), host=HostConfig(memory_bytes=MIB))
    size = 131072
    wl = build_workload(sc, "incast", message_bytes=size, iterations=2)
    sim, result = _run(sc)
    _assert_bytes(sim, wl)
    assert not result.drops
    rate_gbps = PathModel(sc).host_rate_gbps[0]
    for it in range(2):
        msgs = [m for m in flow_messages(wl, result)][it * 7:(it + 1) * 7]
        assert {m.src for m in msgs} == set(range(1, 8)) and {m.dst for m in msgs} == {0}
        span_ps = max(m.t_done_ps for m in msgs) - min(m.t_post_ps for m in msgs)
        gbps = 7 * size * 8000 / span_ps
        assert 0.6 * rate_gbps < gbps < rate_gbps, gbps


def test_same_seed_same_run_other_seed_other_pattern():
    def build(seed):
        sc = Scenario(build_topology("fat_tree", k=4), host=HostConfig(memory_bytes=MIB))
        return sc, build_workload(sc, "permutation", message_bytes=32768, start_skew_ns=3000,
                                  seed=seed, iterations=2)
    (a, wa), (b, wb), (_, wc) = build(5), build(5), build(6)
    assert wa.flows == wb.flows and wa.flows != wc.flows
    ra, rb = _run(a)[1], _run(b)[1]
    assert ra.deterministic_digest() == rb.deterministic_digest()


def test_one_and_two_workers_agree():
    sc = Scenario(build_topology("fat_tree", k=4), host=HostConfig(memory_bytes=MIB))
    build_workload(sc, "all_to_all", message_bytes=2048, start_skew_ns=800, seed=2)
    one = run_scenario(sc, workers=1, quiet=True)
    two = run_scenario(sc, workers=2, quiet=True)
    assert one.deterministic_digest() == two.deterministic_digest()
    assert one.marks == two.marks


def test_fct_stats_by_nearest_rank():
    s = FctStats.of(range(1, 101))
    assert (s.count, s.mean_ps, s.p50_ps, s.p99_ps, s.max_ps) == (100, 50.5, 50, 99, 100)
    with pytest.raises(ConfigError, match="no completed flow"):
        FctStats.of([])


def test_clear_errors():
    sc = Scenario(build_topology("star", hosts=4))
    with pytest.raises(ConfigError, match="unknown workload; valid choices: all_to_all"):
        build_workload(sc, "tornado")
    with pytest.raises(ConfigError, match=r"workload.message_bytes = 0: .*valid: >= 1"):
        build_workload(sc, "permutation", message_bytes=0)
    with pytest.raises(ConfigError, match="set \\[host\\] memory_bytes >= 4194304") as short:
        build_workload(sc, "permutation", message_bytes=2 * MIB)
    assert isinstance(short.value, HostMemoryError) and short.value.needed_bytes == 4 * MIB
    with pytest.raises(ConfigError, match="must be a multiple of the 4 hosts"):
        build_workload(sc, "ring_allreduce", message_bytes=4098)
    with pytest.raises(ConfigError, match="senders = 9: at most 3"):
        build_workload(sc, "incast", senders=9)
    with pytest.raises(ConfigError, match="unknown parameter 'size' of kind = 'permutation'; valid"):
        build_workload(sc, "permutation", size=3)
    build_workload(sc, "incast", message_bytes=64)
    with pytest.raises(ConfigError, match="label = 'incast': another workload"):
        build_workload(sc, "incast", message_bytes=64)


def test_workload_table_in_a_scenario_file():
    text = ('[topology]\nkind = "star"\nhosts = 4\n[workload]\nkind = "incast"\n'
            'message_bytes = 4096\nsenders = 2\nseed = 4\n')
    sc, opts = load_scenario_text(text, "inline.toml")
    assert opts.workload.kind == "incast" and len(opts.workload.flows) == 2
    with pytest.raises(ConfigError, match=r"inline.toml: workload.senders = 0"):
        load_scenario_text(text.replace("senders = 2", "senders = 0"), "inline.toml")
    with pytest.raises(ConfigError, match=r"inline.toml: workload.kind = 'x': unknown workload"):
        load_scenario_text(text.replace('"incast"', '"x"'), "inline.toml")


@pytest.mark.parametrize("name", ["permutation", "ring_allreduce", "all_to_all", "incast",
                                  "htsim_chains"])
def test_example_scenarios_run(name):
    sc, opts = load_scenario(EXAMPLES / f"{name}.toml")
    sim, result = _run(sc)
    _assert_bytes(sim, opts.workload)
    rep = workload_report(opts.workload, sc, result)
    assert rep.missing_flows == 0 and rep.fct.count == len(opts.workload.flows)


def test_large_permutation_example_loads_lossless():
    """The 128-host benchmark scenario (run by hand: about 10 s): PFC on, every host a flow."""
    sc, opts = load_scenario(EXAMPLES / "fat_tree_128_permutation.toml")
    assert sc.switch.pfc and sc.n_hosts == 128 and len(opts.workload.flows) == 128
    assert sorted(f.dst for f in opts.workload.flows) == list(range(128))
