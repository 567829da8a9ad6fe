"""Worker process entry: ``python -m spin.parallel.worker_main --join tcp://HOST:PORT [--key-file F]``.

A worker binds its data socket, says hello to the coordinator, receives its id, the scenario spec
(as data, spin.parallel.codec: never pickle), the program factory, the run epoch and the peers'
endpoints, builds its program, runs the rounds and returns its result. Without a key it joins only
a coordinator on loopback: anything beyond must prove itself with CurveZMQ before a worker reads
a byte from it. A watchdog thread exchanges heartbeats with the coordinator on its own
socket, so a worker busy in a long engine call still notices a lost coordinator (> heartbeat
timeout: exit) or an abort. Local children also ask the kernel to kill them with their parent
(PR_SET_PDEATHSIG), so no worker outlives its run. A worker that loses its coordinator says so
in one line naming itself (rank and host when a launcher started it) and what it was doing.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from urllib.parse import urlparse

import zmq

from spin.errors import ConfigError, SpinError, TransportError
from spin.parallel import codec
from spin.parallel.auth import KeyPair, load_keys, make_client, start_authenticator
from spin.parallel import control
from spin.parallel.control import (
    MSG_ABORT,
    MSG_BEAT,
    MSG_ERROR,
    MSG_HELLO,
    MSG_READY,
    MSG_REJECT,
    MSG_RESULT,
    MSG_SETUP,
    MSG_START,
    Aborted,
    Setup,
)
from spin.parallel.mesh import Mesh, MeshConfig, tune_socket
from spin.parallel.procs import EXIT_ORPHANED
from spin.parallel.program import describe, load_factory
from spin.parallel.sync import run_rounds

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_JOIN = 2
EXIT_ABORTED = 3
PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL us when the spawning thread dies; exit now if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the heartbeat watchdog still applies
        return
    if os.getppid() != parent_pid:
        os._exit(EXIT_ORPHANED)


def endpoint_host(endpoint: str) -> str:
    url = urlparse(endpoint)
    try:
        port = url.port
    except ValueError:          # beyond 65535
        port = 0
    if url.scheme != "tcp" or not url.hostname or not port:
        raise ConfigError(f"coordinator endpoint must look like tcp://HOST:PORT with a port "
                          f"1..65535, got {endpoint!r}")
    return url.hostname


def is_loopback_host(host: str) -> bool:
    """True only if every address ``host`` names is a loopback address (resolves names, no traffic)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def check_trust(endpoint: str, keys: KeyPair | None) -> None:
    """Refuse, before opening any socket, to join a coordinator beyond loopback without a key."""
    host = endpoint_host(endpoint)
    if keys is None and not is_loopback_host(host):
        raise ConfigError(
            f"refusing to join {endpoint} without --key-file: a coordinator beyond loopback must "
            f"authenticate with the run's CurveZMQ key (spin keys DIR), or anyone on the network "
            f"could hand this worker a run"
        )


def resolve_endpoints(endpoints: tuple[str, ...], join_host: str) -> list[str]:
    """A wildcard data endpoint belongs to a worker on the coordinator's machine: reach it at the
    address this worker reached the coordinator at."""
    out = []
    for ep in endpoints:
        host = urlparse(ep).hostname or ""
        if host in ("0.0.0.0", "::"):
            port = ep.rsplit(":", 1)[1]
            ep = f"tcp://[{join_host}]:{port}" if ":" in join_host else f"tcp://{join_host}:{port}"
        out.append(ep)
    return out


def local_address_towards(endpoint: str) -> str:
    """The address of the interface that routes to the coordinator (where peers can reach us)."""
    host = urlparse(endpoint).hostname or "127.0.0.1"
    if host in ("localhost", "127.0.0.1", "::1"):
        return "127.0.0.1" if host != "::1" else "::1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect((host, 9))  # UDP connect sends nothing; it only picks the route
        return s.getsockname()[0]


@dataclass
class _Shared:
    """State the main thread publishes for the watchdog's heartbeats (plain attribute writes)."""

    t_ps: int = 0
    rounds: int = 0
    events: int = 0
    phase: str = "while building its program"  # "" while running the rounds

    def doing(self) -> str:
        return self.phase or (f"in round {self.rounds} at virtual time {self.t_ps} ps, while "
                              f"exchanging round messages with its peers")


