"""Failures: a raising program, a crashing or SIGKILLed worker, Ctrl-C, a lost coordinator.

Every test is bounded by explicit timeouts and checks that no worker process survives.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from conftest import HERE, TOY, child_env, read_pids, wait_dead
from toy_program import FailPlan, ToySpec

from spin.errors import WorkerError
from spin.parallel import run_fabric
from spin.parallel.auth import generate_keys


@pytest.mark.parametrize("mode, expect", [
    ("raise", "RuntimeError: toy failure on worker 1"),
    ("exit", "exited with code 7"),
    ("sigkill", "was killed by SIGKILL"),
])
def test_worker_failure_stops_the_run(tmp_path, mode: str, expect: str) -> None:
    spec = ToySpec(hops=100_000, slow_s=0.01, fail=FailPlan(mode, worker=1, at_ps=50_000), pid_dir=str(tmp_path))
    with pytest.raises(WorkerError) as info:
        run_fabric(TOY, spec, n_workers=3, timeout_s=60)
    raised_at = time.time()
    failed_at = float((tmp_path / "failed_at").read_text())
    pids = read_pids(tmp_path)
    msg = str(info.value)
    assert "worker 1 " in msg and f"pid {pids[1]}" in msg and "toy devices [1, 4, 7]" in msg, msg
    assert expect in msg, msg
    if mode == "raise":
        assert "--- remote traceback ---" in msg and "_maybe_fail" in msg
        assert info.value.remote_traceback
    assert info.value.worker_id == 1 and info.value.pid == pids[1]
    assert raised_at - failed_at < 5, f"stopped {raised_at - failed_at:.2f} s after the failure"
    assert len(pids) == 3 and not wait_dead(list(pids.values()), 1.0)


def test_a_result_too_large_to_send_ends_the_run_naming_the_worker(tmp_path) -> None:
    """The coordinator drops a control message above MAX_CONTROL_BYTES: the worker refuses to
    send such a result, instead of the run waiting for it for ever."""
    # the worker's limit lowered to 1 MiB: encoding a 256 MiB result holds the worker's GIL
    # for seconds, longer than the heartbeat timeout of a loaded test machine
    spec = ToySpec(hops=20, pid_dir=str(tmp_path), result_pad_bytes=3 << 20,
                   worker_result_limit_bytes=1 << 20)
    started = time.monotonic()
    with pytest.raises(WorkerError) as info:
        run_fabric(TOY, spec, n_workers=2, timeout_s=60)
    msg = str(info.value)
    assert "TransportError: its result is 3 MiB, above the 1 MiB a worker may send" in msg, msg
    assert "--workers 1" in msg and "--- remote traceback ---" not in msg, msg
    assert info.value.remote_traceback      # kept for whoever wants it
    assert time.monotonic() - started < 30
    assert not wait_dead(list(read_pids(tmp_path).values()), 2.0)


def test_an_oversized_result_that_arrives_ends_the_run() -> None:
    """A result above the limit that does reach the coordinator (a worker of another version)
    names its sender instead of being dropped while the run waits."""
    from types import SimpleNamespace

    from spin.parallel.control import MAX_CONTROL_BYTES, MSG_RESULT
    from spin.parallel.coordinator import Coordinator

    class Frame(SimpleNamespace):
        def __len__(self) -> int:
            return self.n

    member = SimpleNamespace(identity=b"w1", who=lambda: "worker 1 (pid 7)", stderr_path="",
                             worker_id=1, pid=7, description="")
    coord = Coordinator.__new__(Coordinator)
    frames = [Frame(bytes=b"w1", n=2), Frame(bytes=MSG_RESULT, n=6),
              Frame(bytes=b"", n=MAX_CONTROL_BYTES + 1)]
    with pytest.raises(WorkerError, match=r"worker 1 \(pid 7\) sent a result of 256 MiB, above"):
        coord._refuse_oversized_result([member], frames)
    coord._refuse_oversized_result([member], [frames[0], frames[1], Frame(bytes=b"", n=10)])
    coord._refuse_oversized_result([member], [Frame(bytes=b"w2", n=2), *frames[1:]])   # a stranger


def _drive(tmp_path, n: int, remote: int, slow: float = 0.02, key: str = "") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "drive.py"), str(n), str(remote), str(tmp_path), str(slow), "100000",
         *([key] if key else [])],
        # TMPDIR: the logs a SIGKILLed coordinator cannot remove stay in the test's folder
        env={**child_env(), "TMPDIR": str(tmp_path)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )


def _wait_pids(tmp_path, n: int, timeout_s: float = 20) -> dict[int, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = read_pids(tmp_path)
        if len(pids) == n:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"workers did not start: {read_pids(tmp_path)}")


def test_ctrl_c_stops_every_worker(tmp_path) -> None:
    drv = _drive(tmp_path, n=3, remote=0)
    try:
        pids = _wait_pids(tmp_path, 3)
        time.sleep(0.5)  # mid-run
        t0 = time.monotonic()
        drv.send_signal(signal.SIGINT)
        out, err = drv.communicate(timeout=10)
        assert time.monotonic() - t0 < 5
    finally:
        if drv.poll() is None:
            drv.kill()
            drv.wait()
    assert drv.returncode == 130 and "INTERRUPTED" in out, (out, err)
    assert not wait_dead(list(pids.values()), 2.0)


def test_workers_exit_when_the_coordinator_dies(tmp_path) -> None:
    """Local workers die with their parent (PDEATHSIG); a remote one notices the lost heartbeat."""
    key = str(generate_keys(tmp_path / "keys"))
    drv = _drive(tmp_path, n=2, remote=1, key=key)
    ext = None
    try:
        endpoint = drv.stdout.readline().split()[1]
        ext = subprocess.Popen([sys.executable, "-m", "spin.parallel.worker_main", "--join", endpoint,
                                "--key-file", key],
                               env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        pids = _wait_pids(tmp_path, 2)
        time.sleep(0.3)
        drv.kill()
        drv.wait(timeout=5)
        t0 = time.monotonic()
        local = [p for p in pids.values() if p != ext.pid]
        assert not wait_dead(local, 2.0)
        rc = ext.wait(timeout=8)
        assert time.monotonic() - t0 < 6
        assert rc == 75 and "no heartbeat from the coordinator" in ext.stderr.read()
    finally:
        for p in (drv, ext):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
