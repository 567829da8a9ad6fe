"""A standing fuzz test of the engine's receive paths: 100,000 random and mutated frames enter a
switch that runs handlers and go on to NICs. Nothing crashes, the run ends, and every frame is
accounted for: dropped at the switch (by a named reason) or forwarded; every NIC drop has a
named reason too."""
from __future__ import annotations

import numpy as np

from handlers.switch_monitor import switch_monitor_program
from spin.config import EngineConfig
from spin.wire.drops import DROP_REASON_NAMES
from spin.engine.ports import inject_frames
from spin.handler import ExecutionContext
from spin.simulation import Simulation
from spin.topology import Topology
from spin.wire import OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_ONLY, finalize_roce_frame, \
    write_roce_headers

from .conftest import scenario

N_FRAMES = 100_000


def _valid(slot_bytes: int, rng) -> list[np.ndarray]:
    """A few hundred valid RoCE frames to hosts 1 and 2 (some to a switch handler's QP)."""
    out = []
    for i in range(300):
        f = np.zeros(slot_bytes, np.uint8)
        op = (OP_WRITE_ONLY, OP_WRITE_FIRST, OP_WRITE_LAST)[i % 3]
        plen = int(rng.integers(0, 1024))
        dma = plen if op == OP_WRITE_ONLY else 4096
        off = write_roce_headers(f, 0, 1 + i % 2, 0xC000 + i, op, i % 4, i, 0, 64 * i, 0, dma,
                                 plen, i)
        f[off:off + plen] = rng.integers(0, 256, plen, dtype=np.uint8)
        n = finalize_roce_frame(f, off, plen)
        out.append(f[:n].copy())
    return out


def test_100k_random_and_mutated_frames_are_all_accounted_for() -> None:
    rng = np.random.default_rng(2026)
    sc = scenario(Topology.star(3), engine=EngineConfig(buffer_slots=1 << 17,
                                                        max_events_pending=1 << 18))
    sc.install(ExecutionContext(node="s0", program=switch_monitor_program(64), match_qp=1))
    sim = Simulation(sc)
    slot = sim.st.pool.shape[1]
    valid = _valid(slot, rng)
    frames = np.zeros((N_FRAMES, slot), np.uint8)
    lengths = np.zeros(N_FRAMES, np.int32)
    for i in range(N_FRAMES):
        kind = i % 4
        if kind == 0:                                        # random bytes, random length
            n = int(rng.integers(0, slot + 1))
            frames[i, :n] = rng.integers(0, 256, n, dtype=np.uint8)
        else:                                                # mutations of valid frames
            v = valid[int(rng.integers(0, len(valid)))]
            n = len(v)
            frames[i, :n] = v
            for _ in range(int(rng.integers(1, 5))):
                frames[i, int(rng.integers(0, n))] = int(rng.integers(0, 256))
            if kind == 2:                                    # truncated or padded
                n = int(rng.integers(0, min(slot, n + 64) + 1))
            if kind == 3 and i % 8 == 3:                     # intact valid frame
                frames[i, :len(v)] = v
        lengths[i] = n
    port = sim.port_of_link[0][1]                            # s0's end of link 0 (h0 - s0)
    times = (np.arange(N_FRAMES, dtype=np.int64) + 1) * 20_000   # one every 20 ns
    keys = np.arange(N_FRAMES, dtype=np.int64)                # created by h0 (device 0)
    inject_frames(sim.st, times, np.full(N_FRAMES, port, np.int32), keys, lengths, frames)
    result = sim.run()
    sw = result.switches[0]
    forwarded = sum(l.tx_frames for l in result.links if l.from_device == "s0")
    assert sum(sw.drops.values()) + forwarded == N_FRAMES
    assert forwarded > 0.1 * N_FRAMES and sw.drops
    names = set(DROP_REASON_NAMES.values())
    assert set(result.drops) <= names, result.drops
    for nic in ("h1", "h2"):
        received = next(l.tx_frames for l in result.links if l.to_device == nic)
        node = int(nic[1])
        dropped = sum(v for k, v in _nic_drops(sim, node).items())
        assert dropped <= received
    assert sw.handler_calls.header > 0                       # valid frames reached the handler


def _nic_drops(sim, node: int) -> dict[str, int]:
    from spin.wire.drops import drop_counts_to_dict
    return drop_counts_to_dict(sim.st.drops[node])
