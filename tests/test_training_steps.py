"""Data- and pipeline-parallel training steps written by tools/make_training_step.py: they
replay to completion and their virtual times follow the schedule (more micro-batches take
longer, a step is at least one micro-batch's way through every stage, compute adds up, the
bytes each rank sends are its activations and its share of the ring all-reduce); generated
and stored payload give the same step; bad schedules of 1,024 ranks fail in one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from spin.errors import ConfigError, TraceError
from spin.topologies import build_topology
from spin.trace_formats import read_chakra, read_goal
from spin.training import ReplayConfig, replay
from tools.make_training_step import TrainingStep, main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "training"

# small and fast: 2 stages x 4 replicas, 16 KiB activations, 64 KiB gradients per stage
SMALL = dict(stages=2, replicas=4, layers=4, hidden_size=128, micro_batch_tokens=256,
             activation_bytes=16 << 10, gradient_bytes=64 << 10)


def run_step(tmp_path, name="step", config=None, **changes):
    """(TrainingStep, StepReport) of a small step replayed on a star of its ranks."""
    step = TrainingStep(**{**SMALL, **changes})
    trace = read_goal(step.write(tmp_path / f"{name}.goal"))
    assert sum(len(r.ops) for r in trace.ranks) == step.ops
    return step, replay(trace, config=config)


def test_a_small_step_replays_and_its_times_follow_the_schedule(tmp_path):
    step, rep = run_step(tmp_path, micro_batches=2)
    _, more = run_step(tmp_path, "more", micro_batches=4)
    assert [r.rank for r in rep.ranks] == list(range(8))
    for s, m in ((step, rep), (TrainingStep(**SMALL, micro_batches=4), more)):
        per_batch_us = (s.forward_ns(0) + s.backward_ns(0)) / 1000
        # every rank computes each micro-batch's forward and backward once, nothing else
        assert all(r.compute_us == pytest.approx(s.micro_batches * per_batch_us, abs=1e-3)
                   for r in m.ranks)
        # micro-batch 0 goes forward through every stage and back before the step can end
        assert m.step_us >= s.stages * per_batch_us
    assert more.step_us > rep.step_us + 2 * (step.forward_ns(0) + step.backward_ns(0)) / 1000


def test_each_rank_sends_its_activations_and_its_share_of_the_allreduce(tmp_path):
    """On the wire (payload its NIC read to send): M activations to each neighbouring stage,
    and 2(D-1)/D of the stage's gradient in the ring."""
    step, rep = run_step(tmp_path, micro_batches=3)
    d, grad, act = step.replicas, SMALL["gradient_bytes"], SMALL["activation_bytes"]
    for r in rep.ranks:
        stage = r.rank // d
        neighbours = (stage > 0) + (stage < step.stages - 1)
        assert r.sent_bytes == 3 * act * neighbours + 2 * (d - 1) * grad // d


def test_ring_reductions_add_their_compute_when_modelled(tmp_path):
    """--reduce-gbytes-per-s adds a calc after each reduce-scatter receive: D - 1 blocks of
    G/D at that rate, on top of the micro-batches' compute."""
    step, rep = run_step(tmp_path, micro_batches=2, reduce_gbytes_per_s=10.0)
    block = SMALL["gradient_bytes"] // step.replicas
    reduce_us = (step.replicas - 1) * round(block / 10.0) / 1000
    per_batch_us = (step.forward_ns(0) + step.backward_ns(0)) / 1000
    assert all(r.compute_us == pytest.approx(2 * per_batch_us + reduce_us, abs=1e-3)
               for r in rep.ranks)


def test_one_f_one_b_keeps_fewer_micro_batches_in_flight_than_gpipe():
    """1F1B's point: stage s holds at most P - s forwards not yet backwarded (GPipe: all M);
    each micro-batch goes forward before backward, once each."""
    for schedule, most in (("1f1b", lambda p, s, m: min(p - s, m)),
                           ("gpipe", lambda p, s, m: m)):
        step = TrainingStep(**{**SMALL, "stages": 4, "layers": 4}, micro_batches=6,
                            schedule=schedule)
        for s in range(4):
            order = step.order(s)
            assert sorted(order) == sorted([("f", i) for i in range(6)]
                                           + [("b", i) for i in range(6)])
            assert all(order.index(("f", i)) < order.index(("b", i)) for i in range(6))
            in_flight = [sum(1 if k == "f" else -1 for k, _ in order[:j + 1])
                         for j in range(len(order))]
            assert max(in_flight) == most(4, s, 6)


def test_gpipe_replays_with_the_same_compute(tmp_path):
    _, one = run_step(tmp_path, micro_batches=3)
    _, gpipe = run_step(tmp_path, "gpipe", micro_batches=3, schedule="gpipe")
    assert [r.compute_us for r in gpipe.ranks] == [r.compute_us for r in one.ranks]
    assert [r.sent_bytes for r in gpipe.ranks] == [r.sent_bytes for r in one.ranks]


