"""Workers started separately (as on other machines) join a run over tcp and give the same result."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spin.fabric import run_scenario
from spin.parallel.auth import generate_keys
from spin.simulation import Simulation

from .scenarios import eight_host_mix

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_worker(port: int, key_file: str | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "spin.cli", "worker", "--join", f"tcp://127.0.0.1:{port}"]
    if key_file:
        cmd += ["--key-file", key_file]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_joined_workers_give_identical_results(tmp_path):
    reference = Simulation(eight_host_mix(capture=False)).run()
    key = str(generate_keys(tmp_path / "keys"))
    port = _free_port()
    joiner = _start_worker(port, key)
    try:
        result = run_scenario(eight_host_mix(capture=False), workers=3, remote_workers=1,
                              port=port, key_file=key, timeout_s=180)
        assert joiner.wait(timeout=30) == 0
    finally:
        if joiner.poll() is None:
            joiner.kill()
            joiner.wait()
    assert result.deterministic_digest() == reference.deterministic_digest()
