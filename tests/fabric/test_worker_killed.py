"""An engine worker killed with SIGKILL mid-run stops the run within seconds with an error naming
it and its devices, and no worker process is left behind."""
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from spin.errors import WorkerError
from spin.fabric import run_scenario
from spin.simulation import Scenario
from spin.topology import Topology


MARK_ENV = "SPIN_TEST_RUN_STARTED"


def mark_started(host) -> None:
    """Runs in the worker owning host 0 at virtual time 0: every worker is built by then."""
    path = os.environ.get(MARK_ENV)
    if path:
        Path(path).write_text("started")


def _long_stream() -> Scenario:
    sc = Scenario(Topology.star(8))
    sc.host_program(0).call(mark_started)
    for i in range(8):
        for _ in range(4000):
            sc.host_program(i).send((i + 1) % 8, 16384, qp=1)
    return sc


def _worker_pids() -> list[int]:
    me, found = os.getpid(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"worker_main" in cmd:
            found.append(int(d.name))
    return sorted(found)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_sigkilled_engine_worker_stops_the_run(tmp_path, monkeypatch):
    run_scenario(Scenario(Topology.star(2)))            # engine compiled and cached up front
    started = tmp_path / "started"
    monkeypatch.setenv(MARK_ENV, str(started))           # workers inherit the environment
    killed: dict[str, float] = {}
    pids: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (len(pids) < 2 or not started.exists()):
            pids[:] = _worker_pids()
            time.sleep(0.05)
        time.sleep(1.0)                                  # the run is under way
        os.kill(pids[1], signal.SIGKILL)
        killed["at"] = time.monotonic()

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    with pytest.raises(WorkerError) as info:
        run_scenario(_long_stream(), workers=2, timeout_s=120)
    stopped = time.monotonic()
    t.join(5)
    assert "at" in killed, "the run ended before a worker could be killed"
    assert stopped - killed["at"] < 5
    msg = str(info.value)
    assert "SIGKILL" in msg and "devices" in msg, msg
    time.sleep(0.5)
    assert not [p for p in pids if _alive(p)]
