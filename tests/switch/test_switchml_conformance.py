"""SwitchML conformance: the switch program against crafted packets, one test per test of
SwitchML's own suite (microsoft/SwitchML test/TwoWorkerTests.py), same names, same steps.

One switch, two SwitchML workers (h0, h1) and a host outside the job (h2). Each step injects one
frame at the switch's ingress port; the frames the switch sends in the next 20 µs are the
step's answer (SwitchML's ``verify_packet`` / ``verify_no_other_packets``). Results are checked
field by field after our parser verified the frame (ICRC included), and the switch's memory
(bitmaps, counts, shadow copies) after the run.
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

QP, K, SLOTS, JOB = 9, 8, 4, 3
STEP_US = 20.0
SWITCH_NODE = 3                        # host count + switch index: the switch's own address
VALUES = {(w, x): (np.arange(K, dtype=np.int64) * (w + 2) * x - 7 * w).astype(np.int32)
          for w in (0, 1) for x in (1, 3)}


def packet(worker: int, pool_index: int, x: int = 1, ev_offset: int = 0, tsi: int = 0) -> bytes:
    """Worker ``worker``'s contribution to ``pool_index`` (set bit included), values scaled by
    ``x`` (SwitchML's make_switchml_packets(..., value multiplier))."""
    va = SW.pack(SW.MSG_SUM_INT32, JOB, pool_index, tsi + pool_index % SW.SET_BIT)
    data = VALUES[(worker, x)].tobytes()
    return build_frame(worker, 2, 0xC000 + worker + ev_offset, OP_WRITE_ONLY, QP, 5,
                       data, reth=(va, 0, len(data)))


def expected_sum(x: int = 1) -> np.ndarray:
    return VALUES[(0, x)] + VALUES[(1, x)]


class Run:
    """Inject ``frames`` (worker, frame) one per step; afterwards ``out[i]`` lists the frames
    (parsed) the switch sent during step i, and ``mem`` is its handler memory."""

    def __init__(self, frames: list[tuple[int, bytes]]) -> None:
        sc = scenario(Topology.star(3))
        group = sc.multicast_group("s0", [0, 1])
        job = {"job": JOB, "slots": SLOTS, "k": K, "parent_port": -1, "parent_node": -1,
               "group": group, "children": [("host", 0, [0]), ("host", 1, [1])]}
        ctx = sc.install(ExecutionContext(
            node="s0", program=switchml_switch_program(switch_memory([job], 3)), match_qp=QP))
        sc.capture()
        sim = Simulation(sc)
        slot_bytes = sim.st.pool.shape[1]
        buf = np.zeros((len(frames), slot_bytes), np.uint8)
        for i, (_w, f) in enumerate(frames):
            buf[i, :len(f)] = np.frombuffer(f, np.uint8)
        ports = [sim.port_of_link[w][1] for w, _ in frames]      # the switch's end of h_w's link
        times = (np.arange(len(frames), dtype=np.int64) + 1) * int(STEP_US * US)
        inject_frames(sim.st, times, np.asarray(ports, np.int32),
                      (np.int64(3) << 40) + np.arange(len(frames), dtype=np.int64),
                      np.asarray([len(f) for _, f in frames], np.int32), buf)
        self.result = sim.run()
        self.mem = sim.handler_memory(ctx)
        self.out: list[list[tuple[int, object]]] = [[] for _ in frames]
        for link in range(3):
            for t, f in sim.captured_frames(link):
                step = int(t // int(STEP_US * US)) - 1
                self.out[step].append((link, parse(f)))

    def answers(self, step: int) -> dict[int, object]:
        """Host -> the frame it was sent in ``step`` (one at most per host)."""
        got: dict[int, object] = {}
        for link, p in self.out[step]:
            assert link not in got, f"step {step}: two frames to h{link}"
            got[link] = p
        return got


def check_result(p, to: int, pool_index: int, x: int = 1) -> None:
    assert p.dst_node == to and p.dest_qp == QP and p.opcode == OP_WRITE_ONLY
    header = SW.unpack(p.reth[0])
    assert header["pool_index"] == pool_index and header["job"] == JOB
    assert header["msg_type"] == SW.MSG_SUM_INT32
    assert np.array_equal(np.frombuffer(p.payload, np.int32), expected_sum(x))


def check_reduction(run: Run, step: int, pool_index: int, x: int = 1) -> None:
    """Both workers got the result of ``pool_index`` in ``step`` (the multicast)."""
    got = run.answers(step)
    assert sorted(got) == [0, 1]
    for w in (0, 1):
        check_result(got[w], w, pool_index, x)


def check_answer(run: Run, step: int, worker: int, pool_index: int, x: int = 1) -> None:
    """Only ``worker`` got the result of ``pool_index`` in ``step`` (unicast from the slot)."""
    got = run.answers(step)
    assert list(got) == [worker]
    check_result(got[worker], worker, pool_index, x)
    assert got[worker].src_node == SWITCH_NODE


def silent(run: Run, *steps: int) -> None:
    for s in steps:
        assert run.out[s] == [], f"step {s}: unexpected frames {run.out[s]}"


S0, S1 = 0x0000, SW.SET_BIT           # slot 0, set 0 / set 1


def test_BasicReduction() -> None:
    run = Run([(0, packet(0, S0)), (1, packet(1, S0))])
    silent(run, 0)
    check_reduction(run, 1, S0)
    slot = slot_view(run.mem, JOB, 0, 0)
    assert (slot["bitmap"], slot["count"], slot["state"]) == (0b11, 2, RESULT_KNOWN)
    assert np.array_equal(slot["values"], expected_sum())
    assert run.mem[G_CONTRIBUTIONS] == 2 and run.mem[G_COMPLETED] == 1


def test_RetransmitAfterReduction() -> None:
    steps = [(0, packet(0, S0)), (1, packet(1, S0))] + [(1, packet(1, S0))] * 3 \
        + [(0, packet(0, S0))] * 2
    run = Run(steps)
    check_reduction(run, 1, S0)
    for s, w in ((2, 1), (3, 1), (4, 1), (5, 0), (6, 0)):
        check_answer(run, s, w, S0)
    assert run.mem[G_ANSWERED] == 5 and run.mem[G_CONTRIBUTIONS] == 2


def test_OtherSetReduction() -> None:
    run = Run([(0, packet(0, S1)), (1, packet(1, S1))])
    silent(run, 0)
    check_reduction(run, 1, S1)
    assert slot_view(run.mem, JOB, 0, 1)["count"] == 2
    assert slot_view(run.mem, JOB, 0, 0)["count"] == 0


def test_BothSetsReduction() -> None:
    run = Run([(0, packet(0, S0)), (1, packet(1, S0)), (0, packet(0, S1, 3)),
               (1, packet(1, S1, 3))])
    silent(run, 0, 2)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, S1, 3)


def test_SlotReuse() -> None:
    run = Run([(0, packet(0, S0)), (1, packet(1, S0)), (0, packet(0, S1)), (1, packet(1, S1)),
               (0, packet(0, S0, 3)), (1, packet(1, S0, 3)), (0, packet(0, S1, 3)),
               (1, packet(1, S1, 3))])
    silent(run, 0, 2, 4, 6)
    for step, pool, x in ((1, S0, 1), (3, S1, 1), (5, S0, 3), (7, S1, 3)):
        check_reduction(run, step, pool, x)
    # the reused slot holds the new round only (the first packet overwrote, never added)
    assert np.array_equal(slot_view(run.mem, JOB, 0, 0)["values"], expected_sum(3))


def test_IgnoreRetransmissions() -> None:
    run = Run([(0, packet(0, S1))] * 3 + [(1, packet(1, S1))])
    silent(run, 0, 1, 2)
    check_reduction(run, 3, S1)
    assert run.mem[G_IGNORED] == 2 and slot_view(run.mem, JOB, 0, 1)["count"] == 2


def test_RetransmitFromPreviousSet() -> None:
    run = Run([(0, packet(0, S1)), (1, packet(1, S1)), (1, packet(1, S0, 3))]
              + [(0, packet(0, S1))] * 3)
    check_reduction(run, 1, S1)
    silent(run, 2)
    for s in (3, 4, 5):
        check_answer(run, s, 0, S1)
    # set 0 still waits for worker 0; set 1 kept its result for worker 0 alone (h1 moved on)
    assert slot_view(run.mem, JOB, 0, 0)["bitmap"] == 0b10
    assert slot_view(run.mem, JOB, 0, 1)["bitmap"] == 0b01


def test_SlotReuseAndRetransmit() -> None:
    run = Run([(0, packet(0, S0)), (1, packet(1, S0)), (0, packet(0, S1)), (1, packet(1, S1)),
               (0, packet(0, S0, 3)), (1, packet(1, S0, 3)), (1, packet(1, S1, 3)),
               (0, packet(0, S0, 3))])
    silent(run, 0, 2, 4, 6)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, S1)
    check_reduction(run, 5, S0, 3)
    check_answer(run, 7, 0, S0, 3)


