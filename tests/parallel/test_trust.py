"""No code from the network: the run travels as data, keyless workers stay on loopback, and junk
on the coordinator's control socket is counted and ignored."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import zmq
from conftest import TOY
from toy_program import ToySpec, make_program, merged_devices

from spin.errors import ConfigError, TransportError
from spin.parallel import Coordinator, CoordinatorConfig, codec, run_single, worker_main
from spin.parallel.control import Rejections, parse

SPEC = ToySpec(n_devices=6, n_tokens=8, hops=60, slow_s=0.002)


def _reference() -> dict:
    p = make_program(SPEC, 0, 1)
    run_single(p)
    return merged_devices([p.result()])


# -- the run description as data ------------------------------------------------------------

def test_spec_roundtrips_as_data_and_keeps_shared_objects() -> None:
    arr = np.zeros(3, np.dtype([("a", "<i4"), ("b", "<f8", (2,))]))
    arr["a"] = [1, -2, 3]
    shared = {"k": [1, 2]}  # dicts and dataclasses keep their identity; plain lists go by value
    obj = {"spec": SPEC, "arr": arr, "t": (1, b"\x00\xff", None), 7: {3, 4}, "s1": shared, "s2": shared,
           "fn": make_program, "inf": float("inf"), "i64": np.int64(-5)}
    back = codec.decode(codec.encode(obj))
    assert back["spec"] == SPEC and back["fn"] is make_program and back[7] == {3, 4}
    assert back["t"] == (1, b"\x00\xff", None) and back["inf"] == float("inf")
    assert back["arr"].dtype == arr.dtype and np.array_equal(back["arr"], arr)
    assert back["i64"] == -5 and back["i64"].dtype == np.int64
    assert back["s1"] is back["s2"]


def _local_fn():
    return lambda spec, wid, n: None


@pytest.mark.parametrize("bad, why", [
    (_local_fn(), "module-level"),
    (object(), "cannot send"),
    (np.array([object()]), "Python objects"),
])
def test_what_cannot_travel_as_data_is_refused_in_the_caller(bad, why) -> None:
    with pytest.raises(ConfigError, match=why):
        codec.encode({"x": bad})


@pytest.mark.parametrize("blob, why", [
    (b"\x80\x04\x95 pickle bytes", "not valid JSON"),
    (json.dumps({"$c": "os:system", "f": {}, "id": 0}), "not a dataclass"),
    (json.dumps({"$p": "subprocess:Popen", "f": {"args": "id"}, "id": 0}), "not a pydantic model"),
    (json.dumps({"$c": "toy_program:ToySpec", "f": {"hops": 1}, "id": 0}), "fields"),
    (json.dumps({"$a": ["|O", [1], ""]}), "object dtype"),
    (json.dumps({"$a": ["<i8", [4], "AAAA"]}), "carries"),
    (json.dumps({"$ref": 3}), "unknown object"),
    (json.dumps({"$zz": 1}), "unknown tag"),
    (json.dumps({"$r": "no_such_module_xyz:f"}), "cannot be imported"),
    ("[" * 100_000 + "]" * 100_000, "JSON|deeper"),
])
def test_malformed_descriptions_are_refused_without_running_anything(blob, why) -> None:
    with pytest.raises((TransportError, ConfigError), match=why):
        codec.decode(blob)


# -- who a worker agrees to join ---------------------------------------------------------------

def test_keyless_worker_refuses_a_coordinator_beyond_loopback(monkeypatch, capsys) -> None:
    def no_sockets(*a, **k):
        raise AssertionError("a socket was opened before the coordinator was trusted")

    monkeypatch.setattr(zmq, "Context", no_sockets)
    rc = worker_main.main(["--join", "tcp://192.0.2.7:5555", "--join-timeout-s", "1"])
    err = capsys.readouterr().err
    assert rc == worker_main.EXIT_JOIN
    assert "refusing to join tcp://192.0.2.7:5555 without --key-file" in err and "CurveZMQ" in err
    assert worker_main.is_loopback_host("localhost") and worker_main.is_loopback_host("127.0.0.9")
    assert not worker_main.is_loopback_host("192.0.2.7") and not worker_main.is_loopback_host("::ffff:10.0.0.1")


def test_wildcard_endpoints_resolve_to_the_coordinators_host() -> None:
    eps = ("tcp://0.0.0.0:4000", "tcp://10.9.8.7:4001", "tcp://[::]:4002")
    assert worker_main.resolve_endpoints(eps, "head") == [
        "tcp://head:4000", "tcp://10.9.8.7:4001", "tcp://head:4002"]


# -- the coordinator's control socket ----------------------------------------------------------

def test_control_parse_counts_every_kind_of_junk() -> None:
    rej = Rejections()
    junk = [
        [b"id"],                                             # parts
        [b"id", b"hello"],                                   # parts
        [b"id", b"launch", b"{}"],                           # unknown_kind
        [b"id", b"hello", b"\xff\xfe not json"],             # not_json
        [b"id", b"hello", b"[1, 2]"],                        # not_an_object
        [b"id", b"ready", b"{}"],                            # missing_field
        [b"id", b"hello", json.dumps({"pid": "x", "host": "h", "data_endpoint": "tcp://a:1",
                                      "hb_identity": "00", "slot": 0, "token": ""}).encode()],  # bad_field
        [b"id", b"beat", b'{"t_ps": "soon"}'],               # bad_field
        [b"id", b"result", json.dumps({"result": [], "rounds": 1, "end_ps": 1, "loop_wall_s": 1,
                                       "events": 1, "stats": {}}).encode()],  # bad_field
    ]
    assert all(parse(m, rej) is None for m in junk)
    assert rej == {"parts": 2, "unknown_kind": 1, "not_json": 1, "not_an_object": 1,
                   "missing_field": 1, "bad_field": 3}
    assert parse([b"id", b"beat", b""], rej) == (b"id", b"beat", {})


def _junk_sender(endpoint: str, stop: threading.Event, sent: list) -> None:
    """A foreign local process: garbage, a forged hello for slot 0, messages as an unknown sender."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, 2000)
    sock.connect(endpoint)
    hello = {"pid": os.getpid(), "host": "evil", "data_endpoint": "tcp://127.0.0.1:9",
             "hb_identity": "abcd", "slot": 0, "token": "guess"}
    msgs = [[b"x"], [b"hello", b"[]"], [b"hello", b"{not json"], [b"result", b"{}"], [b"zzz", b"{}"],
            [b"hello", json.dumps(hello).encode()], [b"hello", json.dumps({**hello, "slot": -1}).encode()],
            [b"ready", b'{"describe": "me"}'], [b"error", json.dumps(
                {"kind": "X", "message": "abort!", "traceback": "", "describe": ""}).encode()]]
    try:
        for m in msgs:
            sock.send_multipart(m)
            sent.append(m)
        replies = []
        while not stop.is_set() and len(replies) < 2:
            if sock.poll(100):
                replies.append(sock.recv_multipart())
        sent.append(replies)
    finally:
        sock.close(0)
        ctx.term()