class Watchdog(threading.Thread):
    """Heartbeats both ways on a dedicated socket; exits the process if the coordinator is lost."""

    def __init__(self, sock: zmq.Socket, setup: Setup, shared: _Shared, who: str = "",
                 endpoint: str = "") -> None:
        super().__init__(name="spin-watchdog", daemon=True)
        self._sock = sock
        self._setup = setup
        self._shared = shared
        self._who = who or f"spin worker {setup.worker_id} (pid {os.getpid()})"
        self._endpoint = endpoint
        self.abort = threading.Event()
        self.stop = threading.Event()
        self.abort_reason = ""

    def run(self) -> None:
        s = self._setup
        last_heard = last_sent = time.monotonic()
        abort_at = 0.0
        while not self.stop.is_set():
            if self._sock.poll(int(s.heartbeat_interval_s * 200), zmq.POLLIN):  # stop is seen within this
                kind, payload = self._sock.recv_multipart()
                last_heard = time.monotonic()
                if kind == MSG_ABORT and not self.abort.is_set():
                    self.abort_reason = payload.decode(errors="replace")
                    abort_at = last_heard
                    self.abort.set()
            now = time.monotonic()
            if now - last_sent >= s.heartbeat_interval_s:
                beat = {"t_ps": self._shared.t_ps, "rounds": self._shared.rounds, "events": self._shared.events}
                try:
                    self._sock.send_multipart([MSG_BEAT, json.dumps(beat).encode()], zmq.NOBLOCK)
                except zmq.Again:
                    pass
                last_sent = now
            if now - last_heard > s.heartbeat_timeout_s:
                sys.stderr.write(
                    f"{self._who}: no heartbeat from the coordinator{self._endpoint} for "
                    f"{s.heartbeat_timeout_s} s {self._shared.doing()}; exiting\n"
                )
                sys.stderr.flush()
                os._exit(EXIT_ORPHANED)
            if self.abort.is_set() and now - abort_at > s.abort_grace_s:
                os._exit(EXIT_ABORTED)  # the main thread is stuck in the program; do not wait for it
        self._sock.close(0)

    def check(self) -> None:
        """Called by the main thread while it waits: raise if the coordinator aborted the run."""
        if self.abort.is_set():
            raise Aborted(self.abort_reason)


def _dealer(ctx: zmq.Context, endpoint: str, keys: KeyPair | None, send_timeout_s: float) -> zmq.Socket:
    sock = ctx.socket(zmq.DEALER)
    tune_socket(sock, 1000, connecting=True)
    sock.setsockopt(zmq.SNDTIMEO, int(send_timeout_s * 1000))
    sock.setsockopt(zmq.IDENTITY, os.urandom(12))
    make_client(sock, keys)
    sock.connect(endpoint)
    return sock


def _send(sock: zmq.Socket, kind: bytes, payload: dict) -> None:
    sock.send_multipart([kind, json.dumps(payload).encode()])


def _send_result(sock: zmq.Socket, payload: dict) -> None:
    """Send the run's result, or fail naming its size: the coordinator drops a control message
    above MAX_CONTROL_BYTES, and would then wait for this result for ever."""
    body = json.dumps(payload).encode()
    limit = control.MAX_CONTROL_BYTES
    if len(body) > limit:
        raise TransportError(
            f"its result is {len(body) / 2**20:,.0f} MiB, above the {limit >> 20} MiB "
            f"a worker may send (host memory returned for checks, dumps and digests, and captured "
            f"frames make it large): run with --workers 1, or check, dump or capture less")
    sock.send_multipart([MSG_RESULT, body])


