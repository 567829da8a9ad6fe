"""A process that waits for another's compile says so, and a lock that is never released ends
in one line naming it, not in a silent wait without end."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from spin.caches import compile_lock
from spin.errors import SpinError

HOLD = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _held(path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_wait_for_another_compile_is_announced(tmp_path, capsys):
    lock = tmp_path / "engine.lock"
    holder = _held(lock, 2.5)
    try:
        started = time.perf_counter()
        with compile_lock(lock, "the engine"):
            waited = time.perf_counter() - started
    finally:
        holder.wait(timeout=30)
    assert waited > 1.0
    assert f"spin: waiting for another process compiling the engine (lock {lock}) ..." in \
        capsys.readouterr().err


def test_a_lock_never_released_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    lock = tmp_path / "engine.lock"
    monkeypatch.setenv("SPIN_LOCK_WAIT_S", "1")
    holder = _held(lock, 20)
    try:
        with pytest.raises(SpinError) as err:
            with compile_lock(lock, "the engine", quiet=True):
                pass
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert str(err.value) == (f"waited 1 s for {lock}, the lock of another process compiling "
                              f"the engine; if no spin process is running, remove that file "
                              f"(SPIN_LOCK_WAIT_S sets the wait)")
    assert capsys.readouterr().err == ""          # quiet: no waiting line


def test_a_free_lock_is_taken_at_once_and_silently(tmp_path, capsys):
    with compile_lock(tmp_path / "engine.lock", "the engine"):
        pass
    assert capsys.readouterr().err == ""
