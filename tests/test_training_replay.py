"""Training steps replayed on the fabric: every ASTRA-sim sample set, collectives checked
against their alpha-beta models and all-reduce values against numpy, overlap of compute with
offloaded collectives, stragglers, JSON and Perfetto outputs, determinism."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spin.collectives.theory import ring_model
from spin.errors import ConfigError, TraceError
from spin.simulation import Scenario
from spin.topologies import build_topology
from spin.topology import Topology
from spin.trace_formats import read_chakra, read_goal
from spin.trace_formats.chakra_writer import ChakraNode, write_rank
from spin.training import ComputeModel, ReplayConfig, replay

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "chakra-microbenchmarks"
EXAMPLES = ROOT / "examples" / "training"
MIB = 1 << 20


def sample(kind: str, npus: int):
    return read_chakra(DATA / kind / f"{npus}npus_1MB" / kind)


def model_us(kind: str, n: int, nbytes: int = MIB) -> float:
    """The alpha-beta time of the ring family on a star (spin.collectives.theory's terms):
    all-reduce 2(n-1) steps with reductions, reduce-scatter n-1 with, all-gather n-1 without."""
    m = ring_model(Scenario(Topology.star(n)))
    steps = (n - 1) * m.alpha_ps + (n - 1) / n * nbytes / m.bandwidth_bytes_per_ps
    reduce = (n - 1) * m.reduce_ps_per_byte * nbytes / n
    return {"all_reduce": m.time_ps(n, nbytes), "reduce_scatter": steps + reduce,
            "all_gather": steps}[kind] / 1e6


@pytest.mark.parametrize("kind", ("all_gather", "reduce_scatter"))
def test_auto_takes_log_steps_where_the_ring_pays_latency(kind):
    """1 MB on 16 ranks is 64 KiB blocks: "auto" runs recursive doubling (all-gather) or
    halving (reduce-scatter), 4 steps against the ring's 15, and is faster for it (measured:
    40.9 against 95.1 us; 237.5 against 291.7 us, where both add the same bytes at 5 GB/s)."""
    trace = sample(kind, 16)
    auto = replay(trace, config=ReplayConfig(host_preset="cpu"))
    ring = replay(trace, config=ReplayConfig(host_preset="cpu", per_kind={kind: "ring"}))
    assert auto.collectives[0].algo == ("rd" if kind == "all_gather" else "rh")
    assert auto.collectives[0].time_us < 0.85 * ring.collectives[0].time_us


@pytest.mark.parametrize("npus", (4, 16))
@pytest.mark.parametrize("kind", ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"))
def test_every_sample_trace_replays(kind, npus):
    """1 MB on 4 and 16 ranks: every rank finishes, the collective is reported once with its
    type, size and algorithm, and its time matches its model (the unpipelined ring of the
    cpu host preset: the model has no chunks; on 16 ranks "auto" would take recursive
    doubling or halving, see test_auto_takes_log_steps_where_the_ring_pays_latency)."""
    started = time.perf_counter()
    rings = {"all_gather": "ring", "reduce_scatter": "ring"}   # the model's algorithm
    rep = replay(sample(kind, npus), config=ReplayConfig(host_preset="cpu", per_kind=rings))
    wall = time.perf_counter() - started
    assert [r.rank for r in rep.ranks] == list(range(npus))
    (call,) = rep.collectives
    assert (call.type, call.bytes, call.ranks) == (kind, MIB, list(range(npus)))
    assert all(r.compute_us == 0 and r.exposed_comm_us == pytest.approx(r.step_us)
               for r in rep.ranks)
    assert rep.step_us == pytest.approx(call.time_us)
    if kind == "all_to_all":
        m = ring_model(Scenario(Topology.star(npus)))
        wire_us = (npus - 1) / npus * MIB / m.bandwidth_bytes_per_ps / 1e6
        assert wire_us < call.time_us < wire_us + 2 * (npus - 1) * m.alpha_ps / 1e6
    else:
        assert call.time_us == pytest.approx(model_us(kind, npus), rel=0.001)
    assert rep.allreduce_correct is (True if kind == "all_reduce" else None)
    print(f"{kind} {npus} ranks: {call.time_us:.3f} us virtual, {wall:.2f} s wall")


@pytest.mark.parametrize("algo", ("rd", "rabenseifner", "switch", "nic"))
def test_allreduce_algorithms_replay_exactly(algo):
    rep = replay(sample("all_reduce", 4), config=ReplayConfig(algo=algo))
    assert rep.collectives[0].algo == algo and rep.allreduce_correct is True


def test_repeated_allreduces_are_checked_in_place(tmp_path):
    """Two all-reduces in place give n times the sum; the check reads it back."""
    for rank in range(4):
        write_rank(tmp_path / f"two.{rank}.et", [
            ChakraNode(1, "COMM_COLL_NODE", attrs={"comm_type": "all_reduce", "comm_size": 4096}),
            ChakraNode(2, "COMM_COLL_NODE", data_deps=(1,),
                       attrs={"comm_type": "all_reduce", "comm_size": 4096})])
    for algo in ("ring", "rd"):          # in place; out of place (rd's result is elsewhere)
        rep = replay(read_chakra(tmp_path / "two"), config=ReplayConfig(algo=algo))
        assert len(rep.collectives) == 2 and rep.allreduce_correct is True


def test_json_shape_and_perfetto_trace(tmp_path):
    rep = replay(read_chakra(EXAMPLES / "dp_step" / "dp_step"))
    d = json.loads(rep.write_json(tmp_path / "out.json").read_text())
    assert set(d["ranks"][0]) >= {"rank", "step_us", "compute_us", "exposed_comm_us"}
    assert set(d["collectives"][0]) >= {"node_id", "type", "bytes", "algo", "time_us"}
    assert [r["rank"] for r in d["ranks"]] == [0, 1, 2, 3]
    assert sorted((c["type"], c["group"]) for c in d["collectives"]) == [
        ("all_gather", "tp0"), ("all_gather", "tp1"), ("all_reduce", ""), ("all_reduce", "")]
    assert [c["involved_dim"] for c in d["collectives"] if c["type"] == "all_gather"] == [
        [True], [True]]
    for r in d["ranks"]:
        assert r["step_us"] == pytest.approx(r["compute_us"] + r["exposed_comm_us"])
        # roofline embedding (64 MiB at 3350 GB/s) + 30 + 40 + 40 + 10 us; the CPU op skipped
        assert r["compute_us"] == pytest.approx((64 << 20) / 3350 / 1000 + 120, abs=1e-3)
    events = json.loads(rep.write_trace(tmp_path / "t.json").read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["tid"] for e in spans} == {0, 1, 2, 3}
    assert {e["cat"] for e in spans} == {"compute", "comm"}
    assert len(spans) == 4 * 9 and all(e["dur"] >= 0 for e in spans)


def _span(rep, rank, node):
    return next(s for s in rep.spans if s.rank == rank and s.node_id == node)


def test_offloaded_allreduce_overlaps_independent_compute():
    """backward_layer1 (node 6) does not depend on the all-reduce of layer 2's gradient (node 5):
    with the switch all-reduce it runs while the switch aggregates; with the host ring the
    CPU runs the ring first."""
    trace = read_chakra(EXAMPLES / "dp_step" / "dp_step")
    ring = replay(trace)
    switch = replay(trace, config=ReplayConfig(algo="switch"))
    for r in range(4):
        assert _span(ring, r, 6).start_ps >= _span(ring, r, 5).end_ps
        assert _span(switch, r, 6).start_ps < _span(switch, r, 5).end_ps
        assert _span(switch, r, 8).start_ps >= _span(switch, r, 5).end_ps   # optimizer waits
    exposed = [r.exposed_comm_us for r in switch.ranks]
    assert max(exposed) < min(r.exposed_comm_us for r in ring.ranks) / 3


def test_stragglers_slow_rank_and_late_rank():
    """On the cpu host (one message per ring step) a late rank delays the all-reduce's start
    but barely its duration."""
    base = replay(sample("all_reduce", 4), config=ReplayConfig(host_preset="cpu"))
    late = replay(sample("all_reduce", 4),
                  config=ReplayConfig(compute=ComputeModel(delay_us={2: 50.0}),
                                      host_preset="cpu"))
    assert late.ranks[2].delay_us == 50.0
    (call,) = late.collectives
    assert call.start_us == pytest.approx(50.0)
    assert late.step_us > base.step_us + 40
    assert call.time_us == pytest.approx(base.collectives[0].time_us, rel=0.02)
    # the late rank finds its neighbours' blocks waiting; the others wait for it
    assert late.ranks[2].exposed_comm_us < base.ranks[2].exposed_comm_us
    assert all(r.exposed_comm_us > base.step_us + 30 for r in late.ranks if r.rank != 2)
    goal = read_goal(EXAMPLES / "pipeline_4stages.goal")
    even = replay(goal)
    slow = replay(goal, config=ReplayConfig(compute=ComputeModel(slowdown={2: 2.0})))
    assert [r.compute_us for r in even.ranks] == [120.0] * 4
    assert [r.compute_us for r in slow.ranks] == [120.0, 120.0, 240.0, 120.0]
    assert slow.step_us > even.step_us + 100


def test_cli_table_shows_the_json_figures_and_quiet_silences_compile_lines(tmp_path, capsys,
                                                                           monkeypatch):
    """``spin train`` prints every rank figure of its JSON (the delay too, so a row reads as
    step = compute + exposed comm + delay); ``--quiet`` runs without compile or progress lines,
    which are on by default."""
    import sys

    from spin.cli import main
    replay_module = sys.modules["spin.training.replay"]   # the package's replay is a function
    quiet_runs: list[bool] = []
    real_run = replay_module.run
    monkeypatch.setattr(replay_module, "run",
                        lambda *a, **kw: quiet_runs.append(kw["quiet"]) or real_run(*a, **kw))
    out = tmp_path / "step.json"
    goal = str(EXAMPLES / "pipeline_4stages.goal")
    assert main(["train", goal, "--delay", "2=50", "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    lines = printed.out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:1] == ["rank"])
    assert lines[head].split() == ["rank", "step_us", "compute_us", "exposed_comm_us",
                                   "delay_us", "sent_bytes"]
    ranks = json.loads(out.read_text())["ranks"]
    for line, r in zip(lines[head + 1:head + 5], ranks):
        rank, step, compute, exposed, delay, sent = (float(x) for x in line.split())
        assert (rank, step, compute, exposed, delay, sent) == pytest.approx(
            (r["rank"], r["step_us"], r["compute_us"], r["exposed_comm_us"], r["delay_us"],
             r["sent_bytes"]), abs=5e-4)
        assert step == pytest.approx(compute + exposed + delay, abs=2e-3)
    assert ranks[2]["delay_us"] == 50.0
    assert main(["train", goal]) == 0
    assert quiet_runs == [True, False]



def test_a_large_trace_says_what_it_reads_and_plans_before_it_starts(capsys, monkeypatch):
    """Reading and planning a million-operation trace took 20 s with no line until each was
    done; above the thresholds (lowered here) a line comes first, the plan's with an estimate,
    and ``--quiet`` silences both."""
    import sys

    from spin.cli import main
    replay_module = sys.modules["spin.training.replay"]
    cli_module = sys.modules["spin.training.cli"]
    monkeypatch.setattr(cli_module, "BIG_TRACE_BYTES", 10)
    monkeypatch.setattr(replay_module, "BIG_TRACE_OPS", 10)
    goal = EXAMPLES / "pipeline_4stages.goal"
    n_ops = sum(len(r.ops) for r in read_goal(goal).ranks)
    assert main(["train", str(goal)]) == 0
    err = capsys.readouterr().err
    assert (f"spin train: reading {goal} ({goal.stat().st_size / 1e6:,.0f} MB; a trace this "
            f"large takes seconds") in err
    assert f"spin train: planning {n_ops:,} trace operations of 4 ranks (about 0 s at 14 us" in err
    assert main(["train", str(goal), "--quiet"]) == 0
    assert capsys.readouterr().err == ""

def test_goal_pipeline_messages_follow_dependencies():
    rep = replay(read_goal(EXAMPLES / "pipeline_4stages.goal"))
    # stage 1's first forward calc starts after stage 0's first calc and activation arrived
    assert _span(rep, 1, 1).start_ps > _span(rep, 0, 0).end_ps
    assert _span(rep, 1, 1).start_ps >= _span(rep, 1, 0).end_ps
    # stage 0's backward starts only after stage 1's gradient arrived
    assert _span(rep, 0, 5).start_ps >= _span(rep, 0, 4).end_ps
    assert rep.collectives == [] and rep.allreduce_correct is None


def test_ranks_take_the_first_hosts_of_another_topology():
    topo = build_topology("fat_tree", k=4)
    rep = replay(sample("all_reduce", 4), topo)
    assert rep.allreduce_correct is True and len(rep.ranks) == 4
    with pytest.raises(ConfigError, match="topology has 4 hosts; the trace all_reduce has 16"):
        replay(sample("all_reduce", 16), Topology.star(4))


def test_beyond_memory_is_refused_before_running():
    with pytest.raises(TraceError, match=r"all_reduce\.0\.et: node 0: all_reduce of 1048576 B on "
                                         r"4 ranks needs 1835008 B of host memory per rank, "
                                         r"beyond the limit of 1048576 B"):
        replay(sample("all_reduce", 4), config=ReplayConfig(max_memory_bytes=MIB))


def test_algorithm_choices_are_checked():
    with pytest.raises(ConfigError, match="all_reduce algorithm='nic-int8'"):
        replay(sample("all_reduce", 4), config=ReplayConfig(algo="nic-int8"))
    with pytest.raises(ConfigError, match="all_gather algorithm='tree'; valid choices: auto, ring, rd"):
        replay(sample("all_gather", 4), config=ReplayConfig(per_kind={"all_gather": "tree"}))
    with pytest.raises(ConfigError, match="broadcast algorithm='rd'; valid choices: auto, "):
        replay(sample("all_gather", 4), config=ReplayConfig(per_kind={"broadcast": "rd"}))
    with pytest.raises(ConfigError, match=r"--algo all_reduse=ring: unknown collective type "
                       r"'all_reduse'; valid types: all_reduce, .* \(did you mean 'all_reduce'\?\)"):
        replay(sample("all_gather", 4), config=ReplayConfig(per_kind={"all_reduse": "ring"}))
    with pytest.raises(ConfigError, match="slowdown of rank 9: the trace has ranks 0..3"):
        replay(sample("all_gather", 4),
               config=ReplayConfig(compute=ComputeModel(slowdown={9: 2.0})))


def test_replay_is_deterministic_across_worker_counts():
    trace = read_chakra(EXAMPLES / "dp_step" / "dp_step")
    one = replay(trace).to_dict()
    two = replay(trace, config=ReplayConfig(workers=2)).to_dict()
    assert one == two


def test_collectives_ordered_differently_across_ranks_are_a_deadlock(tmp_path):
    """Two groups of the same ranks, called in opposite orders: NCCL would hang; the replay
    names the node before anything runs."""
    def call(node_id, group):
        return ChakraNode(node_id, "COMM_COLL_NODE", attrs={
            "comm_type": "all_reduce", "comm_size": 4096, "pg_name": group})
    write_rank(tmp_path / "x.0.et", [call(1, "a"), ChakraNode(2, "COMM_COLL_NODE", data_deps=(1,),
               attrs={"comm_type": "all_reduce", "comm_size": 4096, "pg_name": "b"})])
    write_rank(tmp_path / "x.1.et", [call(1, "b"), ChakraNode(2, "COMM_COLL_NODE", data_deps=(1,),
               attrs={"comm_type": "all_reduce", "comm_size": 4096, "pg_name": "a"})])
    (tmp_path / "x.groups.json").write_text('{"a": [0, 1], "b": [0, 1]}')
    with pytest.raises(TraceError, match=r"x\.0\.et: node 1: all_reduce of group 'a' waits for "
                                         r"rank\(s\) \[1\], which call other collectives first"):
        replay(read_chakra(tmp_path / "x"))


def test_messages_match_by_source_and_tag(tmp_path):
    """Rank 1 waits for tag 2 (posted second, 64 KiB) before tag 1 (posted first, 8 B): the
    first receive ends when the large message is in, not when the small one arrives."""
    path = tmp_path / "tags.goal"
    path.write_text("num_ranks 2\nrank 0 {\na: send 8b to 1 tag 1\nb: send 65536b to 1 tag 2\n"
                    "}\nrank 1 {\nx: recv 65536b from 0 tag 2\ny: recv 8b from 0 tag 1\n}\n")
    rep = replay(read_goal(path))
    big, small = _span(rep, 1, 0), _span(rep, 1, 1)
    m = ring_model(Scenario(Topology.star(2)))
    assert big.end_ps > 65536 / m.bandwidth_bytes_per_ps        # after the 64 KiB crossed
    assert small.end_ps >= big.end_ps


def test_per_rank_compute_rate_applies_to_roofline_nodes():
    """Rank 1 at a tenth of the peak: its embedding (2 GFLOP; 64 MiB) becomes compute-bound
    (2e9 / 98.9e12 s = 20.2 us > 20.0 us of memory time); measured nodes keep their time."""
    trace = read_chakra(EXAMPLES / "dp_step" / "dp_step")
    rep = replay(trace, config=ReplayConfig(compute=ComputeModel(rank_tflops={1: 98.9})))
    assert _span(rep, 1, 1).end_ps - _span(rep, 1, 1).start_ps == pytest.approx(
        2e9 / 98.9e12 * 1e12, abs=2)
    assert _span(rep, 0, 1).end_ps - _span(rep, 0, 1).start_ps == pytest.approx(
        (64 << 20) / 3350 * 1000, abs=2)
    assert _span(rep, 1, 3).end_ps - _span(rep, 1, 3).start_ps == 30_000_000


def test_algorithm_per_collective_call():
    trace = read_chakra(EXAMPLES / "dp_step" / "dp_step")
    rep = replay(trace, config=ReplayConfig(per_node={7: "switch"}))
    algos = {c.node_id: c.algo for c in rep.collectives if c.type == "all_reduce"}
    assert algos == {5: "ring", 7: "switch"}
    with pytest.raises(ConfigError, match="algorithm for node 4: no collective has that node "
                                          "id on its group's first rank; collectives: 2, 5, 7"):
        replay(trace, config=ReplayConfig(per_node={4: "switch"}))


@pytest.mark.parametrize("fields, message", [
    ({"slowdown": {0: float("inf")}}, r"slowdown of rank 0 \(--slow\): factor=inf must be a "
                                      r"number in \(0, 1,000,000\]"),
    ({"slowdown": {0: float("nan")}}, r"factor=nan must be a number"),
    ({"delay_us": {0: 1e30}}, r"delay of rank 0 \(--delay\): 1e\+30 us must be in "
                              r"0\.\.1,000,000,000 us"),
    ({"rank_tflops": {1: float("inf")}}, r"peak of rank 1 \(--rank-tflops\): inf TFLOP/s"),
])
def test_straggler_values_out_of_range_name_the_option(fields, message):
    """An infinite factor or a 1e30 us delay was blamed on a host op's compute time."""
    with pytest.raises(ConfigError, match=message):
        ComputeModel(**fields)
