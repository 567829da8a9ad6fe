"""``spin run FILE --launcher slurm|mpi|hosts``: one command for every rank of a launched job.

Every rank runs the same command line. Rank 0 loads the scenario and runs the coordinator (not
on the data path); every other rank becomes a worker, which needs no scenario file: the run
travels from rank 0 as data. Under ``slurm`` and ``mpi`` the workers find rank 0 through a file
in the shared directory (spin.parallel.rendezvous says why a file); under ``hosts`` rank 0
starts them itself, one per line of the host file, through ``--ssh``. Frames always travel over
ZeroMQ between the workers; the launcher only starts processes and tells them who they are.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shlex
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..bounds import check_wait_s
from ..errors import ConfigError, RunStopped, SpinError
from ..parallel.auth import load_keys
from ..parallel.coordinator import Launched
from ..parallel.launchers import (Rank, check_key_file, check_world, from_environment,
                                  hosts_rank)
from ..parallel.rendezvous import publish, rendezvous_path, remove, wait_for
from ..parallel.worker_main import EXIT_JOIN, serve

DEFAULT_SSH = "ssh -o BatchMode=yes {host}"
# rank 0 may compile the engine before it listens: workers wait this long for it by default
DEFAULT_JOIN_TIMEOUT_S = 300.0
# a worker whose key file is refused waits this long for rank 0's verdict on the same file
RANK0_VERDICT_S = 20.0
EXIT_FAILED = 2  # as any error of spin run (spin.cli.EXIT_ERROR)
STOPPED = ("stopped by SIGTERM (scancel, the job's time limit, or the launcher ending the job "
           "after one of its tasks died)")


@dataclass
class Cluster:
    """Rank 0's view of the job, handed to ``spin run``'s body: ``apply`` fixes the worker
    count and the coordinator's transport."""

    rank: Rank
    key_file: str
    hosts: tuple[str, ...]  # --launcher hosts: every rank's host
    quiet: bool
    rendezvous: Path | None = None  # --launcher slurm, mpi: where rank 0 publishes its address
    reported: bool = False  # the run's error is printed: ending now is all that is left
    running: bool = False  # every worker joined: none needs the rendezvous file any more

    def notify(self, phase: str, details: dict) -> None:
        """The coordinator's phases: publish the address, say who joined from where (the job's
        log), and print a failure at once: mpirun sends SIGKILL 20 ms after its SIGTERM."""
        rank = self.rank
        if phase == "listening" and self.rendezvous is not None:
            publish(self.rendezvous, size=rank.size, host=rank.host, endpoint=details["endpoint"])
        self.running = self.running or phase == "running"
        if phase == "failed":
            print(f"spin: error: {one_line(details['message'])}", file=sys.stderr, flush=True)
            self.reported = True
        elif self.quiet:
            return
        elif phase == "listening":
            job = f"{rank.launcher} job {rank.job}" if rank.launcher != "hosts" else rank.size_from
            print(f"spin: rank 0 of {rank.size} ({job}) coordinates at {details['endpoint']}; "
                  f"waiting for {details['workers']} workers (ranks 1..{rank.size - 1})", flush=True)
        elif phase == "running":
            who = ", ".join(f"worker {w['worker']} = rank {w['rank']} on {w['host']}"
                            for w in details["workers"])
            print(f"spin: running on {len(details['workers'])} workers: {who}", flush=True)

    def apply(self, args: argparse.Namespace, options, n_devices: int) -> tuple[Any, dict]:
        for flag, given in (("--remote-workers", args.remote_workers),
                            ("--endpoint", args.endpoint)):
            if given:
                raise ConfigError(f"{flag} with --launcher {self.rank.launcher}: the launcher "
                                  f"decides where the workers run; drop {flag}")
        workers = check_world(self.rank, n_devices)
        if args.workers is not None and args.workers != workers:
            raise ConfigError(f"--workers {args.workers} with {self.rank.size_from} = "
                              f"{self.rank.size}: a launched job runs {workers} workers (every "
                              f"rank but rank 0); drop --workers or launch {args.workers + 1} ranks")
        try:
            options = options.with_workers(workers)
        except ConfigError as exc:  # [workers] assign names workers this job does not have
            raise ConfigError(f"{self.rank.size_from} = {self.rank.size} ({workers} workers): "
                              f"{exc}") from None
        launched = Launched(first_rank=1, advertise=args.advertise or self.rank.host,
                            notify=self.notify)
        bind = args.bind or "0.0.0.0"
        if self.rank.launcher == "hosts":
            launched = Launched(first_rank=1, commands=self._commands(args),
                                hosts=self.hosts[1:], advertise=self.hosts[0], notify=self.notify)
            bind = args.bind or _local_address(self.hosts[0], args.hosts)
        transport = dict(remote_workers=workers, bind=bind, port=args.port,
                         key_file=self.key_file, launched=launched)
        if args.join_timeout_s is not None:
            transport["join_timeout_s"] = args.join_timeout_s
        return options, transport

    def _commands(self, args: argparse.Namespace) -> tuple[tuple[str, ...], ...]:
        """The --ssh command of every worker rank: its words, then the worker's command line
        (ssh hands those to a remote shell, so they must need no quoting)."""
        for what, word in (("--key-file", self.key_file), ("the Python interpreter", sys.executable)):
            if shlex.quote(word) != word:
                raise ConfigError(f"{what} {word!r}: --launcher hosts passes it through --ssh to a "
                                  f"remote shell; use a path without spaces or shell characters")
        ssh = args.ssh or DEFAULT_SSH
        out = []
        for rank, host in enumerate(self.hosts[1:], 1):
            try:
                words = shlex.split(ssh.format(host=host, rank=rank))
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"--ssh {ssh!r}: {exc!r}; it may name {{host}} and {{rank}}, "
                                  f"e.g. {DEFAULT_SSH!r}") from None
            if not words:
                raise ConfigError(f"--ssh {ssh!r}: an empty command; e.g. {DEFAULT_SSH!r}")
            out.append(tuple(words))
        return tuple(out)


