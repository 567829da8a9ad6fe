"""Transport benchmark: frames across one worker boundary, and the cost of a sync round.

Two local workers run the real round loop (spin.parallel.sync over spin.parallel.mesh):
- stream: worker 0 sends B frames of 1500 B (1536 B slots) to worker 1 every round; worker 1
  receives them (optionally copying them into a slot pool, as an engine would);
- empty: both workers have an event every round and send empty batches (pure sync overhead).
Rates use the workers' round-loop wall time (start-up and program build excluded).

    python bench/bench_transport.py [--frames 200000] [--rounds 5000]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from spin.parallel import FrameBatch, run_fabric
from spin.parallel.program import INF_PS, worker_factory

WINDOW_PS = 1_000_000


@dataclass(frozen=True)
class BenchSpec:
    mode: str  # "stream" | "empty"
    rounds: int
    frames_per_round: int = 0
    frame_bytes: int = 1500
    slot_bytes: int = 1536
    copy_on_deliver: bool = False


class BenchProgram:
    def __init__(self, spec: BenchSpec, worker_id: int, n_workers: int) -> None:
        self.spec, self.wid, self.peer = spec, worker_id, 1 - worker_id
        self.done_rounds = 0
        self.received = 0
        self.checksum = 0
        b = spec.frames_per_round
        rng = np.random.default_rng(worker_id)
        self._frames = rng.integers(0, 256, (b, spec.slot_bytes), dtype=np.uint8)  # never mutated: safe to resend
        self._pool = np.empty((max(b, 1), spec.slot_bytes), np.uint8)
        self._fixed = dict(
            dst_device=np.zeros(b, np.int32), dst_port=np.zeros(b, np.int32),
            order_key=np.arange(b, dtype=np.int64), length=np.full(b, spec.frame_bytes, np.int32),
        )

    def _active(self) -> bool:
        return self.spec.mode == "empty" or self.wid == 0

    def lookahead_ps(self) -> int:
        return WINDOW_PS

    def next_event_ps(self) -> int:
        if self._active() and self.done_rounds < self.spec.rounds:
            return self.done_rounds * WINDOW_PS
        return INF_PS

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        if self.next_event_ps() >= t_end_ps:
            return {}
        self.done_rounds += 1
        if self.spec.mode == "empty":
            return {}
        b = self.spec.frames_per_round
        return {self.peer: FrameBatch(arrival_ps=np.full(b, t_end_ps, np.int64), frames=self._frames, **self._fixed)}

    def deliver(self, batch: FrameBatch) -> None:
        self.received += batch.n
        if self.spec.copy_on_deliver:
            self._pool[: batch.n] = batch.frames
        self.checksum ^= int(batch.frames[-1, 0])

    def result(self) -> dict:
        return {"received": self.received, "rounds": self.done_rounds}


@worker_factory
def make_program(spec: BenchSpec, worker_id: int, n_workers: int) -> BenchProgram:
    return BenchProgram(spec, worker_id, n_workers)


def _stream(frames: int, batch: int, copy: bool) -> None:
    rounds = max(1, frames // batch)
    spec = BenchSpec("stream", rounds=rounds, frames_per_round=batch, copy_on_deliver=copy)
    out = run_fabric("bench_transport:make_program", spec, n_workers=2, timeout_s=300)
    got = out.results[1]["received"]
    assert got == rounds * batch, (got, rounds * batch)
    wall = out.loop_wall_s
    fps = got / wall
    gbps = got * spec.frame_bytes * 8 / wall / 1e9
    print(f"  stream  batch={batch:5d} frames/round  copy_on_deliver={copy!s:5}  {got:7d} frames in "
          f"{wall:6.3f} s  ->  {fps / 1e6:5.2f} M frames/s  {gbps:5.2f} Gbit/s (1500 B payload)  "
          f"{out.transport['bytes_sent'] / wall / 1e9 * 8:5.2f} Gbit/s on the wire (1536 B slots)")


def _empty(rounds: int) -> None:
    spec = BenchSpec("empty", rounds=rounds)
    out = run_fabric("bench_transport:make_program", spec, n_workers=2, timeout_s=300)
    assert out.rounds == rounds, (out.rounds, rounds)
    per_round_us = out.loop_wall_s / (rounds + 1) * 1e6  # +1: the start-up exchange
    print(f"  sync    empty batches, 2 workers: {rounds} rounds in {out.loop_wall_s:6.3f} s  ->  "
          f"{per_round_us:6.1f} µs/round  ({1e6 / per_round_us:,.0f} rounds/s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=200_000, help="frames per stream measurement")
    ap.add_argument("--rounds", type=int, default=5_000, help="rounds for the sync measurement")
    args = ap.parse_args()
    print("spin transport benchmark: 2 local worker processes, PUSH/PULL over tcp loopback")
    for batch in (64, 256, 1024):
        _stream(args.frames, batch, copy=False)
    _stream(args.frames, 256, copy=True)
    _empty(args.rounds)


if __name__ == "__main__":
    import bench_transport  # the spec's class must be importable by name in the workers, not __main__

    bench_transport.main()
