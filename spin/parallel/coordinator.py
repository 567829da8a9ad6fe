"""The coordinator: starts (or admits) the workers of a run, hands out the run, and supervises it.

It is not on the data path: workers synchronise among themselves (spin.parallel.sync). The
coordinator owns one ROUTER control socket, assigns worker ids, sends each worker the pickled
spec, the factory path, a random run epoch and the peers' data endpoints, then watches: local
processes by pid, every worker by heartbeats. The first failure aborts the whole run and becomes a
WorkerError naming the worker, its pid, its program's description and the remote traceback.

Trust: the coordinator never unpickles anything it receives (worker messages are JSON); workers
unpickle the spec of the coordinator they were told to join. Listening beyond loopback requires
CurveZMQ (spin.parallel.auth), so only holders of the run's key can join.
"""

from __future__ import annotations

import ipaddress
import json
import os
import pickle
import pickletools
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from spin.errors import ConfigError, SpinError, TransportError, WorkerError
from spin.parallel.auth import KeyPair, load_keys, make_server, start_authenticator
from spin.parallel.progress import Progress

MSG_HELLO = b"hello"
MSG_SETUP = b"setup"
MSG_READY = b"ready"
MSG_START = b"start"
MSG_RESULT = b"result"
MSG_ERROR = b"error"
MSG_BYE = b"bye"
MSG_REJECT = b"reject"
MSG_BEAT = b"beat"
MSG_ABORT = b"abort"

_POLL_MS = 50
_KILL_WAIT_S = 1.0


class Aborted(SpinError):
    """Raised inside a worker when the coordinator aborts the run (another worker failed)."""


