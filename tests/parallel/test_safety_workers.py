"""Workers that cannot hang a run or be hijacked (issue 18, items 2 and 3).

A stopped local worker ends the run after the silence timeout with an error naming it and what
the run waited for, and leaves no process behind; a run with slots for workers joining over tcp
needs the run's key, loopback included, so a foreign local process never gets a slot or the
scenario.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
import zmq
from conftest import TOY, read_pids, wait_dead
from toy_program import ToySpec

from spin.errors import ConfigError, SpinError, WorkerError
from spin.parallel import Coordinator, CoordinatorConfig, run_fabric


def test_a_stopped_local_worker_ends_the_run(tmp_path) -> None:
    spec = ToySpec(hops=100_000, slow_s=0.01, pid_dir=str(tmp_path))
    stopped: dict[str, float] = {}

    def stop_worker_1() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(read_pids(tmp_path)) < 2:
            time.sleep(0.05)
        time.sleep(0.5)  # mid-run
        pids = read_pids(tmp_path)
        if 1 in pids:
            os.kill(pids[1], signal.SIGSTOP)
            stopped["at"] = time.monotonic()

    t = threading.Thread(target=stop_worker_1, daemon=True)
    t.start()
    with pytest.raises(WorkerError) as info:
        run_fabric(TOY, spec, n_workers=2, timeout_s=120, silence_timeout_s=2.0)
    raised_at = time.monotonic()
    t.join(5)
    pids = read_pids(tmp_path)
    first = str(info.value).splitlines()[0]
    assert "worker 1 " in first and f"pid {pids[1]}" in first, first
    assert "sent no heartbeat for 2.0 s" in first and "in round" in first, first
    assert "its peers wait for its next round message" in first, first
    assert info.value.worker_id == 1
    assert 2.0 <= raised_at - stopped["at"] < 30, raised_at - stopped["at"]
    assert not wait_dead(list(pids.values()), 5.0)  # the stopped one too: no orphan


def test_silence_timeout_is_bounded_by_default_and_validated() -> None:
    assert 0 < CoordinatorConfig().silence_timeout_s <= 30
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="silence_timeout_s"):
            CoordinatorConfig(silence_timeout_s=bad)


def test_remote_slots_need_the_runs_key_even_on_loopback() -> None:
    with pytest.raises(ConfigError, match="allow_remote = 1 without key_file"):
        CoordinatorConfig(allow_remote=1)


def _hijack(endpoint: str, got: list) -> None:
    """A foreign local process asking for a remote slot, as a keyless worker would."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    hello = {"pid": os.getpid(), "host": "intruder", "data_endpoint": "tcp://127.0.0.1:9",
             "hb_identity": "abcd", "slot": -1, "token": ""}
    try:
        sock.send_multipart([b"hello", json.dumps(hello).encode()])
        if sock.poll(3000):
            got.append(sock.recv_multipart())
    finally:
        sock.close(0)
        ctx.term()


def test_a_keyless_local_process_gets_no_slot_and_no_scenario(tmp_path) -> None:
    """Before: a keyless loopback run with a remote slot gave it to the first local process
    that said hello, and sent it the whole spec. Now such a run needs a key (CurveZMQ), and a
    process without it cannot even complete the handshake."""
    from spin.parallel.auth import generate_keys

    key = str(generate_keys(tmp_path / "keys"))
    cfg = CoordinatorConfig(allow_remote=1, key_file=key, timeout_s=60, join_timeout_s=4)
    got: list = []
    with Coordinator(cfg) as coord:
        t = threading.Thread(target=_hijack, args=(coord.endpoint, got), daemon=True)
        t.start()
        with pytest.raises(SpinError, match=r"workers \[1\] did not join"):
            coord.run(TOY, ToySpec(hops=50), n_workers=2)
        t.join(5)
    assert got == []  # no setup (and so no spec) ever reached it


def test_a_worker_gives_up_once_on_a_coordinator_that_never_answers() -> None:
    """A bad address is refused at once; an unanswered one after the join timeout, once (the
    failure report does not wait for the absent coordinator a second time)."""
    import subprocess
    import sys
    with zmq.Context() as ctx, ctx.socket(zmq.REP) as free:
        port = free.bind_to_random_port("tcp://127.0.0.1")
    worker = [sys.executable, "-m", "spin", "worker", "--join"]
    bad = subprocess.run(worker + ["tcp://127.0.0.1:99999"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "with a port 1..65535, got 'tcp://127.0.0.1:99999'" in bad.stderr
    started = time.monotonic()
    silent = subprocess.run(worker + [f"tcp://127.0.0.1:{port}", "--join-timeout-s", "5"],
                            capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    assert silent.returncode != 0 and "spin worker (pid " in silent.stderr, silent.stderr
    assert "no answer from the coordinator" in silent.stderr and took < 5 + 3.5, took   # twice: over 10 s