def test_NonSwitchML() -> None:
    """Other QPs, other UDP traffic and SwitchML-QP packets from outside the job pass through
    unchanged but for the TTL (and IPv4 checksum)."""
    other_qp = build_frame(0, 1, 0xC000, OP_WRITE_ONLY, QP + 1, 1, b"0123456789" * 3,
                           reth=(0x1000, 0, 30))
    outsider = build_frame(2, 1, 0xC002, OP_WRITE_ONLY, QP, 1, VALUES[(0, 1)].tobytes(),
                           reth=(SW.pack(SW.MSG_SUM_INT32, JOB, 0, 0), 0, 4 * K))
    other_job = build_frame(0, 2, 0xC000, OP_WRITE_ONLY, QP, 2, VALUES[(0, 1)].tobytes(),
                            reth=(SW.pack(SW.MSG_SUM_INT32, JOB + 1, 0, 0), 0, 4 * K))
    steps = [(0, other_qp), (1, other_qp), (2, outsider), (0, other_job)]
    run = Run(steps)
    for s, (to, sent) in enumerate(((1, other_qp), (1, other_qp), (1, outsider),
                                    (2, other_job))):
        got = run.answers(s)
        assert list(got) == [to]
        want = parse(sent)
        assert got[to].ttl == want.ttl - 1
        assert (got[to].src_node, got[to].dest_qp, got[to].reth, got[to].payload) == \
            (want.src_node, want.dest_qp, want.reth, want.payload)
    # the other QP never reaches the program; the outsider and the other job pass it
    assert run.mem[G_PASSED] == 2 and run.mem[G_CONTRIBUTIONS] == 0


def test_DifferentPortsReduction() -> None:
    """Slot 1 with other UDP source ports (SwitchML steers those to other pipes): the result of
    each slot reaches both workers, and carries the last contributor's port."""
    run = Run([(0, packet(0, S0)), (1, packet(1, S0)), (0, packet(0, 1, ev_offset=1)),
               (1, packet(1, 1, ev_offset=1))])
    silent(run, 0, 2)
    check_reduction(run, 1, S0)
    check_reduction(run, 3, 1)
    for p in run.answers(3).values():
        assert p.ev == 0xC000 + 1 + 1
    assert slot_view(run.mem, JOB, 1, 0)["count"] == 2


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
