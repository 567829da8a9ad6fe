"""The coordinator: starts (or admits) the workers of a run, hands out the run, and supervises it.

It is not on the data path: workers synchronise among themselves (spin.parallel.sync). The
coordinator owns one ROUTER control socket, assigns worker ids, sends each worker the spec as data
(spin.parallel.codec), the factory path, a random run epoch and the peers' data endpoints, then
watches: local processes by pid, every worker (local or remote) by heartbeats, so a stopped or
wedged worker ends the run after ``silence_timeout_s``. The first failure aborts the whole
run and becomes a WorkerError naming the worker, its pid, its program's description and the
remote traceback. A remote worker whose connections close and stay closed for ``lost_grace_s``
(its process died) is reported without waiting for the silence limit (spin.parallel.members).

Launched runs (spin.parallel.launchers: Slurm, MPI, a host file) describe themselves with
``Launched``: errors then name each worker's rank and host, workers may ask for the slot of
their rank, and for a host file the coordinator starts the workers itself through a command
such as ssh, watching them like local processes.

Trust: nothing received from a socket is unpickled, on either side. Listening beyond loopback,
and any run with slots for workers that join over tcp (loopback included), requires CurveZMQ
(spin.parallel.auth), so only holders of the run's key can connect at all, and keyless workers
refuse to join a coordinator beyond loopback. On a keyless loopback run, spawned
workers prove themselves with a per-run secret handed over a pipe (never argv, which every local
user can read), so a foreign local process cannot take their slots; whatever else arrives on the
control socket is validated (spin.parallel.control), counted and ignored.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

import zmq

from spin.bounds import check_wait_s
from spin.errors import ConfigError, RunStopped, SpinError, TransportError, WorkerError
from spin.parallel import codec
from spin.parallel.addresses import is_loopback
from spin.parallel.auth import KeyPair, load_keys, make_server, start_authenticator
from spin.parallel.control import (
    MAX_CONTROL_BYTES,
    MSG_ABORT,
    MSG_BEAT,
    MSG_BYE,
    MSG_ERROR,
    MSG_HELLO,
    MSG_READY,
    MSG_REJECT,
    MSG_RESULT,
    MSG_SETUP,
    MSG_START,
    Rejections,
    Setup,
    check_stats,
    parse,
)
from spin.parallel.members import ConnectionWatch, Member, stopped_text
from spin.parallel.outcome import RunOutcome, WorkerOutcome, run_outcome
from spin.parallel.procs import exit_text, log_tail, reap
from spin.parallel.progress import Progress

_POLL_MS = 50


def _raised_on_purpose(kind: str) -> bool:
    """Whether a worker's error is one spin raises on purpose (a SpinError): its message says
    what went wrong, so its traceback is left out of the message (kept on the WorkerError)."""
    classes, names = [SpinError], set()
    while classes:
        cls = classes.pop()
        names.add(cls.__name__)
        classes.extend(cls.__subclasses__())
    return kind in names
DEFAULT_SILENCE_TIMEOUT_S = 15.0
WILDCARDS = ("0.0.0.0", "::", "*")


@dataclass(frozen=True)
class Deferred:
    """A spec computed while the local workers start (their interpreter and imports take a
    second or two), e.g. a partition: ``run(factory, Deferred(lambda: build_spec()), n)``."""

    build: Callable[[], Any]


@dataclass(frozen=True)
class Launched:
    """How a launcher placed the run: worker w is rank ``w + first_rank`` (rank 0 coordinates).
    ``commands`` (a host file's ssh, one per remote worker) makes the coordinator start those
    workers itself, joining at ``advertise`` (a host every worker can reach); ``hosts`` names
    where they run. ``notify(phase, details)`` hears "listening" (endpoint), "running" (who
    joined from where) and "failed" (the error's message, before any cleanup: a launcher may
    SIGKILL this process soon after a task died)."""

    first_rank: int = 1
    commands: tuple[tuple[str, ...], ...] = ()
    hosts: tuple[str, ...] = ()
    advertise: str = ""
    notify: Callable[[str, dict], None] | None = None


@dataclass(frozen=True)
class CoordinatorConfig:
    bind: str = "127.0.0.1"  # beyond loopback requires key_file
    port: int = 0  # 0: a random free port
    key_file: str | None = None  # CurveZMQ secret key file (spin.parallel.auth.generate_keys)
    allow_remote: int = 0  # how many of the n_workers are started elsewhere and join over tcp
    timeout_s: float | None = None  # wall-clock limit of the whole run
    join_timeout_s: float = 60.0  # for every worker to say hello
    heartbeat_interval_s: float = 0.5
    heartbeat_timeout_s: float = 3.0  # a worker exits when the coordinator is silent this long
    # a worker (local or remote) whose heartbeats stop this long is declared stopped or lost;
    # heartbeats come from a thread that runs while the engine holds no GIL, so only a stopped,
    # wedged or unreachable process goes silent
    silence_timeout_s: float = DEFAULT_SILENCE_TIMEOUT_S
    # a remote worker whose connections closed and stayed closed this long has died (a live one
    # reconnects within zmq's 0.1 s reconnect interval): reported well before mpirun, which
    # signals the other ranks 1 s after one dies, ends the whole job
    lost_grace_s: float = 0.5
    shutdown_grace_s: float = 1.0  # after abort/bye, before SIGTERM (then SIGKILL) of local workers
    quiet: bool = True
    round_trips: int = 0  # time this many bare zmq round trips (workers 0-1) before the run
    launched: Launched | None = None  # set by a cluster launcher (spin.parallel.launchers)

    def __post_init__(self) -> None:
        for name in ("join_timeout_s", "heartbeat_interval_s", "heartbeat_timeout_s",
                     "silence_timeout_s", "shutdown_grace_s", "lost_grace_s"):
            check_wait_s(f"CoordinatorConfig.{name}", getattr(self, name))
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigError(f"CoordinatorConfig.timeout_s must be > 0 or None, got {self.timeout_s}")
        if not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ConfigError(f"CoordinatorConfig.port = {self.port!r}: must be 0..65535 (0: a random "
                              f"free port)")
        if self.allow_remote < 0:
            raise ConfigError(f"CoordinatorConfig.allow_remote must be >= 0, got {self.allow_remote}")
        if self.allow_remote and self.key_file is None:
            raise ConfigError(f"allow_remote = {self.allow_remote} without key_file: workers that "
                              f"join over tcp (loopback included) must hold the run's CurveZMQ key, "
                              f"or any local process could take their slot and read the scenario; "
                              f"create one with `spin keys DIR`")
        if self.heartbeat_timeout_s <= 2 * self.heartbeat_interval_s:
            raise ConfigError("CoordinatorConfig.heartbeat_timeout_s must exceed 2 x heartbeat_interval_s")
        launched = self.launched
        if launched is not None and launched.commands:
            if len(launched.commands) != self.allow_remote or len(launched.hosts) != self.allow_remote:
                raise ConfigError(f"Launched.commands and .hosts name {len(launched.commands)} and "
                                  f"{len(launched.hosts)} workers; allow_remote = {self.allow_remote}")
            if not launched.advertise:
                raise ConfigError("Launched.commands needs Launched.advertise: the host the started "
                                  "workers join the coordinator at")


class Coordinator:
    """Binds the control socket at construction (see ``endpoint``); ``run`` may be called repeatedly."""

    def __init__(self, config: CoordinatorConfig = CoordinatorConfig()) -> None:
        self.config = config
        self._keys: KeyPair | None = load_keys(config.key_file) if config.key_file else None
        if not is_loopback(config.bind) and self._keys is None:
            raise ConfigError(
                f"refusing to listen on {config.bind!r} without CurveZMQ: pass key_file "
                f"(create one with spin.parallel.auth.generate_keys), or bind 127.0.0.1"
            )
        self._ctx = zmq.Context()
        self._auth = start_authenticator(self._ctx, self._keys) if self._keys is not None else None
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.SNDHWM, 10000)
        self._router.setsockopt(zmq.RCVHWM, 10000)
        make_server(self._router, self._keys)
        # a closed connection (its process died) names a remote worker long before its silence
        self._watch = ConnectionWatch(self._router)
        self._poller = zmq.Poller()
        self._poller.register(self._router, zmq.POLLIN)
        self._poller.register(self._watch.socket, zmq.POLLIN)
        host = f"[{config.bind}]" if ":" in config.bind else config.bind
        try:
            self._router.bind(f"tcp://{host}:{config.port or '*'}")
        except zmq.ZMQError as exc:
            self.close()
            raise ConfigError(f"cannot bind the coordinator on {config.bind}:{config.port}: {exc}") from exc
        self.endpoint: str = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        port = self.endpoint.rsplit(":", 1)[1]
        wildcard = config.bind in WILDCARDS
        self._local_endpoint = f"tcp://127.0.0.1:{port}" if wildcard else self.endpoint
        adv = config.launched.advertise if config.launched is not None else ""
        self._advertised = (self.endpoint if not adv else
                            f"tcp://[{adv}]:{port}" if ":" in adv else f"tcp://{adv}:{port}")
        # Where local workers bind their data sockets: loopback for loopback runs; otherwise the
        # coordinator's own address (a wildcard is advertised as such and read by every worker as
        # "the host I reached the coordinator at"), so remote workers can reach local ones.
        self._data_bind = None if is_loopback(config.bind) else ("::" if config.bind == "::" else
                                                                 "0.0.0.0" if wildcard else config.bind)
        self.rejected = Rejections()  # junk control messages over this coordinator's life

    # -- public -----------------------------------------------------------------------------

    def run(self, factory: str, spec: Any, n_workers: int, until_ps: int | None = None) -> RunOutcome:
        """Run ``factory(spec, worker_id, n_workers)`` on n_workers workers; raise WorkerError on failure."""
        cfg = self.config
        if n_workers < 1:
            raise ConfigError(f"n_workers must be >= 1, got {n_workers}")
        if cfg.allow_remote > n_workers:
            raise ConfigError(f"allow_remote={cfg.allow_remote} exceeds n_workers={n_workers}")
        if ":" not in factory:
            raise ConfigError(f"factory must look like 'package.module:function', got {factory!r}")
        # fails here, in the caller, if the spec cannot travel as data (deferred: after spawning)
        spec_blob = None if isinstance(spec, Deferred) else codec.encode(spec)
        n_local = n_workers - cfg.allow_remote
        launched = cfg.launched
        members = [Member(worker_id=i, local=i < n_local, token=secrets.token_hex(16),
                          rank=None if launched is None else i + launched.first_rank)
                   for i in range(n_workers)]
        if launched is not None and launched.commands:
            for m, command, host in zip(members[n_local:], launched.commands, launched.hosts):
                m.command, m.launched_on = command, host
        self._watch.reset()
        running = False
        rejected_before = Rejections(self.rejected)
        epoch = secrets.randbits(64)
        started = time.monotonic()
        deadline = started + cfg.timeout_s if cfg.timeout_s is not None else float("inf")
        progress = Progress(until_ps, cfg.quiet)
        # the logs of the workers this process starts (none when a launcher started them all)
        spawns = any(m.local or m.command for m in members)
        with (tempfile.TemporaryDirectory(prefix="spin-workers-") if spawns
              else contextlib.nullcontext("")) as tmp:
            try:
                self._notify("listening", endpoint=self._advertised, workers=n_workers)
                for m in members:
                    if m.local or m.command:
                        self._spawn(m, tmp, factory)
                if spec_blob is None:
                    spec_blob = codec.encode(spec.build())
                self._join(members, deadline)
                self._send_setups(members, epoch, factory, spec_blob, until_ps)
                self._until(members, "ready", deadline, progress)
                for m in members:
                    self._send(m, MSG_START, b"")
                running = True
                self._notify("running", workers=[{"worker": m.worker_id, "rank": m.rank,
                                                  "pid": m.pid, "host": m.host_label()}
                                                 for m in members])
                self._until(members, "done", deadline, progress, started=True)
                for m in members:
                    self._send(m, MSG_BYE, b"", required=False)
                self._reap(members, graceful=True)
                self._await_departure(members)
            except RunStopped as exc:
                # quick, and said before cleaning up: mpirun's SIGKILL follows its SIGTERM in 20 ms
                self._watch.read(members)  # disconnects zmq's I/O thread has seen already
                stopped = RunStopped(stopped_text(members, str(exc), running))
                self._notify("failed", message=str(stopped))
                self._abort(members, str(stopped))
                raise stopped from None
            except BaseException as exc:
                if isinstance(exc, SpinError):  # said at once: a launcher may kill this process soon
                    self._notify("failed", message=str(exc))
                self._abort(members, f"{type(exc).__name__}: {exc}")
                raise
            finally:
                progress.close()
                self._reap(members, graceful=False)
        outcome = run_outcome(members, epoch, time.monotonic() - started)
        junk = {k: v - rejected_before.get(k, 0) for k, v in self.rejected.items()}
        return RunOutcome(**{**outcome.__dict__, "control_rejected": {k: v for k, v in junk.items() if v}})

    def close(self) -> None:
        if self._router is not None:
            self._watch.close()
            self._router.close(0)
            self._router = None
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        self._ctx.term()

    def __enter__(self) -> "Coordinator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- phases -----------------------------------------------------------------------------

    def _spawn(self, m: Member, tmp: str, factory: str) -> None:
        """Start a local worker, or (``m.command``) one on another host through the launcher's
        command; either proves its slot with a secret sent to its stdin (ssh forwards it)."""
        cmd = [*m.command, sys.executable, "-m", "spin.parallel.worker_main",
               "--join", self._advertised if m.command else self._local_endpoint,
               "--slot", str(m.worker_id), "--token-stdin",
               "--join-timeout-s", str(self.config.join_timeout_s),
               "--preload", factory.partition(":")[0]]  # imported while the coordinator prepares
        if m.command:
            cmd += ["--rank", str(m.rank)]
        else:  # a child of this process: it dies with it
            cmd += ["--parent-pid", str(os.getpid())]
        if self._keys is not None:
            cmd += ["--key-file", self._keys.path]
        if self._data_bind is not None and not m.command:
            cmd += ["--data-bind", self._data_bind]
        env = dict(os.environ)
        paths = [p or os.getcwd() for p in sys.path]  # workers import what the caller can import
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if os.path.isdir(p))
        m.stderr_path = os.path.join(tmp, f"worker{m.worker_id}.log")
        with open(m.stderr_path, "wb") as log:
            m.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=log, env=env,
                                      start_new_session=True)  # Ctrl-C reaches only the coordinator
        m.pid = m.proc.pid
        try:  # the slot secret goes through a pipe: argv is readable by every local user
            assert m.proc.stdin is not None
            m.proc.stdin.write(m.token.encode() + b"\n")
            m.proc.stdin.close()
        except OSError:
            pass  # the worker died at once; _pump reports its exit

    def _join(self, members: list[Member], deadline: float) -> None:
        join_deadline = min(deadline, time.monotonic() + self.config.join_timeout_s)
        while any(m.state == "spawned" for m in members):
            if time.monotonic() > join_deadline:
                missing = [m for m in members if m.state == "spawned"]
                remote = [m.worker_id for m in missing if not m.local and not m.command]
                hint = (f"; start remote workers with: python -m spin.parallel.worker_main --join "
                        f"{self.endpoint}" + (" --key-file KEYFILE" if self._keys else "")) if remote else ""
                who = ", ".join(f"{m.worker_id}" + ("" if m.rank is None else f" (rank {m.rank}"
                                                    + (f" on {m.launched_on})" if m.launched_on else ")"))
                                for m in missing)
                raise TransportError(
                    f"workers [{who}] did not join {self._advertised} within "
                    f"{self.config.join_timeout_s} s{hint}"
                )
            self._pump(members, None)

    def _send_setups(self, members: list[Member], epoch: int, factory: str, spec_blob: bytes,
                     until_ps: int | None) -> None:
        cfg = self.config
        endpoints = tuple(m.data_endpoint for m in members)
        now = time.monotonic()
        for m in members:
            setup = Setup(m.worker_id, epoch, factory, endpoints, until_ps,
                          cfg.heartbeat_interval_s, cfg.heartbeat_timeout_s, cfg.shutdown_grace_s,
                          cfg.round_trips)
            self._send(m, MSG_SETUP, setup.to_json(), spec_blob)
            m.last_beat = now
            m.state = "setup"

    def _until(self, members: list[Member], state: str, deadline: float, progress: Progress,
               started: bool = False) -> None:
        order = ("spawned", "joined", "setup", "ready", "done")
        while any(order.index(m.state) < order.index(state) for m in members):
            if time.monotonic() > deadline:
                raise TransportError(f"the run did not finish within timeout_s={self.config.timeout_s}")
            self._pump(members, progress, started)

    # -- the supervision loop ---------------------------------------------------------------

    def _pump(self, members: list[Member], progress: Progress | None, started: bool = False) -> None:
        """One poll slice: dispatch messages, check processes and heartbeats, send heartbeats."""
        ready = dict(self._poller.poll(_POLL_MS))
        if self._watch.socket in ready:
            self._watch.read(members)
        if self._router in ready:
            while self._router.poll(0, zmq.POLLIN):
                frames = self._router.recv_multipart(copy=False)
                msg = parse([f.bytes for f in frames], self.rejected)
                if msg is not None:
                    self._dispatch(members, *msg, fd=frames[0].get(zmq.SRCFD))
                else:
                    self._refuse_oversized_result(members, frames)
        now = time.monotonic()
        for m in members:
            if m.proc is not None and m.state != "done" and m.proc.poll() is not None:
                raise self._error(m, exit_text(m.proc.returncode))
            if m.lost_at and m.state != "done" and now - m.lost_at > self.config.lost_grace_s:
                if not self._reply(m.hb_identity, MSG_BEAT, b""):  # not reconnected: gone
                    raise self._error(m, f"closed its connections and did not reconnect "
                                         f"({m.doing(started)}): its process ended "
                                         f"(killed or crashed) or its host went down")
                m.lost_at = 0.0
            if m.state in ("setup", "ready", "done") and m.hb_identity:
                # a worker done early waits, beaten, for its bye while the others finish
                if m.state != "done" and now - m.last_beat > self.config.silence_timeout_s:
                    raise self._error(m, self._silence(m, started))
                if now - m.beat.get("sent", 0.0) >= self.config.heartbeat_interval_s:
                    self._beat(m, MSG_BEAT, b"")
                    m.beat["sent"] = now
        if progress is not None:
            live = [m.beat for m in members if "t_ps" in m.beat]
            if live:
                progress.update(min(b["t_ps"] for b in live), sum(b["events"] for b in live),
                                max(b["rounds"] for b in live))

    def _refuse_oversized_result(self, members: list[Member], frames: list) -> None:
        """A worker's result too large to take is the end of the run, not a message dropped
        while the run waits for it for ever (the worker itself refuses to send one)."""
        if len(frames) != 3 or frames[1].bytes != MSG_RESULT or len(frames[2]) <= MAX_CONTROL_BYTES:
            return
        for m in members:
            if m.identity and frames[0].bytes == m.identity:
                raise self._error(m, f"sent a result of {len(frames[2]) / 2**20:,.0f} MiB, above "
                                     f"the {MAX_CONTROL_BYTES >> 20} MiB a worker may send: run "
                                     f"with --workers 1, or check, dump or capture less")

    def _silence(self, m: Member, started: bool) -> str:
        """What a silent worker was doing, and so what the run was waiting for."""
        how = "stopped (SIGSTOP?), wedged or unreachable" if m.local else "lost, stopped or hung"
        return (f"sent no heartbeat for {self.config.silence_timeout_s} s (silence_timeout_s) "
                f"{m.doing(started)}: {how}")

    def _dispatch(self, members: list[Member], ident: bytes, kind: bytes, body: dict,
                  fd: int = -1) -> None:
        """Act on a well-formed message (see control.parse); unknown senders are counted, not obeyed."""
        if kind == MSG_HELLO:
            self._hello(members, ident, body)
            for m in members:
                if m.identity == ident:
                    self._watch.saw(fd, m)
            return
        for m in members:
            if ident in (m.hb_identity, m.identity) and ident:
                self._watch.saw(fd, m)
            if kind == MSG_BEAT and ident == m.hb_identity:
                m.last_beat = time.monotonic()
                m.beat.update({k: body[k] for k in ("t_ps", "rounds", "events") if k in body})
                return
            if ident == m.identity and m.identity:
                if kind == MSG_READY and m.state == "setup":
                    m.description = body["describe"][:2000]
                    m.state = "ready"
                elif kind == MSG_RESULT and m.state == "ready":
                    try:
                        stats = check_stats(body["stats"])
                    except (TypeError, ValueError) as exc:
                        raise self._error(m, f"sent malformed transport counters: {exc}") from None
                    m.outcome = WorkerOutcome(m.worker_id, m.pid, m.host, m.description, body["result"],
                                              body["rounds"], body["events"], body["loop_wall_s"], stats)
                    m.beat["end_ps"] = body["end_ps"]
                    m.state = "done"
                elif kind == MSG_ERROR:
                    m.description = body["describe"][:2000] or m.description
                    self._send(m, MSG_BYE, b"", required=False)  # it waits for this before exiting
                    raise self._error(m, f"failed: {body['kind']}: {body['message']}", body["traceback"],
                                      show_traceback=not _raised_on_purpose(body["kind"]))
                else:
                    self.rejected["out_of_order"] += 1
                return
        self.rejected["unknown_sender"] += 1

    def _hello(self, members: list[Member], ident: bytes, body: dict) -> None:
        slot, token = body["slot"], body["token"]
        if slot >= 0:  # started by this coordinator: its secret; a launcher's rank: its slot
            match = [m for m in members if m.worker_id == slot and m.state == "spawned" and (
                secrets.compare_digest(m.token.encode(), token.encode()) if m.local or m.command
                else token == "")]
        else:
            match = [m for m in members if not m.local and not m.command and m.state == "spawned"][:1]
        if not match or any(m.identity == ident for m in members):
            self.rejected["hello_refused"] += 1
            self._reply(ident, MSG_REJECT, b"this run has no free worker slot")
            return
        m = match[0]
        try:
            hb_identity = bytes.fromhex(body["hb_identity"])
        except ValueError:
            hb_identity = b""
        if not hb_identity or not body["data_endpoint"].startswith("tcp://"):
            self.rejected["hello_refused"] += 1
            self._reply(ident, MSG_REJECT, b"malformed hello")
            return
        m.pid, m.host = body["pid"], body["host"][:200]
        m.data_endpoint, m.hb_identity = body["data_endpoint"], hb_identity
        m.identity = ident
        m.state = "joined"
        m.last_beat = time.monotonic()

    # -- messaging --------------------------------------------------------------------------

    def _reply(self, ident: bytes, kind: bytes, *payload: bytes) -> bool:
        try:
            self._router.send_multipart([ident, kind, *payload], zmq.NOBLOCK)
            return True
        except zmq.ZMQError:  # EHOSTUNREACH (gone) or EAGAIN (not reading)
            return False

    def _send(self, m: Member, kind: bytes, *payload: bytes, required: bool = True) -> None:
        if not m.identity:
            return
        if not self._reply(m.identity, kind, *payload) and required:
            raise self._error(m, f"is unreachable (could not send {kind.decode()})")

    def _beat(self, m: Member, kind: bytes, payload: bytes) -> None:
        if m.hb_identity:
            self._reply(m.hb_identity, kind, payload)

    # -- failure and shutdown ---------------------------------------------------------------

    def _notify(self, phase: str, **details: Any) -> None:
        launched = self.config.launched
        if launched is not None and launched.notify is not None:
            launched.notify(phase, details)

    def _error(self, m: Member, what: str, remote_tb: str = "",
               show_traceback: bool = True) -> WorkerError:
        text = f"{m.who()} {what}"
        if remote_tb and show_traceback:
            text += f"\n--- remote traceback ---\n{remote_tb.rstrip()}"
        elif not remote_tb and m.stderr_path and (tail := log_tail(m.stderr_path)):
            text += f"\n--- worker output (tail) ---\n{tail}"
        err = WorkerError(text)
        err.worker_id, err.pid, err.description, err.remote_traceback = m.worker_id, m.pid, m.description, remote_tb
        return err

    def _abort(self, members: list[Member], reason: str) -> None:
        for m in members:
            if m.state != "spawned":
                self._beat(m, MSG_ABORT, reason.encode()[:2000])
        self._reap(members, graceful=True)

    def _await_departure(self, members: list[Member]) -> None:
        """Keep the control socket open until the remote workers have their bye and close their
        connections (closing it at once may drop the bye: zmq's linger is 0 here)."""
        deadline = time.monotonic() + self.config.shutdown_grace_s
        remote = [m for m in members if m.proc is None and not m.local]
        while any(self._watch.connected(m) for m in remote) and time.monotonic() < deadline:
            if self._watch.socket.poll(_POLL_MS, zmq.POLLIN):
                self._watch.read(members)

    def _reap(self, members: list[Member], graceful: bool) -> None:
        """Wait for local workers (grace), then SIGTERM, then SIGKILL; never leaves a child behind."""
        reap([m.proc for m in members if m.proc is not None], self.config.shutdown_grace_s if graceful else 0.0)


def run_fabric(
    factory: str,
    spec: Any,
    n_workers: int,
    until_ps: int | None = None,
    bind: str = "127.0.0.1",
    timeout_s: float | None = None,
    quiet: bool = True,
    allow_remote: int = 0,
    key_file: str | None = None,
    **config: Any,
) -> RunOutcome:
    """One run on a fresh coordinator; extra keyword arguments go to CoordinatorConfig."""
    cfg = CoordinatorConfig(bind=bind, timeout_s=timeout_s, quiet=quiet, allow_remote=allow_remote,
                            key_file=key_file, **config)
    with Coordinator(cfg) as coord:
        return coord.run(factory, spec, n_workers, until_ps)
