"""Local worker processes: how their end reads in an error, and reaping them without leaving one."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

KILL_WAIT_S = 1.0
EXIT_ORPHANED = 75  # a worker that heard no heartbeat from its coordinator exits with this


def exit_text(rc: int) -> str:
    if rc == EXIT_ORPHANED:
        return (f"exited with code {rc}: it heard no heartbeat from the coordinator (the network "
                f"between them failed, or the coordinator stalled)")
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with code {rc}"


def log_tail(path: str, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def wait_all(procs: list[subprocess.Popen], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def reap(procs: list[subprocess.Popen], grace_s: float) -> None:
    """Give processes ``grace_s`` to exit, then SIGTERM, then SIGKILL; Ctrl-C meanwhile kills at once."""
    procs = [p for p in procs if p.returncode is None]
    try:
        if grace_s > 0:
            wait_all(procs, grace_s)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            alive = [p for p in procs if p.poll() is None]
            if not alive:
                break
            for p in alive:
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass
            wait_all(alive, KILL_WAIT_S)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        raise
