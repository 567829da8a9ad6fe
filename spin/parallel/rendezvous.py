"""How the ranks of a launched job find rank 0's coordinator: a file in a directory every rank
shares (the key file's, unless ``--rendezvous-dir`` names another), named after the job.

Why a published file rather than an address every rank derives (the first host of the node list
and a port computed from the job id): mpirun tells a process nothing about where rank 0 runs,
and Slurm puts rank 0 on the first node only under its default distribution; a derived port may
be taken on a shared node (another job, another step of this one), while one the kernel picks
for rank 0 never is; and a rank 0 that fails before it listens (a scenario error, a world size
that does not fit) writes its error there, so every worker stops at once with that error rather
than after a join timeout. The directory must be shared anyway, for the key. The file is
written whole (a rename), named after the job (Slurm job and step id, the MPI job id) so that
no rank reads another launch's file, and removed when rank 0 ends.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from spin.errors import ConfigError, TransportError

POLL_S = 0.2


@dataclass(frozen=True)
class Published:
    """What rank 0 wrote: the endpoint it listens at, or the error that stopped it."""

    endpoint: str
    error: str
    host: str
    pid: int


def rendezvous_path(directory: str | os.PathLike, launcher: str, job: str) -> Path:
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"--rendezvous-dir {str(d)!r}: not a directory (it must be shared by "
                          f"every rank of the job)")
    return d / f"spin-{launcher}-{re.sub(r'[^A-Za-z0-9._-]', '_', job)}.rendezvous.json"


def publish(path: Path, *, size: int, host: str, endpoint: str = "", error: str = "") -> None:
    """Write the file whole: a reader sees the previous content or this one, never a part."""
    body = json.dumps({"size": size, "host": host, "pid": os.getpid(), "endpoint": endpoint,
                       "error": error})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(body)
    os.replace(tmp, path)


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def wait_for(path: Path, size: int, timeout_s: float) -> Published:
    """Rank 0's endpoint or error, once it is there; TransportError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError):
            d = None  # not written yet (a rename makes it appear whole)
        if isinstance(d, dict):
            if d.get("size") != size:
                raise ConfigError(f"{path} was written by rank 0 of a job of {d.get('size')} ranks, "
                                  f"this one has {size}: a stale file of another launch with the "
                                  f"same job id; remove it")
            return Published(str(d.get("endpoint", "")), str(d.get("error", "")),
                             str(d.get("host", "")), int(d.get("pid", 0)))
        if time.monotonic() > deadline:
            raise TransportError(
                f"rank 0 did not publish its coordinator's address in {path} within {timeout_s} s: "
                f"is rank 0 running, is {path.parent} shared with its host, and does it compile "
                f"the engine (then raise --join-timeout-s)?")
        time.sleep(POLL_S)
