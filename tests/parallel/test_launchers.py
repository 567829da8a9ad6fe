"""What a launched rank reads and refuses before any process starts: the launcher's variables
(each error names the variable), the key file's mode, the host file, the world size against the
scenario, and the rendezvous file. The launchers themselves run for real in
test_cluster_slurm.py, test_cluster_mpi.py and test_netns.py; these are the checks in front."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from spin.cli import main
from spin.errors import ConfigError, TransportError
from spin.parallel.auth import generate_keys
from spin.parallel.launchers import (check_key_file, check_world, from_environment,
                                     read_host_file)
from spin.parallel.rendezvous import publish, rendezvous_path, wait_for

REDUCE = str(REPO / "examples" / "reduce_8hosts.toml")  # 9 devices
SLURM = {"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0",
         "SLURMD_NODENAME": "node7"}


def test_slurm_rank_size_job_and_host() -> None:
    r = from_environment("slurm", SLURM)
    assert (r.rank, r.size, r.job, r.host, r.workers) == (1, 4, "77.0", "node7", 3)


@pytest.mark.parametrize("drop, fragment", [
    ("SLURM_PROCID", "SLURM_PROCID is not set: run spin as a task of a job step: srun -n N"),
    ("SLURM_NTASKS", "SLURM_NTASKS is not set"),
    ("SLURM_STEP_ID", "SLURM_STEP_ID is not set: this process is the batch script of job 77"),
])
def test_slurm_missing_variable_is_named(drop: str, fragment: str) -> None:
    env = {k: v for k, v in SLURM.items() if k != drop}
    with pytest.raises(ConfigError, match=fragment):
        from_environment("slurm", env)


@pytest.mark.parametrize("change, fragment", [
    ({"SLURM_PROCID": "x"}, "SLURM_PROCID = 'x': not an integer"),
    ({"SLURM_PROCID": "4"}, "SLURM_PROCID = 4 with SLURM_NTASKS = 4: the rank must be 0..3"),
    ({"SLURM_NTASKS": "0"}, "SLURM_NTASKS = 0: must be >= 1"),
])
def test_slurm_wrong_value_is_named(change: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        from_environment("slurm", {**SLURM, **change})


def test_mpi_openmpi_and_pmi_variables() -> None:
    ompi = from_environment("mpi", {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "5",
                                    "OMPI_MCA_ess_base_jobid": "1833238529"})
    assert (ompi.rank, ompi.size, ompi.job, ompi.size_from) == (2, 5, "1833238529",
                                                                "OMPI_COMM_WORLD_SIZE")
    pmi = from_environment("mpi", {"PMI_RANK": "0", "PMI_SIZE": "3"}, job_id="run-42")
    assert (pmi.rank, pmi.size, pmi.job, pmi.size_from) == (0, 3, "run-42", "PMI_SIZE")


@pytest.mark.parametrize("env, fragment", [
    ({}, "neither OMPI_COMM_WORLD_RANK \\(OpenMPI\\) nor PMI_RANK"),
    ({"PMI_RANK": "1"}, "PMI_SIZE is not set"),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, "no job id in the environment .* give --job-id"),
])
def test_mpi_missing_variable_is_named(env: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        from_environment("mpi", env)


def test_key_file_must_be_private(tmp_path) -> None:
    key = generate_keys(tmp_path)
    assert check_key_file(key) == str(key.resolve())
    os.chmod(key, 0o640)
    with pytest.raises(ConfigError, match=r"has mode 0640: must be 0600 .* chmod 600"):
        check_key_file(key)
    with pytest.raises(ConfigError, match="No such file"):
        check_key_file(tmp_path / "missing")


def test_host_file_order_comments_and_errors(tmp_path) -> None:
    f = tmp_path / "hosts"
    f.write_text("# rank 0 first\nnode1\n\nnode2  # a worker\nnode2\n")
    assert read_host_file(f) == ("node1", "node2", "node2")
    f.write_text("node1 node2\n")
    with pytest.raises(ConfigError, match="line 1: 'node1 node2': one host name or address per line"):
        read_host_file(f)
    f.write_text("node1\n")
    with pytest.raises(ConfigError, match="1 host\\(s\\); needs at least 2 lines"):
        read_host_file(f)


def test_world_size_must_fit_the_scenario() -> None:
    ok = from_environment("slurm", SLURM)
    assert check_world(ok, n_devices=9) == 3
    for size in ("1", "11"):
        rank = from_environment("slurm", {**SLURM, "SLURM_PROCID": "0", "SLURM_NTASKS": size})
        with pytest.raises(ConfigError, match=f"SLURM_NTASKS = {size}: must be 2..10 for this "
                                              f"scenario: rank 0 coordinates"):
            check_world(rank, n_devices=9)


def test_rendezvous_file_carries_the_endpoint_or_the_error(tmp_path) -> None:
    path = rendezvous_path(tmp_path, "slurm", "77.0")
    assert path.name == "spin-slurm-77.0.rendezvous.json"
    with pytest.raises(TransportError, match="rank 0 did not publish its coordinator's address"):
        wait_for(path, 4, timeout_s=0.3)
    publish(path, size=4, host="node1", endpoint="tcp://node1:5555")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    got = wait_for(path, 4, timeout_s=1)
    assert (got.endpoint, got.error, got.host) == ("tcp://node1:5555", "", "node1")
    with pytest.raises(ConfigError, match="written by rank 0 of a job of 4 ranks, this one has 3"):
        wait_for(path, 3, timeout_s=1)
    publish(path, size=4, host="node1", error="SLURM_NTASKS = 4: ...")
    assert wait_for(path, 4, timeout_s=1).error == "SLURM_NTASKS = 4: ..."


def _run(argv: list[str], env: dict, monkeypatch, capsys) -> tuple[int, str]:
    for k in [k for k in os.environ if k.startswith(("SLURM", "OMPI_", "PMI_", "PMIX_"))]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code = main(argv)
    return code, capsys.readouterr().err


def test_cli_refusals_name_the_option(tmp_path, monkeypatch, capsys) -> None:
    key = str(generate_keys(tmp_path))
    cases = [
        (["--launcher", "slurm"], {}, "--launcher slurm needs --key-file"),
        (["--launcher", "slurm", "--key-file", key], {}, "SLURM_PROCID is not set"),
        (["--launcher", "hosts", "--key-file", key], {}, "--launcher hosts needs --hosts FILE"),
        (["--hosts", "h"], {}, "--hosts applies to a launched job"),
        (["--ssh", "ssh {host}"], {}, "--ssh applies to a launched job"),
        (["--launcher", "hosts", "--key-file", key, "--hosts", "h", "--job-id", "7"], {},
         "--job-id applies to --launcher slurm and mpi"),
        (["--launcher", "mpi", "--key-file", key, "--ssh", "ssh {host}"], {},
         "--ssh applies to --launcher hosts, not --launcher mpi"),
        (["--launcher", "slurm", "--key-file", key, "--join-timeout-s", "0"], {},
         "--join-timeout-s = 0.0: must be finite, > 0 and <= 86400 s"),
        (["--launcher", "slurm", "--key-file", key, "--hosts", "h"], {},
         "--hosts applies to --launcher hosts, not --launcher slurm"),
        (["--launcher", "slurm", "--key-file", key, "--workers", "5"],
         {**SLURM, "SLURM_PROCID": "0"}, "--workers 5 with SLURM_NTASKS = 4: a launched job runs 3"),
        (["--launcher", "slurm", "--key-file", key, "--remote-workers", "1"],
         {**SLURM, "SLURM_PROCID": "0"}, "--remote-workers with --launcher slurm"),
        (["--launcher", "slurm", "--key-file", key], {**SLURM, "SLURM_PROCID": "0",
                                                      "SLURM_NTASKS": "40"},
         "SLURM_NTASKS = 40: must be 2..10"),
    ]
    for extra, env, fragment in cases:
        code, err = _run(["run", REDUCE, *extra], env, monkeypatch, capsys)
        assert code == 2 and fragment in err and err.count("\n") == 1, (extra, err)


def test_rank_0_publishes_its_error_and_the_workers_stop_silently(tmp_path, monkeypatch,
                                                                   capsys) -> None:
    key = str(generate_keys(tmp_path))
    code, err = _run(["run", REDUCE, "--launcher", "slurm", "--key-file", key],
                     {**SLURM, "SLURM_PROCID": "0", "SLURM_NTASKS": "12"}, monkeypatch, capsys)
    assert code == 2 and "SLURM_NTASKS = 12: must be 2..10" in err
    assert "SLURM_NTASKS = 12" in (tmp_path / "spin-slurm-77.0.rendezvous.json").read_text()
    # rank 1 reads rank 0's error from the file and stops without a word: one line per job
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "OMPI_", "PMI"))}
    r = subprocess.run([sys.executable, "-m", "spin", "run", REDUCE, "--launcher", "slurm",
                        "--key-file", key], env={**env, **SLURM, "SLURM_NTASKS": "12",
                                                 "PYTHONPATH": str(REPO)},
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", "")


def test_hosts_launcher_refuses_a_first_host_that_is_not_this_machine(tmp_path, monkeypatch,
                                                                      capsys) -> None:
    key = str(generate_keys(tmp_path))
    hosts = tmp_path / "hosts"
    hosts.write_text("198.51.100.7\n127.0.0.1\n")  # TEST-NET-2: bound to, never sent to
    code, err = _run(["run", REDUCE, "--launcher", "hosts", "--hosts", str(hosts), "--key-file",
                      key], {}, monkeypatch, capsys)
    assert code == 2
    assert "line 1: '198.51.100.7' (198.51.100.7) is rank 0's host" in err
    assert "not an address of this machine" in err
