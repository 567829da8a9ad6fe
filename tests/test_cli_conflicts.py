"""Options that contradict each other, or outputs that cannot be written, are refused before
any work: nothing runs for minutes to fail at the end, and no value silently wins."""
from __future__ import annotations

import subprocess
import sys

import pytest


def _spin(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spin", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, message", [
    (("lb", "--size", "4KiB", "--param", "message_bytes=1048576"),
     "--param message_bytes=1048576: give it as --size instead"),
    (("lb", "--param", "seed=1"), "--param seed=1: give it as --seed instead"),
    (("topo", "fat_tree:k=4", "--param", "k=8"),
     "--param k=8: k is given in fat_tree:k=4 too; give it once"),
    (("topo", "--list", "--json", "kinds.json"), "--list only prints the topology kinds"),
    (("allreduce", "--size", ","), "--size ',' names no size"),
    (("lb", "--size", "99999999999999999999"), "no host may have that much memory"),
    (("bench", "--json", "/proc/spin-nowhere/b.json"), "--json /proc/spin-nowhere/b.json: cannot write"),
    (("demo", "--json", "/proc/spin-nowhere/d.json"), "--json /proc/spin-nowhere/d.json: cannot write"),
])
def test_refused_before_any_work(args, message) -> None:
    proc = _spin(*args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout.count("\n") <= 1


def test_an_allreduce_refused_midway_keeps_the_rows_measured_and_names_the_algorithm() -> None:
    import os
    proc = subprocess.run([sys.executable, "-m", "spin", "allreduce", "--topology", "star:hosts=4",
                           "--size", "1MiB", "--algo", "ring,rd"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "SPIN_MEMORY_LIMIT": "65MiB"})
    assert proc.returncode == 2, proc.stderr
    assert "1,048,576       ring  float32" in proc.stdout            # ring (60.7 MiB) measured
    assert proc.stderr.startswith("spin: error: --algo rd at --size 1,048,576 B: the engine "
                                  "state needs about 69.7 MiB"), proc.stderr


def test_a_multi_worker_run_over_the_memory_limit_is_refused_before_its_workers_start(
        monkeypatch) -> None:
    from spin import Scenario
    from spin.collectives import ALGORITHMS
    from spin.errors import ConfigError
    from spin.fabric import run_scenario
    from spin.topologies import build_topology
    sc = Scenario(build_topology("star", hosts=4))
    ALGORITHMS.get("ring", "algorithm").build(sc, 1 << 14, "float32")
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "1MiB")
    with pytest.raises(ConfigError, match=r"^the engine state needs about .*SPIN_MEMORY_LIMIT"):
        run_scenario(sc, workers=2, quiet=True)      # a WorkerError when a worker found it
