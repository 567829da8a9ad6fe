"""Bad frame batches from a peer never reach the engine: with forged batches mixed into every
round (ports of other workers, out-of-range ports, frames from the past, short frames, keys of
the wrong device), a 2-worker engine run still gives the single-process result bit for bit, and
each forged batch is counted under its reason."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from spin.config import EngineConfig
from spin.runtime.fabric_workers import EngineWorker, PartitionedScenario, auto_partition
from spin.parallel.batch import FrameBatch
from spin.parallel.sync import Inbox, Rejects, run_rounds
from spin.results import RunResult
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

FORGED = ("bad_port", "not_owned", "arrival_in_past", "bad_length", "bad_key")


def _scenario() -> Scenario:
    # host-memory digests on: a forged frame's bytes reaching a host would change them
    sc = Scenario(Topology.star(4), engine=EngineConfig(host_memory_digests=True))
    for i in range(4):
        h = sc.host_program(i)
        for _ in range(4):
            h.send((i + 1) % 4, 20000, qp=1)
        h.wait_recv(qp=1, count=4).mark(f"h{i}")
    return sc


def _forge(reason: str, real: FrameBatch, check, wid: int) -> FrameBatch:
    f = {k: np.array(getattr(real, k)) for k in ("arrival_ps", "dst_device", "dst_port", "order_key",
                                                   "length", "frames")}
    f["frames"][:] = 0xAB  # if any byte of this reached a host, the digests would differ
    if reason == "bad_port":
        f["dst_port"][:] = len(check.port_dev) + 5
    elif reason == "not_owned":  # a port of a device the receiver does not own, consistently named
        foreign = int(np.nonzero(check.owner[check.port_dev] != wid)[0][0])
        f["dst_port"][:] = foreign
        f["dst_device"][:] = check.port_dev[foreign]
    elif reason == "arrival_in_past":
        f["arrival_ps"][:] = 0  # every round ends after 0
    elif reason == "bad_length":
        f["length"][:] = 10
    elif reason == "bad_key":
        f["order_key"][:] = 0
    return FrameBatch(**f)


class _Pair:
    """In-memory exchange for two workers in threads, adding forged batches 'from the peer'."""

    def __init__(self, workers: list[EngineWorker]) -> None:
        self.workers = workers
        self.barrier = threading.Barrier(2, timeout=60)
        self.box: list = [None, None]
        self.stats = [Rejects(), Rejects()]
        self.t_end = [0, 0]
        self.forged = 0
        self.lock = threading.Lock()

    def side(self, wid: int):
        pair = self

        class Side:
            stats = pair.stats[wid]

            def exchange(self, round_no, outgoing, bound_ps, lookahead_ps):
                pair.box[wid] = (outgoing.get(1 - wid), bound_ps, lookahead_ps)
                pair.barrier.wait()
                real, bound, look = pair.box[1 - wid]
                pair.barrier.wait()
                batches, senders = [], []
                if real is not None and real.n:
                    batches.append(real)
                    senders.append(1 - wid)
                    with pair.lock:
                        reason = FORGED[pair.forged % len(FORGED)]
                        pair.forged += 1
                    batches.insert(0, _forge(reason, real, pair.workers[wid].check, wid))
                    senders.insert(0, 1 - wid)
                bounds = [0, 0]
                looks = [0, 0]
                bounds[wid], bounds[1 - wid] = bound_ps, bound
                looks[wid], looks[1 - wid] = lookahead_ps, look
                return Inbox(batches, bounds, looks, senders)

        return Side()


@pytest.mark.slow
def test_forged_batches_are_dropped_and_the_result_is_unchanged():
    reference = Simulation(_scenario()).run()
    sc = _scenario()
    spec = PartitionedScenario(sc, auto_partition(sc, 2))
    workers = [EngineWorker(spec, w, 2) for w in range(2)]
    pair = _Pair(workers)
    errors: list = []

    def work(w: int) -> None:
        try:
            run_rounds(workers[w], pair.side(w), w, 2)
        except Exception as exc:  # surfaced below
            errors.append(exc)
            pair.barrier.abort()

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    parts = []
    for w in workers:
        d = w.result()
        d.pop("captured"), d.pop("regions"), d.pop("handler_memory")
        assert d.pop("peer_batches_rejected") == w.check.rejected
        parts.append(RunResult.from_dict(d))
    merged = RunResult.merge(parts)
    assert len(reference.host_memory_sha256) == 4
    assert merged.deterministic_digest() == reference.deterministic_digest()
    counted: dict[str, int] = {}
    for s in pair.stats:
        for k, v in s.rejected.items():
            counted[k] = counted.get(k, 0) + v
    assert pair.forged >= len(FORGED) and sum(counted.values()) == pair.forged
    assert set(counted) == set(FORGED), counted


def test_header_slot_frames_may_be_longer_than_their_row_but_not_than_a_frame():
    """With header slots a frame crosses as its first 128 bytes: a peer's frame longer than the
    row it travels in is accepted up to a full frame (an MTU and its headers), no further."""
    from spin.runtime.fabric_workers import PeerFrameCheck
    topo = Topology.star(2)                      # devices h0, h1, s0
    owner = (0, 1, 1)
    check = PeerFrameCheck(topo, owner, 1, 128, max_frame_bytes=1152)
    port = next(p for (dev, _link), p in topo.global_ports().items() if dev == "s0"
                and check.peer_dev[p] == 0)

    def batch(length: int) -> FrameBatch:
        return FrameBatch(arrival_ps=np.array([10**6], np.int64),
                          dst_device=np.array([2], np.int32), dst_port=np.array([port], np.int32),
                          order_key=np.array([(0 << 40) | 7], np.int64),
                          length=np.array([length], np.int32),
                          frames=np.zeros((1, 128), np.uint8))

    assert check.reason(batch(1152), sender=0) is None
    assert check.reason(batch(1153), sender=0) == "bad_length"
    assert PeerFrameCheck(topo, owner, 1, 128).reason(batch(1152), sender=0) == "bad_length"
