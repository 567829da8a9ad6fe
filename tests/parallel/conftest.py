"""Shared helpers for the multi-process tests: import paths and process liveness checks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for p in (str(REPO), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

TOY = "toy_program:make_program"


def child_env() -> dict[str, str]:
    """Environment for processes the tests start themselves (repo + this folder importable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE), env.get("PYTHONPATH", "")])
    return env


def alive(pid: int) -> bool:
    """True if pid runs (zombies count as dead: they only wait to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(pids: list[int], timeout_s: float) -> list[int]:
    """Wait until every pid is dead; return the survivors."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        survivors = [p for p in pids if alive(p)]
        if not survivors:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def read_pids(pid_dir: str | os.PathLike) -> dict[int, int]:
    out = {}
    for f in Path(pid_dir).glob("*.pid"):
        text = f.read_text().strip()
        if text:
            out[int(f.stem)] = int(text)
    return out


@pytest.fixture(scope="session")
def reduce_digest() -> str:
    """The 8-host reduce example on one worker, in process: what every launched run must equal."""
    from spin.fabric import run_scenario
    from spin.scenario_file import load_scenario
    scenario, _ = load_scenario(REPO / "examples" / "reduce_8hosts.toml")
    return run_scenario(scenario, 1).deterministic_digest()
