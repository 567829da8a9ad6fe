"""``spin run --launcher slurm`` under a real Slurm: munged (its own key), slurmctld and slurmd,
started by the fixture in a scratch folder on free ports, with one node (this machine) that
oversubscribes its cores. Four tasks through srun and through an sbatch script give the result
of one worker; a job cancelled with scancel, a task SIGKILLed (as the OOM killer or a node's
failure would) and a SIGKILLed rank 0 each end the run with one line naming the worker, its
host and what the run waited for, and leave no process behind. Skips, saying which tool is
missing, where Slurm is not installed, unless SPIN_REQUIRE_CLUSTER_TESTS=1 (CI)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid

import pytest
from cluster_tools import (Slurm, digest_of, job_env, kill_tagged, left_behind, need, need_root,
                           read_until, spin_ranks, unavailable, wait_for_line)
from conftest import HERE, REPO, wait_dead

from spin.parallel.auth import generate_keys

REDUCE = str(REPO / "examples" / "reduce_8hosts.toml")
LONG = str(HERE / "perm16.toml")
END_S = 30  # every fault must end the job within this


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    need_root()
    need("munged", "slurmctld", "slurmd", "srun", "sbatch", "scancel", "squeue", "sinfo", "scontrol")
    cluster = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        try:
            cluster.start()
        except RuntimeError as exc:
            unavailable(f"the one-node Slurm did not start: {exc}")
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def job(slurm, tmp_path):
    """A shared directory with the run's key, and a tag that finds the job's processes; whatever
    a failed test leaves running is killed."""
    tag = uuid.uuid4().hex
    key = str(generate_keys(tmp_path / "shared"))
    yield tmp_path / "shared", key, tag, job_env(tag, tmp_path, SLURM_CONF=str(slurm.conf))
    kill_tagged(tag)


def spin_cmd(scenario: str, key: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spin", "run", scenario, "--launcher", "slurm", "--key-file", key,
            *extra]


def spin_errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("spin: error:")]


def test_srun_four_tasks_give_the_result_of_one_worker(slurm, job, reduce_digest) -> None:
    shared, key, tag, env = job
    out = shared / "srun.json"
    r = subprocess.run(["srun", "-n", "4", "--overcommit", "--kill-on-bad-exit=1",
                        *spin_cmd(REDUCE, key, "--json", str(out))],
                       env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert re.search(r"running on 3 workers: worker 0 = rank 1 on \S+ \(127\.0\.0\.1\)", r.stdout), r.stdout
    assert digest_of(out) == reduce_digest
    assert not left_behind(tag)
    assert not list(shared.glob("*.rendezvous.json"))  # rank 0 removes it after a good run


def test_sbatch_script_gives_the_result_of_one_worker(slurm, job, reduce_digest) -> None:
    shared, key, tag, env = job
    out, log = shared / "sbatch.json", shared / "job.out"
    script = shared / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --ntasks=4\n#SBATCH --overcommit\n"
                      f"#SBATCH --output={log}\n"
                      f"srun --kill-on-bad-exit=1 {' '.join(spin_cmd(REDUCE, key, '--json', str(out)))}\n")
    job_id = slurm.run(["sbatch", "--parsable", str(script)], env=env).stdout.strip()
    state = slurm.wait_job(job_id, 240)
    assert state == "COMPLETED", (state, log.read_text() if log.exists() else "")
    assert "running on 3 workers" in log.read_text()
    assert digest_of(out) == reduce_digest
    assert not left_behind(tag)


def test_scancel_ends_the_run_with_one_line(slurm, job) -> None:
    shared, key, tag, env = job
    log = shared / "job.out"
    script = shared / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --ntasks=4\n#SBATCH --overcommit\n"
                      f"#SBATCH --output={log}\nsrun {' '.join(spin_cmd(LONG, key))}\n")
    job_id = slurm.run(["sbatch", "--parsable", str(script)], env=env).stdout.strip()
    wait_for_line(log, "running on 3 workers", 180)
    pids = spin_ranks(tag, "SLURM_PROCID")
    assert sorted(pids) == [0, 1, 2, 3]
    slurm.run(["scancel", job_id])
    assert slurm.wait_job(job_id, END_S) == "CANCELLED"
    assert not wait_dead(list(pids.values()), 5)
    errors = spin_errors(log.read_text())
    assert len(errors) == 1, log.read_text()
    assert "stopped by SIGTERM (scancel" in errors[0] and "in round" in errors[0], errors[0]
    assert re.search(r"the slowest: worker \d \(rank \d, pid \d+ on \S+ \(127\.0\.0\.1\)", errors[0])
    assert not left_behind(tag)


def _srun_until_running(env: dict, key: str) -> tuple[subprocess.Popen, dict[int, int]]:
    srun = subprocess.Popen(["srun", "-n", "4", "--overcommit", *spin_cmd(LONG, key)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    read_until(srun, "running on 3 workers")
    return srun, spin_ranks(env["SPIN_TEST_TAG"], "SLURM_PROCID")


def test_a_killed_task_is_named_by_rank_pid_and_host(slurm, job) -> None:
    shared, key, tag, env = job
    srun, pids = _srun_until_running(env, key)
    try:
        os.kill(pids[2], signal.SIGKILL)  # as the OOM killer, or a node's failure, would
        _, err = srun.communicate(timeout=END_S)
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()
    errors = spin_errors(err)
    assert len(errors) == 1, err
    assert re.search(rf"worker 1 \(rank 2, pid {pids[2]} on \S+ \(127\.0\.0\.1\); devices ", errors[0])
    assert "closed its connections and did not reconnect (in round" in errors[0]
    assert "its peers wait for its next round message" in errors[0], errors[0]
    assert srun.returncode != 0
    assert not wait_dead(list(pids.values()), 5) and not left_behind(tag)


def test_workers_name_themselves_when_rank_0_dies(slurm, job) -> None:
    shared, key, tag, env = job
    srun, pids = _srun_until_running(env, key)
    try:
        os.kill(pids[0], signal.SIGKILL)
        _, err = srun.communicate(timeout=END_S)
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()
    lines = [line for line in err.splitlines() if "no heartbeat from the coordinator" in line]
    assert len(lines) == 3, err
    for rank in (1, 2, 3):
        line = next(line for line in lines if f"(rank {rank}, pid {pids[rank]} on " in line)
        assert re.search(rf"spin worker {rank - 1} \(rank {rank}, pid \d+ on \S+ \(127\.0\.0\.1\)\): "
                         rf"no heartbeat from the coordinator at tcp://\S+ for 3\.0 s ", line), line
        # what it was doing: its round, as a rule (the workers need no coordinator to run
        # their rounds, so on a fast machine they may finish them within the 3 s)
        assert re.search(r"for 3\.0 s (in round \d+ at virtual time \d+ ps|after its \d+ rounds, "
                         r"while sending its result|while waiting for the run to start)", line), line
    assert not wait_dead(list(pids.values()), 5) and not left_behind(tag)
