"""SwitchML conformance: the switch program against crafted packets, one test per test of
SwitchML's own suite (microsoft/SwitchML test/TwoWorkerTests.py), same names, same steps.

One switch, two SwitchML workers (h0, h1) and a host outside the job (h2). Each step injects one
frame at the switch's ingress port; the frames the switch sends in the next 20 µs are the
step's answer (SwitchML's ``verify_packet`` / ``verify_no_other_packets``). Results are checked
field by field after our parser verified the frame (ICRC included), and the switch's memory
(bitmaps, counts, shadow copies) after the run. All tests share one run: test i drives job i
(its own slot range, as if on a fresh switch) during the i-th millisecond.
"""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switchml import (G_ANSWERED, G_COMPLETED, G_CONTRIBUTIONS, G_IGNORED, G_PASSED,
                               RESULT_KNOWN, slot_view, switch_memory, switchml_switch_program)
from spin.engine.ports import inject_frames
from spin.handler import ExecutionContext
from spin.simulation import Simulation
from spin.topology import Topology
from spin.units import US
from spin.wire import OP_WRITE_ONLY, build_frame, parse
from spin.wire import switchml as SW

from .conftest import scenario

QP, K, SLOTS = 9, 8, 4
STEP_US, TEST_US = 20.0, 1000.0        # one step per 20 µs; each test in its own millisecond
SWITCH_NODE = 3                        # host count + switch index: the switch's own address
VALUES = {(w, x): (np.arange(K, dtype=np.int64) * (w + 2) * x - 7 * w).astype(np.int32)
          for w in (0, 1) for x in (1, 3)}
TESTS: dict[str, list] = {}            # test name -> [(worker, frame), ...], filled below


def packet(worker: int, pool_index: int, x: int = 1, ev_offset: int = 0, job: int = 0) -> bytes:
    """Worker ``worker``'s contribution to ``pool_index`` (set bit included), values scaled by
    ``x`` (SwitchML's make_switchml_packets(..., value multiplier))."""
    va = SW.pack(SW.MSG_SUM_INT32, job, pool_index, pool_index % SW.SET_BIT)
    data = VALUES[(worker, x)].tobytes()
    return build_frame(worker, 2, 0xC000 + worker + ev_offset, OP_WRITE_ONLY, QP, 5,
                       data, reth=(va, 0, len(data)))


def expected_sum(x: int = 1) -> np.ndarray:
    return VALUES[(0, x)] + VALUES[(1, x)]


