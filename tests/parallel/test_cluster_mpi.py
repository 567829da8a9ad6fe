"""``spin run --launcher mpi`` under a real OpenMPI mpirun: four ranks give the result of one
worker, and a rank SIGKILLed mid-run ends the job with one line from rank 0 naming that worker,
its host and what the run waited for, although mpirun signals the other ranks one second after
the death and SIGKILLs them 20 ms later. Skips where mpirun is missing, unless
SPIN_REQUIRE_CLUSTER_TESTS=1 (CI)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid

import pytest
from cluster_tools import (digest_of, job_env, kill_tagged, left_behind, need, read_until,
                           spin_ranks)
from conftest import HERE, REPO, wait_dead

from spin.parallel.auth import generate_keys

REDUCE = str(REPO / "examples" / "reduce_8hosts.toml")
LONG = str(HERE / "perm16.toml")
END_S = 30


@pytest.fixture
def job(tmp_path):
    need("mpirun")
    tag = uuid.uuid4().hex
    key = str(generate_keys(tmp_path / "shared"))
    yield tmp_path / "shared", key, tag, job_env(tag, tmp_path)
    kill_tagged(tag)


def mpirun(n: int, scenario: str, key: str, *extra: str) -> list[str]:
    return ["mpirun", "-n", str(n), "--allow-run-as-root", "--oversubscribe", sys.executable, "-m",
            "spin", "run", scenario, "--launcher", "mpi", "--key-file", key, *extra]


def test_mpirun_four_ranks_give_the_result_of_one_worker(job, reduce_digest) -> None:
    shared, key, tag, env = job
    out = shared / "mpi.json"
    r = subprocess.run(mpirun(4, REDUCE, key, "--json", str(out)), env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "running on 3 workers" in r.stdout
    assert digest_of(out) == reduce_digest
    assert not left_behind(tag)


def test_a_rank_killed_under_mpirun_is_named(job) -> None:
    shared, key, tag, env = job
    proc = subprocess.Popen(mpirun(4, LONG, key), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, "running on 3 workers")
        pids = spin_ranks(tag, "OMPI_COMM_WORLD_RANK")
        assert sorted(pids) == [0, 1, 2, 3]
        os.kill(pids[2], signal.SIGKILL)
        _, err = proc.communicate(timeout=END_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    errors = [line for line in err.splitlines() if line.startswith("spin: error:")]
    assert len(errors) == 1, err
    assert re.search(rf"worker 1 \(rank 2, pid {pids[2]} on \S+ \(127\.0\.0\.1\); devices ", errors[0])
    assert "closed its connections" in errors[0] and "in round" in errors[0], errors[0]
    assert proc.returncode != 0
    assert not wait_dead(list(pids.values()), 5) and not left_behind(tag)