def test_junk_from_a_local_process_is_counted_and_the_run_completes() -> None:
    with Coordinator(CoordinatorConfig(timeout_s=60)) as coord:
        stop, sent = threading.Event(), []
        t = threading.Thread(target=_junk_sender, args=(coord.endpoint, stop, sent), daemon=True)
        t.start()
        time.sleep(0.5)  # queued at the coordinator before the run starts
        try:
            out = coord.run(TOY, SPEC, n_workers=2)
        finally:
            stop.set()
            t.join(5)
    assert merged_devices(out.results) == _reference()
    assert out.control_rejected == {"parts": 1, "not_an_object": 1, "not_json": 1, "missing_field": 1,
                                    "unknown_kind": 1, "hello_refused": 2, "unknown_sender": 2}, out.control_rejected
    assert sent[-1] and all(r[0] == b"reject" for r in sent[-1])  # both forged hellos refused


def test_spawned_workers_secret_is_not_on_their_command_line() -> None:
    seen: list[bytes] = []

    def watch(stop: threading.Event) -> None:
        while not stop.is_set():
            for d in Path("/proc").iterdir():
                try:
                    cmd = (d / "cmdline").read_bytes()
                except OSError:
                    continue
                if b"spin.parallel.worker_main" in cmd:
                    seen.append(cmd)
            time.sleep(0.02)

    stop = threading.Event()
    t = threading.Thread(target=watch, args=(stop,), daemon=True)
    t.start()
    try:
        out = Coordinator(CoordinatorConfig(timeout_s=60))
        with out as coord:
            res = coord.run(TOY, SPEC, n_workers=2)
    finally:
        stop.set()
        t.join(5)
    assert merged_devices(res.results) == _reference()
    assert seen, "never saw a worker process"
    assert all(b"--token-stdin" in c and b"--token\x00" not in c for c in seen)