class Run:
    """One test's view of the shared run: ``out[i]`` lists the frames (parsed) the switch sent
    during its step i, ``mem`` is the switch's handler memory and ``job`` the test's job."""

    def __init__(self, job: int, out: list, mem: np.ndarray) -> None:
        self.job, self.out, self.mem = job, out, mem

    def answers(self, step: int) -> dict[int, object]:
        """Host -> the frame it was sent in ``step`` (one at most per host)."""
        got: dict[int, object] = {}
        for link, p in self.out[step]:
            assert link not in got, f"step {step}: two frames to h{link}"
            got[link] = p
        return got

    def slot(self, slot: int, s: int) -> dict:
        return slot_view(self.mem, self.job, slot, s)


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    """Every test's steps in one run of one switch (one engine start for the suite): test i owns
    job i (its own slots, as a separate switch would) and the millisecond starting at i ms."""
    names = sorted(TESTS)
    sc = scenario(Topology.star(3))
    group = sc.multicast_group("s0", [0, 1])
    jobs = [{"job": i, "slots": SLOTS, "k": K, "parent_port": -1, "parent_node": -1,
             "group": group, "children": [("host", 0, [0]), ("host", 1, [1])]}
            for i in range(len(names))]
    ctx = sc.install(ExecutionContext(
        node="s0", program=switchml_switch_program(switch_memory(jobs, 3)), match_qp=QP))
    sc.capture()
    sim = Simulation(sc)
    frames = [(i, j, w, f) for i, name in enumerate(names)
              for j, (w, f) in enumerate(TESTS[name](i))]
    buf = np.zeros((len(frames), sim.st.pool.shape[1]), np.uint8)
    for r, (*_, f) in enumerate(frames):
        buf[r, :len(f)] = np.frombuffer(f, np.uint8)
    times = np.asarray([int((i * TEST_US + (j + 1) * STEP_US) * US) for i, j, _, _ in frames],
                       np.int64)
    ports = np.asarray([sim.port_of_link[w][1] for _, _, w, _ in frames], np.int32)  # switch end
    keys = (np.int64(3) << 40) + np.arange(len(frames), dtype=np.int64)
    inject_frames(sim.st, times, ports, keys, np.asarray([len(f) for *_, f in frames], np.int32),
                  buf)
    sim.run()
    mem = sim.handler_memory(ctx)
    out = {name: [[] for _ in TESTS[name](i)] for i, name in enumerate(names)}
    for link in range(3):
        for t, f in sim.captured_frames(link):
            i, rest = divmod(t, int(TEST_US * US))
            out[names[i]][int(rest // int(STEP_US * US)) - 1].append((link, parse(f)))
    return {name: Run(i, out[name], mem) for i, name in enumerate(names)}


def steps(fn):
    """Register a test's steps: ``fn(job) -> [(worker, frame), ...]``."""
    TESTS[fn.__name__.removeprefix("steps_")] = fn
    return fn


def check_result(p, to: int, job: int, pool_index: int, x: int = 1) -> None:
    assert p.dst_node == to and p.dest_qp == QP and p.opcode == OP_WRITE_ONLY
    header = SW.unpack(p.reth[0])
    assert header["pool_index"] == pool_index and header["job"] == job
    assert header["msg_type"] == SW.MSG_SUM_INT32
    assert np.array_equal(np.frombuffer(p.payload, np.int32), expected_sum(x))


def check_reduction(run: Run, step: int, pool_index: int, x: int = 1) -> None:
    """Both workers got the result of ``pool_index`` in ``step`` (the multicast)."""
    got = run.answers(step)
    assert sorted(got) == [0, 1]
    for w in (0, 1):
        check_result(got[w], w, run.job, pool_index, x)


def check_answer(run: Run, step: int, worker: int, pool_index: int, x: int = 1) -> None:
    """Only ``worker`` got the result of ``pool_index`` in ``step`` (unicast from the slot)."""
    got = run.answers(step)
    assert list(got) == [worker]
    check_result(got[worker], worker, run.job, pool_index, x)
    assert got[worker].src_node == SWITCH_NODE


def silent(run: Run, *steps_: int) -> None:
    for s in steps_:
        assert run.out[s] == [], f"step {s}: unexpected frames {run.out[s]}"


S0, S1 = 0x0000, SW.SET_BIT           # slot 0, set 0 / set 1


@steps
def steps_BasicReduction(job):
    return [(0, packet(0, S0, job=job)), (1, packet(1, S0, job=job))]


def test_BasicReduction(runs) -> None:
    run = runs["BasicReduction"]
    silent(run, 0)
    check_reduction(run, 1, S0)
    slot = run.slot(0, 0)
    assert (slot["bitmap"], slot["count"], slot["state"]) == (0b11, 2, RESULT_KNOWN)
    assert np.array_equal(slot["values"], expected_sum())


@steps
def steps_RetransmitAfterReduction(job):
    w0, w1 = packet(0, S0, job=job), packet(1, S0, job=job)
    return [(0, w0), (1, w1), (1, w1), (1, w1), (1, w1), (0, w0), (0, w0)]


def test_RetransmitAfterReduction(runs) -> None:
    run = runs["RetransmitAfterReduction"]
    check_reduction(run, 1, S0)
    for s, w in ((2, 1), (3, 1), (4, 1), (5, 0), (6, 0)):
        check_answer(run, s, w, S0)
    assert run.slot(0, 0)["count"] == 2           # retransmissions were not added


@steps
def steps_OtherSetReduction(job):
    return [(0, packet(0, S1, job=job)), (1, packet(1, S1, job=job))]


def test_OtherSetReduction(runs) -> None:
    run = runs["OtherSetReduction"]
    silent(run, 0)
    check_reduction(run, 1, S1)
    assert run.slot(0, 1)["count"] == 2 and run.slot(0, 0)["count"] == 0


@steps
def steps_BothSetsReduction(job):
    return [(0, packet(0, S0, job=job)), (1, packet(1, S0, job=job)),
            (0, packet(0, S1, 3, job=job)), (1, packet(1, S1, 3, job=job))]


def test_BothSetsReduction(runs) -> None:
    run = runs["BothSetsReduction"]
    silent(run, 0, 2)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, S1, 3)


@steps
def steps_SlotReuse(job):
    return [(w, packet(w, pool, x, job=job)) for pool, x in ((S0, 1), (S1, 1), (S0, 3), (S1, 3))
            for w in (0, 1)]


def test_SlotReuse(runs) -> None:
    run = runs["SlotReuse"]
    silent(run, 0, 2, 4, 6)
    for step, pool, x in ((1, S0, 1), (3, S1, 1), (5, S0, 3), (7, S1, 3)):
        check_reduction(run, step, pool, x)
    # the reused slot holds the new round only (the first packet overwrote, never added)
    assert np.array_equal(run.slot(0, 0)["values"], expected_sum(3))


@steps
def steps_IgnoreRetransmissions(job):
    return [(0, packet(0, S1, job=job))] * 3 + [(1, packet(1, S1, job=job))]


def test_IgnoreRetransmissions(runs) -> None:
    run = runs["IgnoreRetransmissions"]
    silent(run, 0, 1, 2)
    check_reduction(run, 3, S1)
    assert run.slot(0, 1)["count"] == 2


@steps
def steps_RetransmitFromPreviousSet(job):
    return [(0, packet(0, S1, job=job)), (1, packet(1, S1, job=job)),
            (1, packet(1, S0, 3, job=job))] + [(0, packet(0, S1, job=job))] * 3


def test_RetransmitFromPreviousSet(runs) -> None:
    run = runs["RetransmitFromPreviousSet"]
    check_reduction(run, 1, S1)
    silent(run, 2)
    for s in (3, 4, 5):
        check_answer(run, s, 0, S1)
    # set 0 still waits for worker 0; set 1 kept its result for worker 0 alone (h1 moved on)
    assert run.slot(0, 0)["bitmap"] == 0b10 and run.slot(0, 1)["bitmap"] == 0b01


@steps
def steps_SlotReuseAndRetransmit(job):
    return [(0, packet(0, S0, job=job)), (1, packet(1, S0, job=job)),
            (0, packet(0, S1, job=job)), (1, packet(1, S1, job=job)),
            (0, packet(0, S0, 3, job=job)), (1, packet(1, S0, 3, job=job)),
            (1, packet(1, S1, 3, job=job)), (0, packet(0, S0, 3, job=job))]


def test_SlotReuseAndRetransmit(runs) -> None:
    run = runs["SlotReuseAndRetransmit"]
    silent(run, 0, 2, 4, 6)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, S1)
    check_reduction(run, 5, S0, 3)
    check_answer(run, 7, 0, S0, 3)


