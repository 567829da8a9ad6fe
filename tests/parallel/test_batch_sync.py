"""In-process tests: batch encoding, the round loop, and the mesh exchange over real sockets (threads)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import zmq
from toy_program import ToySpec, make_program, merged_devices

from spin.errors import SpinError, TransportError
from spin.parallel.batch import FrameBatch, check_body, decode_batch, decode_header
from spin.parallel.mesh import Mesh, MeshConfig
from spin.parallel.program import INF_PS, load_factory
from spin.parallel.sync import run_rounds, run_single


def _batch(n: int, slot: int = 32, base: int = 0) -> FrameBatch:
    rng = np.random.default_rng(base)
    return FrameBatch(
        arrival_ps=np.arange(n, dtype=np.int64) + base,
        dst_device=np.full(n, 3, np.int32),
        dst_port=np.arange(n, dtype=np.int32),
        order_key=np.arange(n, dtype=np.int64) * 7 + base,
        length=np.full(n, slot - 1, np.int32),
        frames=rng.integers(0, 256, (n, slot), dtype=np.uint8),
    )


def test_encode_decode_roundtrip() -> None:
    b = _batch(5)
    (msg,) = b.encode(epoch=2**63 + 5, round_no=9, sender=1, bound_ps=123, lookahead_ps=45)
    h = decode_header(msg)
    assert (h.epoch, h.round_no, h.sender, h.count, h.bound_ps, h.lookahead_ps, h.slot_bytes) == (
        2**63 + 5, 9, 1, 5, 123, 45, 32)
    check_body(h, [len(msg)])
    d = decode_batch(h, [msg])
    for name in ("arrival_ps", "dst_device", "dst_port", "order_key", "length", "frames"):
        assert np.array_equal(getattr(d, name), getattr(b, name)), name
        assert getattr(d, name).dtype == getattr(b, name).dtype
        assert getattr(d, name).flags.writeable  # the engine takes them without another copy


def test_empty_and_concat() -> None:
    e = FrameBatch.empty(32)
    (msg,) = e.encode(1, 0, 0, INF_PS, 1)
    assert decode_batch(decode_header(msg), [msg]).n == 0
    c = FrameBatch.concat([_batch(2), e, _batch(3, base=10)])
    assert c.n == 5 and list(c.arrival_ps) == [0, 1, 10, 11, 12]
    assert FrameBatch.concat([], slot_bytes=8).frames.shape == (0, 8)
    with pytest.raises(TransportError):
        FrameBatch.concat([_batch(1, slot=16), _batch(1, slot=32)])


def test_bad_header_is_refused() -> None:
    (p0,) = _batch(1).encode(1, 0, 0, 0, 1)
    with pytest.raises(TransportError, match="bad_magic"):
        decode_header(b"XXXX" + p0[4:])
    with pytest.raises(TransportError, match="bad_size"):
        check_body(decode_header(p0[:-1]), [len(p0) - 1])
    with pytest.raises(TransportError, match="bad_parts"):
        check_body(decode_header(p0), [len(p0), 1, 1])


def test_large_batches_travel_as_two_parts_without_a_copy_of_their_slots() -> None:
    b = _batch(40, slot=2048)  # 80 KiB of slots: over INLINE_BYTES
    head, frames = b.encode(1, 0, 0, 0, 1)
    assert frames is b.frames or np.shares_memory(frames, b.frames)
    h = decode_header(head)
    check_body(h, [len(head), frames.nbytes])
    d = decode_batch(h, [head, frames.tobytes()])
    assert np.array_equal(d.frames, b.frames) and np.array_equal(d.order_key, b.order_key)
    with pytest.raises(TransportError, match="bad_frames_size"):
        check_body(h, [len(head), frames.nbytes - 1])
    with pytest.raises(TransportError, match="bad_count"):
        check_body(h, [len(head) + 1, frames.nbytes])


def test_load_factory_errors() -> None:
    assert load_factory("toy_program:make_program") is make_program
    for bad in ("toy_program", "no_such_module_xyz:f", "toy_program:nope"):
        with pytest.raises(SpinError):
            load_factory(bad)


def test_run_single_and_until() -> None:
    spec = ToySpec(hops=40)
    p = make_program(spec, 0, 1)
    out = run_single(p)
    assert out.end_ps == INF_PS and out.events == spec.n_tokens * spec.hops
    early = make_program(spec, 0, 1)
    out2 = run_single(early, until_ps=20_000)
    assert out2.end_ps >= 20_000 and 0 < out2.events < out.events
    assert all(t >= 20_000 for t, *_ in early.heap)


class _Bad:
    """Sends a frame into the current window: a causality violation the loop must catch."""

    def lookahead_ps(self): return 100
    def next_event_ps(self): return 0
    def run_until(self, t_end_ps): b = _batch(1, base=t_end_ps - 1); return {1: b}
    def deliver(self, batch): pass
    def result(self): return {}


def test_causality_violation_is_caught() -> None:
    class Two:
        def exchange(self, round_no, outgoing, bound_ps, lookahead_ps):
            from spin.parallel.sync import Inbox
            return Inbox((), (bound_ps, bound_ps), (lookahead_ps, lookahead_ps))
    with pytest.raises(SpinError, match="before the round end"):
        run_rounds(_Bad(), Two(), 0, 2)


def _threaded_run(spec: ToySpec, n: int, inject_foreign: bool = False):
    """n workers as threads, each with its own Mesh, over real tcp sockets."""
    ctx = zmq.Context()
    meshes = [Mesh(ctx, None, MeshConfig(round_timeout_s=20)) for _ in range(n)]
    endpoints = [m.bind("127.0.0.1") for m in meshes]
    epoch = 77
    if inject_foreign:  # leftovers of an older run, queued before this run starts
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(endpoints[0])
        push.send_multipart(_batch(3).encode(epoch + 1, 1, 1, 0, 1), copy=False)
    for i, m in enumerate(meshes):
        m.connect(i, endpoints, epoch)
    results: list = [None] * n
    errors: list = []

    def work(i: int) -> None:
        try:
            prog = make_program(spec, i, n)
            run_rounds(prog, meshes[i], i, n)
            results[i] = prog.result()
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    stats = [m.stats for m in meshes]
    for m in meshes:
        m.close()
    if inject_foreign:
        push.close(0)
    ctx.term()
    assert not errors, errors
    return results, stats


def test_mesh_threads_match_single_and_drop_foreign_epoch() -> None:
    spec = ToySpec(hops=60)
    solo = make_program(spec, 0, 1)
    run_single(solo)
    results, stats = _threaded_run(spec, 3, inject_foreign=True)
    assert merged_devices(results) == merged_devices([solo.result()])
    assert stats[0].foreign_dropped == 1
    assert sum(s.frames_sent for s in stats) == sum(s.frames_received for s in stats) > 0