def _local_address(host: str, host_file: str) -> str:
    """The address of host-file line 1 (rank 0, this process), checked to be this machine's."""
    try:
        addr = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0]
    except OSError as exc:
        raise ConfigError(f"--hosts {host_file} line 1: {host!r} does not resolve: {exc}") from None
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((addr, 0))
        except OSError as exc:
            raise ConfigError(f"--hosts {host_file} line 1: {host!r} ({addr}) is rank 0's host, "
                              f"where the coordinator runs (this process), but it is not an address "
                              f"of this machine ({exc.strerror}): start spin on that host") from None
    return addr


def check_join_timeout(seconds: float | None) -> None:
    """``--join-timeout-s``: a time > 0 s of at most a day (a negative one made ZeroMQ fail,
    NaN, infinity or a month made the conversion to its milliseconds fail)."""
    if seconds is not None:
        check_wait_s("--join-timeout-s", seconds)


def run_rank(args: argparse.Namespace, body: Callable[[argparse.Namespace, Cluster], int]) -> int:
    """This process's part of a launched job: a worker's (rank > 0), or rank 0's ``body``."""
    if not args.key_file:
        raise ConfigError(f"--launcher {args.launcher} needs --key-file: the workers join over tcp "
                          f"and must hold the run's key; create it with `spin keys DIR` on a "
                          f"directory every rank shares")
    check_join_timeout(args.join_timeout_s)
    if args.launcher == "hosts":
        if not args.hosts:
            raise ConfigError("--launcher hosts needs --hosts FILE: one host per line, rank 0 "
                              "(this machine) first")
        for flag in ("rendezvous_dir", "job_id", "advertise"):  # rank 0 tells the ranks it starts
            if getattr(args, flag) is not None:
                raise ConfigError(f"--{flag.replace('_', '-')} applies to --launcher slurm and "
                                  f"mpi; with --launcher hosts the workers join the host file's "
                                  f"first host")
        rank, hosts = hosts_rank(args.hosts)
        return _coordinate(args, body, Cluster(rank, "", hosts, args.quiet))
    for flag in ("hosts", "ssh"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--{flag} applies to --launcher hosts, not --launcher {args.launcher}")
    rank = from_environment(args.launcher, job_id=args.job_id)
    path = rendezvous_path(args.rendezvous_dir or Path(args.key_file).parent, rank.launcher,
                           rank.job)
    if rank.rank == 0:
        return _coordinate(args, body, Cluster(rank, "", (), args.quiet, path))
    code = _serve(args, rank, path)
    # as spin.parallel.worker_main does: everything is sent and every socket closed, so skip the
    # interpreter's teardown of a whole engine (and numba's colour reset, see below)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve(args: argparse.Namespace, rank: Rank, path: Path) -> int:
    """A worker rank: find rank 0 and serve the run. What rank 0 also sees (the shared key
    file's mode, a scenario that does not fit) rank 0 says, once for the job; a worker speaks
    for itself, its rank and host named, only about what is its own."""
    timeout_s = args.join_timeout_s or DEFAULT_JOIN_TIMEOUT_S
    try:
        try:
            keys = load_keys(check_key_file(args.key_file))
        except SpinError:
            try:
                if wait_for(path, rank.size, RANK0_VERDICT_S).error:
                    return EXIT_JOIN  # rank 0 failed too, and said why
            except SpinError:
                pass
            raise
        published = wait_for(path, rank.size, timeout_s)
    except SpinError as exc:  # which rank, where: the job's log mixes every rank's lines
        raise type(exc)(f"rank {rank.rank} on {rank.host}: {exc}") from None
    if published.error:
        return EXIT_JOIN
    return serve(published.endpoint, keys, rank.rank - 1, "", timeout_s, rank=rank.rank)


def _coordinate(args: argparse.Namespace, body: Callable[[argparse.Namespace, Cluster], int],
                cluster: Cluster) -> int:
    """Rank 0: run ``body``; SIGTERM (the launcher stopping the job) ends the run with one line
    saying what it waited for; an error before the workers joined is published to them."""
    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup must not be cut short
        if not cluster.reported:  # else the run is ending already, its error said
            raise RunStopped(STOPPED)

    previous = signal.signal(signal.SIGTERM, stop)
    path = cluster.rendezvous
    ok = False
    try:
        cluster.key_file = check_key_file(args.key_file)
        code = body(args, cluster)
        ok = True
        return code
    except SpinError as exc:
        if path is not None and not cluster.running:  # kept for ranks still looking for rank 0
            publish(path, size=cluster.rank.size, host=cluster.rank.host, error=one_line(str(exc)))
        if cluster.reported:  # printed when it happened
            return EXIT_FAILED
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        if path is not None and (ok or cluster.running):
            remove(path)
        _no_colour_reset_at_exit()


def _no_colour_reset_at_exit() -> None:
    """numba colours its messages with colorama, which then writes a colour reset at exit to a
    terminal; mpirun gives its ranks one, so it would end every job log with '[0m'."""
    initialise = sys.modules.get("colorama.initialise")
    if initialise is not None:
        atexit.unregister(initialise.reset_all)


def one_line(text: str) -> str:
    """A message on one line (a worker's output tail included), as ``spin`` prints errors."""
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())