OTHER_QP = build_frame(0, 1, 0xC000, OP_WRITE_ONLY, QP + 1, 1, b"0123456789" * 3,
                       reth=(0x1000, 0, 30))


@steps
def steps_NonSwitchML(job):
    outsider = build_frame(2, 1, 0xC002, OP_WRITE_ONLY, QP, 1, VALUES[(0, 1)].tobytes(),
                           reth=(SW.pack(SW.MSG_SUM_INT32, job, 0, 0), 0, 4 * K))
    other_job = build_frame(0, 2, 0xC000, OP_WRITE_ONLY, QP, 2, VALUES[(0, 1)].tobytes(),
                            reth=(SW.pack(SW.MSG_SUM_INT32, 200, 0, 0), 0, 4 * K))
    return [(0, OTHER_QP), (1, OTHER_QP), (2, outsider), (0, other_job)]


def test_NonSwitchML(runs) -> None:
    """Other QPs, SwitchML-QP packets from outside the job and packets of an unknown job pass
    through unchanged but for the TTL (and IPv4 checksum)."""
    run = runs["NonSwitchML"]
    sent = steps_NonSwitchML(run.job)
    for s, to in enumerate((1, 1, 1, 2)):
        got = run.answers(s)
        assert list(got) == [to]
        want = parse(sent[s][1])
        assert got[to].ttl == want.ttl - 1
        assert (got[to].src_node, got[to].dest_qp, got[to].reth, got[to].payload) == \
            (want.src_node, want.dest_qp, want.reth, want.payload)
    assert run.slot(0, 0)["bitmap"] == 0 and run.slot(0, 0)["count"] == 0