@dataclass(frozen=True)
class Setup:
    """Everything a worker needs to take part in a run (sent pickled, once)."""

    worker_id: int
    epoch: int
    factory: str
    spec: Any
    endpoints: tuple[str, ...]  # data endpoint of every worker, by id
    until_ps: int | None
    heartbeat_interval_s: float
    heartbeat_timeout_s: float
    abort_grace_s: float


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
    remote_silence_timeout_s: float = 15.0  # a remote worker silent this long is declared lost
    shutdown_grace_s: float = 1.0  # after abort/bye, before SIGTERM (then SIGKILL) of local workers
    quiet: bool = True

    def __post_init__(self) -> None:
        for name in ("join_timeout_s", "heartbeat_interval_s", "heartbeat_timeout_s",
                     "remote_silence_timeout_s", "shutdown_grace_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"CoordinatorConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigError(f"CoordinatorConfig.timeout_s must be > 0 or None, got {self.timeout_s}")
        if self.allow_remote < 0:
            raise ConfigError(f"CoordinatorConfig.allow_remote must be >= 0, got {self.allow_remote}")
        if self.heartbeat_timeout_s <= 2 * self.heartbeat_interval_s:
            raise ConfigError("CoordinatorConfig.heartbeat_timeout_s must exceed 2 x heartbeat_interval_s")


@dataclass(frozen=True)
class WorkerOutcome:
    worker_id: int
    pid: int
    host: str
    description: str
    result: dict
    rounds: int
    events: int
    loop_wall_s: float  # wall time of the worker's round loop
    stats: dict[str, int]  # the worker's TransportStats


@dataclass(frozen=True)
class RunOutcome:
    results: tuple[dict, ...]  # program.result() of each worker, by worker id (JSON-decoded)
    workers: tuple[WorkerOutcome, ...]
    rounds: int
    end_ps: int  # final global bound (INF_PS when everything went idle)
    wall_s: float  # whole run, spawn to last result
    loop_wall_s: float  # slowest worker's round loop (excludes start-up and program build)
    transport: dict[str, int]  # TransportStats summed over workers, plus "rounds"
    epoch: int


@dataclass
class _Member:
    """The coordinator's view of one worker."""

    worker_id: int
    local: bool
    token: str = ""
    proc: subprocess.Popen | None = None
    stderr_path: str = ""
    identity: bytes = b""
    hb_identity: bytes = b""
    pid: int = 0
    host: str = ""
    data_endpoint: str = ""
    description: str = ""
    state: str = "spawned"  # spawned -> joined -> setup -> ready -> done
    last_beat: float = 0.0
    beat: dict = field(default_factory=dict)
    outcome: WorkerOutcome | None = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with code {rc}"


def _tail(path: str, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


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
        host = f"[{config.bind}]" if ":" in config.bind else config.bind
        try:
            self._router.bind(f"tcp://{host}:{config.port or '*'}")
        except zmq.ZMQError as exc:
            self.close()
            raise ConfigError(f"cannot bind the coordinator on {config.bind}:{config.port}: {exc}") from exc
        self.endpoint: str = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        port = self.endpoint.rsplit(":", 1)[1]
        wildcard = config.bind in ("0.0.0.0", "::", "*")
        self._local_endpoint = f"tcp://127.0.0.1:{port}" if wildcard else self.endpoint

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
        _check_spec(spec)
        n_local = n_workers - cfg.allow_remote
        members = [_Member(worker_id=i, local=i < n_local, token=secrets.token_hex(8)) for i in range(n_workers)]
        epoch = secrets.randbits(64)
        started = time.monotonic()
        deadline = started + cfg.timeout_s if cfg.timeout_s is not None else float("inf")
        progress = Progress(until_ps, cfg.quiet)
        with tempfile.TemporaryDirectory(prefix="spin-workers-") as tmp:
            try:
                for m in members[:n_local]:
                    self._spawn(m, tmp)
                self._join(members, deadline)
                self._send_setups(members, epoch, factory, spec, until_ps)
                self._until(members, "ready", deadline, progress)
                for m in members:
                    self._send(m, MSG_START, b"")
                self._until(members, "done", deadline, progress)
                for m in members:
                    self._send(m, MSG_BYE, b"", required=False)
                self._reap(members, graceful=True)
            except BaseException as exc:
                self._abort(members, f"{type(exc).__name__}: {exc}")
                raise
            finally:
                progress.close()
                self._reap(members, graceful=False)
        return self._outcome(members, epoch, time.monotonic() - started)

    def close(self) -> None:
        if self._router is not None:
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

    def _spawn(self, m: _Member, tmp: str) -> None:
        cmd = [sys.executable, "-m", "spin.parallel.worker_main", "--join", self._local_endpoint,
               "--slot", str(m.worker_id), "--token", m.token, "--parent-pid", str(os.getpid()),
               "--join-timeout-s", str(self.config.join_timeout_s)]
        if self._keys is not None:
            cmd += ["--key-file", self._keys.path]
        env = dict(os.environ)
        paths = [p or os.getcwd() for p in sys.path]  # workers import what the caller can import
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if os.path.isdir(p))
        m.stderr_path = os.path.join(tmp, f"worker{m.worker_id}.log")
        with open(m.stderr_path, "wb") as log:
            m.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                      start_new_session=True)  # Ctrl-C reaches only the coordinator
        m.pid = m.proc.pid

    def _join(self, members: list[_Member], deadline: float) -> None:
        join_deadline = min(deadline, time.monotonic() + self.config.join_timeout_s)
        while any(m.state == "spawned" for m in members):
            if time.monotonic() > join_deadline:
                missing = [m for m in members if m.state == "spawned"]
                remote = [m.worker_id for m in missing if not m.local]
                hint = (f"; start remote workers with: python -m spin.parallel.worker_main --join "
                        f"{self.endpoint}" + (" --key-file KEYFILE" if self._keys else "")) if remote else ""
                raise TransportError(
                    f"workers {[m.worker_id for m in missing]} did not join {self.endpoint} within "
                    f"{self.config.join_timeout_s} s{hint}"
                )
            self._pump(members, None)

    def _send_setups(self, members: list[_Member], epoch: int, factory: str, spec: Any,
                     until_ps: int | None) -> None:
        cfg = self.config
        endpoints = tuple(m.data_endpoint for m in members)
        now = time.monotonic()
        for m in members:
            setup = Setup(m.worker_id, epoch, factory, spec, endpoints, until_ps,
                          cfg.heartbeat_interval_s, cfg.heartbeat_timeout_s, cfg.shutdown_grace_s)
            self._send(m, MSG_SETUP, pickle.dumps(setup))
            m.last_beat = now
            m.state = "setup"

    def _until(self, members: list[_Member], state: str, deadline: float, progress: Progress) -> None:
        order = ("spawned", "joined", "setup", "ready", "done")
        while any(order.index(m.state) < order.index(state) for m in members):
            if time.monotonic() > deadline:
                raise TransportError(f"the run did not finish within timeout_s={self.config.timeout_s}")
            self._pump(members, progress)

    # -- the supervision loop ---------------------------------------------------------------

    def _pump(self, members: list[_Member], progress: Progress | None) -> None:
        """One poll slice: dispatch messages, check processes and heartbeats, send heartbeats."""
        if self._router.poll(_POLL_MS, zmq.POLLIN):
            while self._router.poll(0, zmq.POLLIN):
                self._dispatch(members, self._router.recv_multipart())
        now = time.monotonic()
        for m in members:
            if m.proc is not None and m.state != "done" and m.proc.poll() is not None:
                raise self._error(m, _exit_text(m.proc.returncode))
            if m.state in ("setup", "ready") and m.hb_identity:
                if not m.local and now - m.last_beat > self.config.remote_silence_timeout_s:
                    raise self._error(m, f"was silent for {self.config.remote_silence_timeout_s} s (lost or hung)")
                if now - m.beat.get("sent", 0.0) >= self.config.heartbeat_interval_s:
                    self._beat(m, MSG_BEAT, b"")
                    m.beat["sent"] = now
        if progress is not None:
            live = [m.beat for m in members if "t_ps" in m.beat]
            if live:
                progress.update(min(b["t_ps"] for b in live), sum(b["events"] for b in live),
                                max(b["rounds"] for b in live))

    def _dispatch(self, members: list[_Member], parts: list[bytes]) -> None:
        if len(parts) != 3:
            return  # not our protocol; ignore
        ident, kind, payload = parts
        try:
            body = json.loads(payload) if payload else {}
        except ValueError:
            return
        if kind == MSG_HELLO:
            self._hello(members, ident, body)
            return
        for m in members:
            if ident == m.hb_identity and kind == MSG_BEAT:
                m.last_beat = time.monotonic()
                m.beat.update({k: int(body[k]) for k in ("t_ps", "rounds", "events") if k in body})
                return
            if ident == m.identity and m.identity:
                if kind == MSG_READY:
                    m.description = str(body.get("describe", ""))
                    m.state = "ready"
                elif kind == MSG_RESULT:
                    m.outcome = WorkerOutcome(m.worker_id, m.pid, m.host, m.description, body["result"],
                                              int(body["rounds"]), int(body["events"]),
                                              float(body["loop_wall_s"]), dict(body["stats"]))
                    m.beat["end_ps"] = int(body["end_ps"])
                    m.state = "done"
                elif kind == MSG_ERROR:
                    m.description = str(body.get("describe") or m.description)
                    self._send(m, MSG_BYE, b"", required=False)  # it waits for this before exiting
                    raise self._error(m, f"failed: {body.get('kind')}: {body.get('message')}",
                                      str(body.get("traceback") or ""))
                return

    def _hello(self, members: list[_Member], ident: bytes, body: dict) -> None:
        slot = body.get("slot", -1)
        if isinstance(slot, int) and slot >= 0:
            match = [m for m in members if m.local and m.worker_id == slot and m.state == "spawned"
                     and secrets.compare_digest(m.token, str(body.get("token", "")))]
        else:
            match = [m for m in members if not m.local and m.state == "spawned"][:1]
        if not match:
            self._reply(ident, MSG_REJECT, b"this run has no free worker slot")
            return
        m = match[0]
        try:
            m.pid = int(body["pid"])
            m.host = str(body["host"])
            m.data_endpoint = str(body["data_endpoint"])
            m.hb_identity = bytes.fromhex(body["hb_identity"])
        except (KeyError, ValueError, TypeError):
            self._reply(ident, MSG_REJECT, b"malformed hello")
            return
        m.identity = ident
        m.state = "joined"
        m.last_beat = time.monotonic()

    # -- messaging --------------------------------------------------------------------------

    def _reply(self, ident: bytes, kind: bytes, payload: bytes) -> bool:
        try:
            self._router.send_multipart([ident, kind, payload], zmq.NOBLOCK)
            return True
        except zmq.ZMQError:  # EHOSTUNREACH (gone) or EAGAIN (not reading)
            return False

    def _send(self, m: _Member, kind: bytes, payload: bytes, required: bool = True) -> None:
        if not m.identity:
            return
        if not self._reply(m.identity, kind, payload) and required:
            raise self._error(m, f"is unreachable (could not send {kind.decode()})")

    def _beat(self, m: _Member, kind: bytes, payload: bytes) -> None:
        if m.hb_identity:
            self._reply(m.hb_identity, kind, payload)

    # -- failure and shutdown ---------------------------------------------------------------

    def _error(self, m: _Member, what: str, remote_tb: str = "") -> WorkerError:
        where = f"pid {m.pid}" + (f" on {m.host}" if m.host and not m.local else "")
        text = f"worker {m.worker_id} ({where}; {m.description or 'program not built yet'}) {what}"
        if remote_tb:
            text += f"\n--- remote traceback ---\n{remote_tb.rstrip()}"
        elif m.stderr_path and (tail := _tail(m.stderr_path)):
            text += f"\n--- worker output (tail) ---\n{tail}"
        err = WorkerError(text)
        err.worker_id, err.pid, err.description, err.remote_traceback = m.worker_id, m.pid, m.description, remote_tb
        return err

    def _abort(self, members: list[_Member], reason: str) -> None:
        for m in members:
            if m.state != "spawned":
                self._beat(m, MSG_ABORT, reason.encode()[:2000])
        self._reap(members, graceful=True)

    def _reap(self, members: list[_Member], graceful: bool) -> None:
        """Wait for local workers (grace), then SIGTERM, then SIGKILL; never leaves a child behind."""
        procs = [m.proc for m in members if m.proc is not None and m.proc.returncode is None]
        try:
            if graceful:
                _wait_all(procs, self.config.shutdown_grace_s)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                alive = [p for p in procs if p.poll() is None]
                if not alive:
                    break
                for p in alive:
                    try:
                        p.send_signal(sig)
                    except ProcessLookupError:
                        pass
                _wait_all(alive, _KILL_WAIT_S)
        except KeyboardInterrupt:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            raise

    def _outcome(self, members: list[_Member], epoch: int, wall_s: float) -> RunOutcome:
        outs = [m.outcome for m in members]
        assert all(o is not None for o in outs)
        rounds = {o.rounds for o in outs}
        if len(rounds) != 1:
            raise TransportError(f"workers disagree on the number of rounds: {sorted(rounds)}")
        transport: dict[str, int] = {}
        for o in outs:
            for k, v in o.stats.items():
                transport[k] = transport.get(k, 0) + int(v)
        transport["rounds"] = outs[0].rounds
        return RunOutcome(
            results=tuple(o.result for o in outs),
            workers=tuple(outs),
            rounds=outs[0].rounds,
            end_ps=members[0].beat.get("end_ps", 0),
            wall_s=wall_s,
            loop_wall_s=max(o.loop_wall_s for o in outs),
            transport=transport,
            epoch=epoch,
        )


def _check_spec(spec: Any) -> None:
    """Fail early, in the caller, if workers could not unpickle the spec."""
    try:
        blob = pickle.dumps(spec)
    except Exception as exc:
        raise ConfigError(f"the spec must be picklable: {exc}") from exc
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(blob):
        if op.name == "GLOBAL" and str(arg).startswith("__main__ "):
            bad = str(arg).split(" ", 1)[1]
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2 and strings[-2] == "__main__":
            bad = strings[-1]
        else:
            if isinstance(arg, str):
                strings.append(arg)
            continue
        raise ConfigError(
            f"the spec uses {bad!r} defined in __main__, which workers cannot import; "
            f"move it to an importable module"
        )


def _wait_all(procs: list[subprocess.Popen], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


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
