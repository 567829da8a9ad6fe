"""Who this process is in a job that a cluster launcher started: its rank, the world size, the
job and its host, read from the launcher's environment (never from an MPI library: spin does not
depend on mpi4py) or from a host file.

Rank 0 runs the coordinator, which is not on the data path; ranks 1..N-1 are workers 0..N-2, so
a job of N ranks runs the fabric on N-1 workers. What each launcher sets:

- ``slurm`` (srun, also inside an sbatch script): SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_ID and
  SLURM_STEP_ID (absent in the batch script itself, which is no task of a step), SLURMD_NODENAME.
- ``mpi``: OpenMPI's OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, or PMI_RANK and PMI_SIZE
  (MPICH's Hydra and other PMI launchers); the job from PMIX_NAMESPACE or
  OMPI_MCA_ess_base_jobid, or from ``--job-id`` where the launcher exports neither.
- ``hosts``: a host file, one host per line; rank r runs on the host of line r + 1. Rank 0 is
  the process the user starts, on the first host; it starts the others itself.
"""

from __future__ import annotations

import os
import re
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from spin.errors import ConfigError

LAUNCHERS = ("slurm", "mpi", "hosts")
_MPI_PAIRS = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"))
_MPI_JOBS = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid")
_JOB_ID = re.compile(r"^[A-Za-z0-9._@:-]{1,128}$")


@dataclass(frozen=True)
class Rank:
    """One process of a launched job. ``size_from`` names where the world size came from, so
    errors about it name the variable (or the host file) the user can change."""

    launcher: str
    rank: int
    size: int
    job: str  # unique per launch: names the rendezvous file
    host: str  # this rank's host, as the other ranks can resolve it
    size_from: str

    @property
    def workers(self) -> int:
        """Workers of the run: every rank but rank 0, which coordinates."""
        return self.size - 1


def _var(env: Mapping[str, str], name: str, launcher: str, hint: str) -> str:
    value = env.get(name)
    if value is None or not value.strip():
        raise ConfigError(f"--launcher {launcher}: {name} is not set: {hint}")
    return value.strip()


def _count(env: Mapping[str, str], name: str, launcher: str, hint: str, minimum: int) -> int:
    text = _var(env, name, launcher, hint)
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"--launcher {launcher}: {name} = {text!r}: not an integer") from None
    if value < minimum:
        raise ConfigError(f"--launcher {launcher}: {name} = {value}: must be >= {minimum}")
    return value


def check_job_id(job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        raise ConfigError(f"--job-id {job_id!r}: must be 1..128 characters of letters, digits "
                          f"and ._@:- (the same on every rank, new for every launch)")
    return job_id


def from_environment(launcher: str, env: Mapping[str, str] | None = None,
                     job_id: str | None = None) -> Rank:
    """This process's rank, from the variables ``launcher`` sets (ConfigError naming the
    variable that is missing or wrong)."""
    env = os.environ if env is None else env
    if launcher == "slurm":
        hint = "run spin as a task of a job step: srun -n N spin run FILE --launcher slurm"
        rank = _count(env, "SLURM_PROCID", launcher, hint, 0)
        size = _count(env, "SLURM_NTASKS", launcher, hint, 1)
        job = _var(env, "SLURM_JOB_ID", launcher, hint)
        step = _var(env, "SLURM_STEP_ID", launcher,
                     f"this process is the batch script of job {job}, not a task of a job step; "
                     f"start spin with srun inside the script (srun spin run FILE --launcher slurm)")
        rank_var, size_var = "SLURM_PROCID", "SLURM_NTASKS"
        job = job_id or f"{job}.{step}"
        host = env.get("SLURMD_NODENAME") or socket.gethostname()
    elif launcher == "mpi":
        pair = next((p for p in _MPI_PAIRS if p[0] in env), None)
        if pair is None:
            raise ConfigError("--launcher mpi: neither OMPI_COMM_WORLD_RANK (OpenMPI) nor PMI_RANK "
                              "(MPICH/Hydra, PMI) is set: start spin with mpirun -n N spin run "
                              "FILE --launcher mpi")
        rank_var, size_var = pair
        hint = f"{rank_var} is set, so the launcher should set {size_var} too"
        rank = _count(env, rank_var, launcher, hint, 0)
        size = _count(env, size_var, launcher, hint, 1)
        job = job_id or next((env[v] for v in _MPI_JOBS if env.get(v)), "")
        if not job:
            raise ConfigError(f"--launcher mpi: no job id in the environment ({', '.join(_MPI_JOBS)} "
                              f"are unset): give --job-id ID, the same on every rank and new for "
                              f"every launch, e.g. --job-id $(date +%s%N) in the job script")
        host = socket.gethostname()
    else:
        raise ConfigError(f"--launcher {launcher!r}: valid launchers are slurm and mpi here "
                          f"(hosts starts its ranks itself); choices: {', '.join(LAUNCHERS)}")
    if rank >= size:
        raise ConfigError(f"--launcher {launcher}: {rank_var} = {rank} with {size_var} = {size}: "
                          f"the rank must be 0..{size - 1}")
    return Rank(launcher, rank, size, check_job_id(job), host, size_var)


def read_host_file(path: str | os.PathLike) -> tuple[str, ...]:
    """Hosts of a ``--launcher hosts`` job, one per line in rank order ('#' starts a comment);
    the same host may appear on several lines (several ranks there)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"--hosts {str(p)!r}: cannot read it: {exc.strerror or exc}") from None
    hosts = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if len(words) > 1:
            raise ConfigError(f"--hosts {str(p)!r} line {number}: {line.strip()!r}: one host name "
                              f"or address per line")
        hosts.extend(words)
    if len(hosts) < 2:
        raise ConfigError(f"--hosts {str(p)!r}: {len(hosts)} host(s); needs at least 2 lines: "
                          f"rank 0 (the coordinator, this machine) and one worker")
    return tuple(hosts)


def hosts_rank(path: str | os.PathLike) -> tuple[Rank, tuple[str, ...]]:
    """Rank 0 of a host-file job (this process) and the hosts of every rank."""
    hosts = read_host_file(path)
    return Rank("hosts", 0, len(hosts), "hosts", hosts[0], f"--hosts {path}"), hosts


def check_key_file(path: str | os.PathLike) -> str:
    """The run's key file, refused unless only its owner can read it: it sits on a shared
    directory, and whoever reads it can join the run and receive the scenario."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise ConfigError(f"--key-file {str(p)!r}: {exc.strerror or exc} (create one with "
                          f"`spin keys DIR` on a directory every rank shares)") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"--key-file {str(p)!r}: not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise ConfigError(f"--key-file {str(p)!r} has mode {mode:04o}: must be 0600 (only its "
                          f"owner may read it; anyone who can may join the run): chmod 600 {p}")
    return str(p.resolve())


def check_world(rank: Rank, n_devices: int) -> int:
    """The number of workers of the job, refused before anything starts when the world is too
    small (rank 0 only coordinates) or larger than the topology's devices plus one."""
    if not 2 <= rank.size <= n_devices + 1:
        raise ConfigError(
            f"{rank.size_from} = {rank.size}: must be 2..{n_devices + 1} for this scenario: rank 0 "
            f"coordinates and every other rank is a worker that owns at least one of the "
            f"topology's {n_devices} devices")
    return rank.workers