@steps
def steps_DifferentPortsReduction(job):
    return [(0, packet(0, S0, job=job)), (1, packet(1, S0, job=job)),
            (0, packet(0, 1, ev_offset=1, job=job)), (1, packet(1, 1, ev_offset=1, job=job))]


def test_DifferentPortsReduction(runs) -> None:
    """Slot 1 with other UDP source ports (SwitchML steers those to other pipes): the result of
    each slot reaches both workers, and carries the last contributor's port."""
    run = runs["DifferentPortsReduction"]
    silent(run, 0, 2)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, 1)
    for p in run.answers(3).values():
        assert p.ev == 0xC000 + 1 + 1
    assert run.slot(1, 0)["count"] == 2


def test_switch_counters(runs) -> None:
    """The switch's counters add up over the whole run: 2 contributions per reduction, the
    answered and ignored retransmissions, the passed packets of NonSwitchML."""
    mem = next(iter(runs.values())).mem
    assert mem[G_COMPLETED] == 1 + 1 + 1 + 2 + 4 + 1 + 1 + 3 + 0 + 2
    # + the half-done rounds of RetransmitFromPreviousSet and SlotReuseAndRetransmit
    assert mem[G_CONTRIBUTIONS] == 2 * mem[G_COMPLETED] + 2
    assert mem[G_ANSWERED] == 5 + 3 + 1
    assert mem[G_IGNORED] == 2
    assert mem[G_PASSED] == 2


@pytest.mark.parametrize("case", range(4))
def test_header_matches_scapy(case: int) -> None:
    """The header packed by spin, dissected by scapy's SwitchML layer from the RETH, and read
    through the declared numpy dtype, field for field."""
    pytest.importorskip("scapy")
    from scapy.compat import raw
    from spin.wire.scapy_layers import RETH, SwitchML, bind_spin_layers, scapy_roce_frame
    bind_spin_layers()
    rng = np.random.default_rng(case)
    fields = {"msg_type": int(rng.choice(SW.AGGREGATING_TYPES + (SW.MSG_CONTROL,))),
              "job": int(rng.integers(0, 256)), "pool_index": int(rng.integers(0, 1 << 16)),
              "tsi": int(rng.integers(0, 1 << 32))}
    va = SW.pack(**fields)
    data = rng.integers(-2**31, 2**31, K, dtype=np.int64).astype(np.int32).tobytes()
    ours = build_frame(0, 1, 0xC000, OP_WRITE_ONLY, QP, 7, data, reth=(va, 0, len(data)))
    theirs = scapy_roce_frame(0, 1, 0xC000, OP_WRITE_ONLY, QP, 7, data, reth=(va, 0, len(data)))
    assert raw(theirs) == ours                     # ICRC included
    reth = raw(theirs[RETH])[:8]
    dissected = SwitchML(reth)
    record = np.frombuffer(reth, SW.SWITCHML.dtype)[0]
    for name, value in fields.items():
        assert getattr(dissected, name) == value
        assert int(SW.SWITCHML.get(record, name)) == value
    assert SW.unpack(va) == {**fields, "unused": 0}
