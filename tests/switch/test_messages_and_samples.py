"""Receive-message hygiene and queue sampling: a message whose packets stop coming is evicted
after the message timeout instead of holding a slot forever; frames from addresses no device
has are dropped and counted; output-queue occupancy is sampled on a fixed grid."""
from __future__ import annotations

import numpy as np

from spin.config import EngineConfig, NicConfig, SwitchConfig
from spin.engine.ports import inject_frames
from spin.simulation import Simulation
from spin.topology import Topology
from spin.units import NS
from spin.wire import OP_WRITE_FIRST, finalize_roce_frame, write_roce_headers

from .conftest import pattern, scenario

MTU = 1024


def _first_packets(src: int, dst: int, n: int, slot_bytes: int) -> np.ndarray:
    """FIRST packets of n 4 KiB messages on n QPs: their MIDDLE/LAST never come."""
    frames = np.zeros((n, slot_bytes), np.uint8)
    lengths = np.zeros(n, np.int32)
    for i in range(n):
        off = write_roce_headers(frames[i], src, dst, 0xC000 + i, OP_WRITE_FIRST, 10 + i, 0, 0,
                                 i * 4 * MTU, 0, 4 * MTU, MTU, i)
        lengths[i] = finalize_roce_frame(frames[i], off, MTU)
    return frames, lengths


def _inject(sim: Simulation, frames, lengths, times_ns) -> None:
    port = sim.port_of_link[1][0]            # h1's end of link 1 (h1 - s0)
    n = len(lengths)
    inject_frames(sim.st, np.asarray([int(t * NS) for t in times_ns], np.int64),
                  np.full(n, port, np.int32), (np.int64(2) << 40) + np.arange(n, dtype=np.int64),
                  lengths, frames)


def test_stale_messages_expire_instead_of_holding_slots() -> None:
    def run(gap_ns: float):
        sc = scenario(Topology.star(2), nic=NicConfig(max_inflight_messages=4),
                      engine=EngineConfig(message_timeout_ns=50_000.0))
        sim = Simulation(sc)
        frames, lengths = _first_packets(0, 1, 10, sim.st.pool.shape[1])
        _inject(sim, frames, lengths, [1_000.0 + i * gap_ns for i in range(10)])
        return sim.run()
    slow = run(20_000.0)    # messages go stale: later ones evict them
    nic = slow.nic(1)
    # at most 4 open; the 5th, 7th and 9th find the table full and each evict the two that
    # are older than 50 µs (60 and 80 µs old)
    assert nic.messages_expired == 6
    assert "no_message_slot" not in slow.drops
    fast = run(100.0)       # all within the timeout: the limit holds and newcomers are dropped
    assert fast.nic(1).messages_expired == 0
    assert fast.drops["no_message_slot"] == 6


def test_frames_from_unknown_addresses_are_dropped_and_counted() -> None:
    sc = scenario(Topology.star(2))
    sim = Simulation(sc)
    frames, lengths = _first_packets(999, 1, 2, sim.st.pool.shape[1])
    _inject(sim, frames, lengths, [1_000.0, 2_000.0])
    result = sim.run()
    assert result.drops == {"unknown_source": 2}


def test_queue_occupancy_is_sampled_on_a_grid() -> None:
    interval_ns = 200.0
    sc = scenario(Topology.star(5), engine=EngineConfig(queue_sample_ns=interval_ns),
                  switch=SwitchConfig(ecn_threshold_bytes=0))
    size = 32 * MTU
    for h in (1, 2, 3, 4):
        sc.write_host_memory(h, 0, pattern(h, size))
        sc.host_program(h).send(0, size, qp=1)
    result = Simulation(sc).run()
    down = next(l for l in result.links if l.from_device == "s0" and l.to_device == "h0")
    samples = [s for s in result.queue_samples if s[1] == down.link and s[2] == 1]
    assert len(samples) > 10
    assert all(t % int(interval_ns * NS) == 0 for t, *_ in samples)
    peak = max(q for *_, q in samples)
    assert 0.8 * down.max_queue_bytes <= peak <= down.max_queue_bytes
    # the samples' time average agrees with the exact time integral
    sampled_mean = sum(q for *_, q in samples) * interval_ns * NS / result.end_time_ps
    exact_mean = down.mean_queue_bytes(result.end_time_ps)
    assert abs(sampled_mean - exact_mean) <= 0.1 * exact_mean
    # sampling observes, it does not change the run
    sc2 = scenario(Topology.star(5), switch=SwitchConfig(ecn_threshold_bytes=0))
    for h in (1, 2, 3, 4):
        sc2.write_host_memory(h, 0, pattern(h, size))
        sc2.host_program(h).send(0, size, qp=1)
    plain = Simulation(sc2).run().to_dict(include_wall=False)
    sampled = result.to_dict(include_wall=False)
    # link busy time on the same grid adds up to each direction's busy time
    busy = {}
    for _t, link, d, b in result.link_samples:
        busy[(link, d)] = busy.get((link, d), 0) + b
    assert busy[(down.link, 1)] == down.busy_ps
    assert sum(busy.values()) == sum(l.busy_ps for l in result.links)
    for key in ("queue_samples", "link_samples"):
        sampled.pop(key), plain.pop(key)
    assert sampled == plain
