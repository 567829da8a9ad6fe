"""A small deterministic WorkerProgram for testing the multi-process layer.

Tokens hop between devices over links of pseudo-random latency (>= min_latency_ps); every device
folds the events it sees, in (time, order_key) order, into a checksum. Device d belongs to worker
d % n_workers; tokens crossing workers travel as real bytes in frame slots. The merged per-device
checksums are therefore identical for any number of workers.
"""

from __future__ import annotations

import heapq
import os
import signal
import struct
import time
from dataclasses import dataclass

import numpy as np

from spin.parallel.batch import FrameBatch
from spin.parallel.program import INF_PS, worker_factory

MASK = (1 << 64) - 1
_REC = struct.Struct("<qqqq")  # token, hop, payload, source device


def mix(*words: int) -> int:
    """splitmix64-style fold: cheap, deterministic, well spread."""
    h = 0x9E3779B97F4A7C15
    for w in words:
        h = (h ^ (w & MASK)) * 0xBF58476D1CE4E5B9 & MASK
        h ^= h >> 31
    return h


@dataclass(frozen=True)
class FailPlan:
    mode: str  # "raise" | "exit" | "sigkill"
    worker: int
    at_ps: int  # fail in the first run_until whose window reaches this time


@dataclass(frozen=True)
class ToySpec:
    n_devices: int = 8
    n_tokens: int = 16
    hops: int = 100
    seed: int = 1
    min_latency_ps: int = 1_000
    jitter_ps: int = 5_000
    slot_bytes: int = 64
    slow_s: float = 0.0  # sleep per round (to keep a run alive in signal tests)
    fail: FailPlan | None = None
    pid_dir: str | None = None
    result_pad_bytes: int = 0  # a result this much larger (tests the control channel's limit)
    worker_result_limit_bytes: int = 0  # lowers the worker's limit on what it sends (0: as is)


class ToyProgram:
    def __init__(self, spec: ToySpec, worker_id: int, n_workers: int) -> None:
        self.spec, self.wid, self.n = spec, worker_id, n_workers
        self.owned = [d for d in range(spec.n_devices) if d % n_workers == worker_id]
        self.acc = {d: 0 for d in self.owned}
        self.count = {d: 0 for d in self.owned}
        self.heap: list[tuple[int, int, int, int, int, int]] = []  # t, key, device, token, hop, payload
        self.events = 0
        self.frames_out = 0
        if spec.worker_result_limit_bytes:    # a small result then crosses it: cheap to test
            from spin.parallel import control     # read by the worker as it sends
            control.MAX_CONTROL_BYTES = spec.worker_result_limit_bytes
        for tok in range(spec.n_tokens):
            dev = tok % spec.n_devices
            if dev % n_workers == worker_id:
                heapq.heappush(self.heap, (tok * 37, self._key(tok, 0), dev, tok, 0, mix(spec.seed, tok)))
        if spec.pid_dir:
            with open(os.path.join(spec.pid_dir, f"{worker_id}.pid"), "w") as f:
                f.write(str(os.getpid()))

    @staticmethod
    def _key(token: int, hop: int) -> int:
        return token * 1_000_003 + hop

    def describe(self) -> str:
        return f"toy devices {self.owned}"

    def lookahead_ps(self) -> int:
        return self.spec.min_latency_ps if self.n > 1 else INF_PS

    def next_event_ps(self) -> int:
        return self.heap[0][0] if self.heap else INF_PS

    def events_processed(self) -> int:
        return self.events

    def _maybe_fail(self, t_end: int) -> None:
        f = self.spec.fail
        if f is None or f.worker != self.wid or t_end < f.at_ps:
            return
        if self.spec.pid_dir:  # wall-clock moment of the failure, for promptness checks
            with open(os.path.join(self.spec.pid_dir, "failed_at"), "w") as fh:
                fh.write(repr(time.time()))
        if f.mode == "raise":
            raise RuntimeError(f"toy failure on worker {self.wid} at {t_end} ps")
        if f.mode == "exit":
            os._exit(7)
        if f.mode == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        self._maybe_fail(t_end_ps)
        if self.spec.slow_s:
            time.sleep(self.spec.slow_s)
        s = self.spec
        out: dict[int, list[tuple]] = {}
        while self.heap and self.heap[0][0] < t_end_ps:
            t, key, dev, tok, hop, payload = heapq.heappop(self.heap)
            self.events += 1
            self.acc[dev] = mix(self.acc[dev], t, key, tok, hop, payload)
            self.count[dev] += 1
            if hop + 1 >= s.hops:
                continue
            h = mix(s.seed, tok, hop, payload, dev)
            nxt = h % s.n_devices
            arrival = t + s.min_latency_ps + (h >> 20) % s.jitter_ps
            new_payload = mix(payload, dev, t)
            ev = (arrival, self._key(tok, hop + 1), nxt, tok, hop + 1, new_payload)
            owner = nxt % self.n
            if owner == self.wid:
                heapq.heappush(self.heap, ev)
            else:
                out.setdefault(owner, []).append(ev)
        return {w: self._encode(evs) for w, evs in out.items()}

    def _encode(self, evs: list[tuple]) -> FrameBatch:
        s, n = self.spec, len(evs)
        frames = np.zeros((n, s.slot_bytes), np.uint8)
        length = np.empty(n, np.int32)
        for i, (_, _, _, tok, hop, payload) in enumerate(evs):
            pad = tok % 17
            rec = _REC.pack(tok, hop, payload - (1 << 64) if payload >> 63 else payload, self.wid)
            frames[i, : len(rec)] = np.frombuffer(rec, np.uint8)
            frames[i, len(rec) : len(rec) + pad] = (tok + hop) & 0xFF
            length[i] = len(rec) + pad
        self.frames_out += n
        return FrameBatch(
            arrival_ps=np.array([e[0] for e in evs], np.int64),
            dst_device=np.array([e[2] for e in evs], np.int32),
            dst_port=np.zeros(n, np.int32),
            order_key=np.array([e[1] for e in evs], np.int64),
            length=length,
            frames=frames,
        )

    def deliver(self, batch: FrameBatch) -> None:
        for i in range(batch.n):
            raw = batch.frames[i, : batch.length[i]].tobytes()
            tok, hop, payload, _src = _REC.unpack_from(raw)
            pad = raw[_REC.size :]
            assert pad == bytes([(tok + hop) & 0xFF]) * (tok % 17), "frame bytes corrupted in transit"
            assert self._key(tok, hop) == int(batch.order_key[i])
            dev = int(batch.dst_device[i])
            assert dev in self.acc, f"frame for device {dev} delivered to worker {self.wid}"
            heapq.heappush(self.heap, (int(batch.arrival_ps[i]), self._key(tok, hop), dev, tok, hop, payload & MASK))

    def result(self) -> dict:
        return {
            "devices": {str(d): [self.acc[d], self.count[d]] for d in self.owned},
            "events": self.events,
            "frames_out": self.frames_out,
            "pad": "x" * self.spec.result_pad_bytes,
        }


@worker_factory
def make_program(spec: ToySpec, worker_id: int, n_workers: int) -> ToyProgram:
    return ToyProgram(spec, worker_id, n_workers)


def merged_devices(results) -> dict[str, list[int]]:
    merged: dict[str, list[int]] = {}
    for r in results:
        merged.update(r["devices"])
    return dict(sorted(merged.items(), key=lambda kv: int(kv[0])))
