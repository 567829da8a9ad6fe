"""A handler that never returns stops the run within the configured wall-clock time, naming the
handler; Ctrl-C stops a run stuck in a handler; a stuck worker stops a multi-worker run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spin.errors import SpinError
from spin.runtime.watchdog import EXIT_HANDLER_TIMEOUT, EXIT_INTERRUPTED

ROOT = Path(__file__).resolve().parents[1]
COMPILE_ALLOWANCE_S = 600   # a cold engine compile on a loaded 2-core machine


def _start(timeout_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.looping_handlers", str(timeout_s)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_ready(proc: subprocess.Popen) -> float:
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return time.monotonic()


def test_endless_handler_is_stopped_and_named() -> None:
    proc = _start(1.0)
    try:
        t0 = _wait_ready(proc)
        code = proc.wait(timeout=COMPILE_ALLOWANCE_S)
        elapsed = time.monotonic() - t0
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert code == EXIT_HANDLER_TIMEOUT, err
    assert elapsed < 10, elapsed
    assert "payload handler 'endless_payload'" in err and "looping_handlers.py:" in err
    assert "handler_timeout_s = 1 s" in err and "qp 3" in err
    assert err.index("did not return within") < err.index("; packet:") < err.index("frame (")


def test_ctrl_c_stops_a_run_stuck_in_a_handler() -> None:
    proc = _start(3600.0)
    try:
        _wait_ready(proc)
        time.sleep(1.0)
        assert proc.poll() is None
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert code == EXIT_INTERRUPTED, err
    assert elapsed < 5, elapsed
    assert "'endless_payload'" in err and "interrupted" in err


@pytest.mark.slow
def test_a_stuck_worker_stops_a_multi_worker_run() -> None:
    from spin.fabric import run_scenario
    from tests.looping_handlers import endless_scenario
    t0 = time.monotonic()
    with pytest.raises(SpinError) as info:
        run_scenario(endless_scenario(1.0), workers=2, timeout_s=COMPILE_ALLOWANCE_S)
    assert time.monotonic() - t0 < COMPILE_ALLOWANCE_S
    assert "worker" in str(info.value)