def _wait(sock: zmq.Socket, timeout_s: float, check=None) -> list[bytes] | None:
    """The next message from the coordinator, at least [kind, payload]."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sock.poll(100, zmq.POLLIN):
            parts = sock.recv_multipart()
            return parts if len(parts) >= 2 else [parts[0], b""]
        if check is not None:
            check()
    return None


def _join_failed(endpoint: str, timeout_s: float, keyed: bool) -> TransportError:
    hint = (
        "check that --key-file holds the run's key (the same file as the coordinator's)"
        if keyed
        else "a coordinator waiting for workers to join (loopback included) requires CurveZMQ: pass "
        "--key-file with the run's key"
    )
    return TransportError(
        f"no answer from the coordinator at {endpoint} within {timeout_s} s: is it running and waiting "
        f"for workers? {hint}"
    )


def describe_self(worker_id: int, rank: int | None, data_endpoint: str) -> str:
    """"spin worker 1 (rank 2, pid 77 on node7 (10.0.0.7))": how this worker names itself."""
    addr = data_endpoint.rsplit(":", 1)[0].removeprefix("tcp://").strip("[]")
    host = socket.gethostname() + (f" ({addr})" if addr else "")
    return (f"spin worker {worker_id} (" + (f"rank {rank}, " if rank is not None else "")
            + f"pid {os.getpid()} on {host})")


def serve(endpoint: str, keys: KeyPair | None, slot: int, token: str, join_timeout_s: float,
          data_bind: str | None = None, rank: int | None = None) -> int:
    """Join a run and serve it; returns the process exit code. ``rank`` (a launched job's)
    only names this worker in what it reports."""
    try:
        check_trust(endpoint, keys)
    except ConfigError as exc:
        sys.stderr.write(f"spin worker: {exc}\n")
        return EXIT_JOIN
    ctx = zmq.Context()
    auth = start_authenticator(ctx, keys) if keys is not None else None
    mesh: Mesh | None = None
    ctl = _dealer(ctx, endpoint, keys, join_timeout_s)
    hb = _dealer(ctx, endpoint, keys, join_timeout_s)
    watchdog: Watchdog | None = None
    program = None
    worker_id = -1
    try:
        mesh = Mesh(ctx, keys, MeshConfig())
        data_ep = mesh.bind(data_bind or local_address_towards(endpoint))
        hello = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "data_endpoint": data_ep,
            "hb_identity": hb.getsockopt(zmq.IDENTITY).hex(),
            "slot": slot,
            "token": token,
        }
        deadline = time.monotonic() + join_timeout_s    # one wait in all, not one per step
        try:
            _send(ctl, MSG_HELLO, hello)
        except zmq.Again:
            raise _join_failed(endpoint, join_timeout_s, keys is not None) from None
        got = _wait(ctl, max(0.0, deadline - time.monotonic()))
        if got is None:
            raise _join_failed(endpoint, join_timeout_s, keys is not None)
        kind, payload = got[0], got[1]
        if kind == MSG_REJECT:
            raise TransportError(f"the coordinator at {endpoint} refused this worker: "
                                 f"{payload.decode(errors='replace')[:200]}")
        if kind != MSG_SETUP or len(got) != 3:
            raise TransportError(f"expected setup from {endpoint}, got {kind[:20]!r} in {len(got)} parts")
        setup = Setup.from_json(payload)
        spec = codec.decode(got[2])  # data only: builds dataclasses, resolves named functions
        worker_id = setup.worker_id
        shared = _Shared()
        watchdog = Watchdog(hb, setup, shared, describe_self(worker_id, rank, data_ep),
                            f" at {endpoint}")
        hb = None  # owned by the watchdog thread now
        watchdog.start()
        mesh.set_interrupt(watchdog.check)
        mesh.connect(setup.worker_id, resolve_endpoints(setup.endpoints, endpoint_host(endpoint)), setup.epoch)
        program = load_factory(setup.factory)(spec, setup.worker_id, len(setup.endpoints))
        _send(ctl, MSG_READY, {"describe": describe(program)})
        shared.phase = "while waiting for the run to start (its peers build their programs)"
        got = _wait(ctl, 365 * 86400.0, watchdog.check)
        if got is not None and got[0] == MSG_ABORT:
            raise Aborted(got[1].decode(errors="replace"))
        if got is None or got[0] != MSG_START:
            raise TransportError(f"worker {worker_id}: expected start, got {got and got[0]!r}")

        def on_round(t_ps: int, rounds: int, events: int) -> None:
            shared.t_ps, shared.rounds, shared.events = t_ps, rounds, events

        rtt_s, rtt_cpu_s = mesh.round_trip(setup.round_trips)
        shared.phase = ""
        out = run_rounds(program, mesh, setup.worker_id, len(setup.endpoints), setup.until_ps, on_round)
        if setup.round_trips:  # again after the loop: the machine's load may have changed meanwhile
            after_s, after_cpu_s = mesh.round_trip(setup.round_trips)
            rtt_s, rtt_cpu_s = (rtt_s + after_s) / 2, (rtt_cpu_s + after_cpu_s) / 2
        shared.phase = f"after its {out.rounds} rounds, while sending its result"
        result = program.result()
        _send_result(
            ctl,
            {
                "result": result,
                "rounds": out.rounds,
                "end_ps": out.end_ps,
                "loop_wall_s": out.wall_s,
                "events": out.events,
                "stats": {**mesh.stats.as_dict(), "round_trip_ns": int(rtt_s * 1e9),
                          "round_trip_cpu_ns": int(rtt_cpu_s * 1e9), "loop_cpu_ns": int(out.cpu_s * 1e9)},
            },
        )
        # bye: our result was received (it may wait for slower workers; the watchdog ends the
        # wait if the coordinator goes silent)
        _wait(ctl, 365 * 86400.0, watchdog.check)
        return EXIT_OK
    except Aborted:
        return EXIT_ABORTED
    except BaseException as exc:  # report everything, including KeyboardInterrupt, then exit
        report = {
            "kind": type(exc).__name__,
            "message": str(exc),
            "traceback": traceback.format_exc(),
            "describe": describe(program) if program is not None else "program not built",
        }
        try:   # without waiting: a coordinator never reached would hold this for the timeout
            ctl.send_multipart([MSG_ERROR, json.dumps(report).encode()], flags=zmq.DONTWAIT)
            if worker_id >= 0:  # a member of the run: wait until the coordinator has the report
                _wait(ctl, 2.0)
        except zmq.ZMQError:
            pass
        who = (f"spin worker {f'{worker_id} ' if worker_id >= 0 else ''}("
               + (f"rank {rank}, " if rank is not None else "") + f"pid {os.getpid()})")
        sys.stderr.write(f"{who}: {type(exc).__name__}: {exc}\n")
        return EXIT_JOIN if worker_id < 0 else EXIT_FAILED
    finally:
        if watchdog is not None:
            watchdog.stop.set()
            watchdog.join(timeout=2.0)
        if hb is not None:
            hb.close(0)
        ctl.close(0)
        if mesh is not None:
            mesh.close()
        if auth is not None:
            auth.stop()
        ctx.term()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spin.parallel.worker_main", description=__doc__.splitlines()[0])
    parser.add_argument("--join", required=True, help="coordinator endpoint, tcp://HOST:PORT")
    parser.add_argument("--key-file", help="the run's CurveZMQ secret key file (spin.key_secret)")
    parser.add_argument("--join-timeout-s", type=float, default=120.0)
    parser.add_argument("--slot", type=int, default=-1, help=argparse.SUPPRESS)  # local children only
    parser.add_argument("--token-stdin", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-bind", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--preload", default=None, help=argparse.SUPPRESS)  # local children only
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)  # a launched job's
    args = parser.parse_args(argv)
    if args.parent_pid:
        die_with_parent(args.parent_pid)
    try:
        keys = load_keys(args.key_file) if args.key_file else None
    except SpinError as exc:
        sys.stderr.write(f"spin worker: {exc}\n")
        return EXIT_JOIN
    token = sys.stdin.readline().strip() if args.token_stdin else ""
    if args.preload:  # the factory's module, named by our parent: import it while it prepares
        try:
            importlib.import_module(args.preload)
        except Exception:  # noqa: BLE001 - load_factory reports it properly, in the run
            pass
    return serve(args.join, keys, args.slot, token, args.join_timeout_s, args.data_bind, args.rank)


if __name__ == "__main__":
    code = main()
    # Everything worth keeping has been sent and every socket is closed: skip the interpreter's
    # teardown of a process holding a whole engine (up to a second, spent before the coordinator
    # may return its results).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