def test_generated_and_stored_payload_give_the_same_step(tmp_path):
    """A schedule of sends, receives and compute reads no payload: spin train generates it by
    default, and storing every byte changes nothing but the memory used."""
    step = TrainingStep(**SMALL, micro_batches=2)
    trace = read_goal(step.write(tmp_path / "s.goal"))
    topo = build_topology("fat_tree", k=4)
    generated = replay(trace, topo)
    stored = replay(trace, topo, ReplayConfig(payload="stored"))
    assert (generated.payload, stored.payload) == ("generated", "stored")
    a, b = generated.to_dict(), stored.to_dict()
    assert a.pop("payload") != b.pop("payload") and a == b
    assert generated.spans == stored.spans


def test_a_generated_payload_is_refused_where_a_collective_reduces():
    trace = read_chakra(EXAMPLES / "dp_step" / "dp_step")
    assert replay(trace).payload == "stored"        # its all-reduces sum in host memory
    with pytest.raises(ConfigError, match=r"payload='generated': the step's all_reduce "
                                          r"reduce\(s\) in host memory"):
        replay(trace, config=ReplayConfig(payload="generated"))
    with pytest.raises(ConfigError, match=r"payload='kept'; valid choices: stored, generated"):
        ReplayConfig(payload="kept")


def test_ranks_waiting_on_each_other_are_named_by_their_trace_nodes(tmp_path):
    """Messages match in count, so validation passes; stage 0 waiting for micro-batch 0's
    backward before sending its forward deadlocks across ranks. The error names the nodes,
    not the host ops the engine stopped at."""
    path = TrainingStep(**SMALL, micro_batches=2).write(tmp_path / "dead.goal")
    text = path.read_text()
    end = text.index("\n}\n")                  # rank 0's block
    path.write_text(text[:end] + "\nfs0 requires b0" + text[end:])
    with pytest.raises(TraceError) as exc:
        replay(read_goal(path))
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("dead: 8 of 8 ranks never finished")
    assert "rank 0 at node br0 (recv of 16384 B from rank 4 tag 2)" in msg
    assert msg.endswith("(a deadlock)")


@pytest.fixture(scope="module")
def large_schedule(tmp_path_factory):
    """1,024 ranks (128 stages x 8 replicas, one micro-batch: 35k ops, read in under a second)."""
    step = TrainingStep(stages=128, replicas=8, micro_batches=1, layers=128)
    path = step.write(tmp_path_factory.mktemp("large") / "large.goal")
    return step, path.read_text()


@pytest.mark.parametrize("old, new, problem", [
    # rank 0's first activation to stage 1 (rank 8) sent under another tag: rank 8's receive
    # has no matching send
    ("fs0: send 262144b to 8 tag 0", "fs0: send 262144b to 8 tag 5",
     "large.goal rank 8: node fr0: 0 send(s) of 262144 B from rank 0 to rank 8 with tag 0 but "
     "1 matching recv(s)"),
    # ... to a rank the schedule does not have
    ("fs0: send 262144b to 8 tag 0", "fs0: send 262144b to 4096 tag 0",
     "large.goal rank 0: node fs0: send peer rank 4096; valid peers are 0..1023 other than 0"),
])
def test_a_corrupted_thousand_rank_schedule_fails_in_one_line(tmp_path, large_schedule, old,
                                                              new, problem):
    step, text = large_schedule
    assert step.ranks == 1024 and text.count(old) == 1
    path = tmp_path / "large.goal"
    path.write_text(text.replace(old, new))
    with pytest.raises(TraceError) as exc:
        read_goal(path)
    assert str(exc.value) == f"{tmp_path}/{problem}"


@pytest.mark.parametrize("argv, problem", [
    (["--stages", "0"], "stages = 0: expected an integer 1..1,048,576"),
    (["--stages", "4", "--layers", "2"], "layers = 2 < stages = 4: every stage needs a layer"),
    (["--replicas", "8", "--gradient-bytes", "4"],
     "gradient_bytes = 4 B (a stage's) < replicas = 8: the ring sends each replica a block of "
     "at least 1 B"),
    (["--micro-batches", "many"], "argument --micro-batches: invalid int value: 'many'"),
    (["--schedule", "zb"], "argument --schedule: invalid choice: 'zb'"),
    (["--replicas", "1024"], "the schedule would hold 33,882,112 operations, more than the "
                             "reader's limit of 1,000,000"),
])
def test_bad_generator_options_are_one_line(tmp_path, capsys, argv, problem):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "x.goal"), *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert err.startswith("make_training_step.py: error: ") and problem in err
    assert not (tmp_path / "x.goal").exists()


def test_the_generator_writes_what_it_says(tmp_path, capsys):
    assert main([str(tmp_path / "s.goal"), "--stages", "2", "--replicas", "4",
                 "--micro-batches", "2"]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 's.goal'}: 8 ranks, 160 operations\n"
    trace = read_goal(tmp_path / "s.goal")
    assert trace.n_ranks == 8 and sum(len(r.ops) for r in trace.ranks) == 160
