"""``Endpoint``: a program outside the engine attached to a host port of a running fabric.

It sends and receives real Ethernet frames (bytes, or anything ``bytes()`` accepts, such as a
scapy packet). In lockstep mode the fabric hands it frames round by round with their virtual
arrival times and waits for its answer, which this class hides::

    with Endpoint("tcp://127.0.0.1:5600") as ep:
        ep.send(first_frame, at_ps=0)              # before iterating: frames to start with
        for frame, t_ps in ep.frames():            # every frame reaching the host, in time order
            ep.send(reply, at_ps=t_ps + 1000)      # at or after the frame it answers

In real time the same loop works; frames are stamped with the fabric's paced virtual time when
they arrive there (``at_ps`` is ignored) and ``recv(timeout_s)`` polls. The iteration ends when
the run ends.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator

import zmq

from ..errors import ConfigError, EndpointError
from ..parallel.auth import load_keys, make_client
from . import protocol as P
from .spec import bind_address, is_loopback_url

Frame = bytes


class Endpoint:
    """Attach to the fabric listening at ``url`` (``spin run --endpoint HOST=URL``).

    ``host`` (optional) must match the host served there; ``key_file`` is the run's CurveZMQ
    key (required beyond loopback); ``timeout_s`` bounds every wait for the fabric (it may be
    compiling its engine when you attach).
    """

    def __init__(self, url: str, *, host: str | None = None, key_file: str | None = None,
                 timeout_s: float = 600.0) -> None:
        bind_address(url, "Endpoint")
        keys = load_keys(key_file) if key_file else None
        if keys is None and not is_loopback_url(url):
            raise ConfigError(f"Endpoint {url!r}: a fabric beyond loopback requires its "
                              f"CurveZMQ key; pass key_file (the run's spin.key_secret)")
        self.url = url
        self.timeout_s = timeout_s
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SNDHWM, 100000)
        self._sock.setsockopt(zmq.RCVHWM, 100000)
        make_client(self._sock, keys)
        self._monitor = self._sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._sock.connect(url)
        self._out_times: list[int] = []
        self._out_frames: list[bytes] = []
        self._queue: list[tuple[bytes, int]] = []
        self._started = False
        self._in_round = False
        self._round = 0
        self._now = 0
        self.ended = False
        self.end_reason = ""
        self._closed = False
        try:
            self._sock.send_multipart(P.message(P.HELLO, {"version": P.VERSION, "host": host}))
            kind, head, _ = self._next("to welcome this endpoint")
        except BaseException:
            self.close()
            raise
        if kind != P.WELCOME:
            self.close()
            raise EndpointError(f"the fabric at {url} refused this endpoint: "
                                f"{head.get('reason', kind.decode(errors='replace'))}")
        self.info = head
        self.mode: str = head["mode"]
        self.host: str = head["host"]
        self.node: int = head["node"]
        self.mac: str = head["mac"]
        self.ip: str = head["ip"]

    # --- sending ------------------------------------------------------------------------
    def send(self, frame, at_ps: int | None = None) -> None:
        """Hand ``frame`` to the host's port at virtual time ``at_ps`` (lockstep; default: the
        arrival time of the frame being answered, or 0 before the first). Frames leave in the
        order sent, each once the port is free. In real time the fabric stamps it on arrival."""
        data = bytes(frame)
        if len(data) > self.info["max_frame_bytes"]:
            raise EndpointError(f"frame of {len(data)} B; the fabric's frames hold at most "
                                f"{self.info['max_frame_bytes']} B")
        if self.ended or self._closed:
            raise EndpointError(f"endpoint {self.host}: the run has ended ({self.end_reason})")
        if self.mode == "realtime":
            self._sock.send_multipart(P.message(P.SEND, {}, [0], [data]))
            return
        if self._started and not self._in_round:
            raise EndpointError(f"endpoint {self.host} (lockstep): send before iterating "
                                f"frames(), or while handling a frame it yielded")
        t = self._now if at_ps is None else int(at_ps)
        if t < self._now:
            raise EndpointError(f"at_ps = {t} is before the frame being answered (t = "
                                f"{self._now} ps): a lockstep endpoint cannot act in the past")
        self._out_times.append(t)
        self._out_frames.append(data)

    # --- receiving ----------------------------------------------------------------------
    def frames(self) -> Iterator[tuple[Frame, int]]:
        """Every frame reaching the host, with its virtual arrival time (ps), in time order,
        until the run ends."""
        if self.mode == "realtime":
            while True:
                got = self.recv(self.timeout_s)
                if got is None:
                    if self.ended:
                        return
                    raise EndpointError(f"no frame from {self.url} within {self.timeout_s} s")
                yield got
        if not self._started:
            self._started = True
            self._flush(P.SEND, 0)
        while not self.ended:
            kind, head, frames = self._next("for frames")
            if kind != P.FRAMES:
                continue
            self._round = int(head["round"])
            self._in_round = True
            try:
                for data, t in frames:
                    self._now = t
                    yield data, t
            finally:
                self._in_round = False
                if not self._closed:
                    self._flush(P.SEND, self._round)

    def recv(self, timeout_s: float | None = None) -> tuple[Frame, int] | None:
        """Real time: the next frame and its virtual arrival time, or None after ``timeout_s``
        (or when the run has ended)."""
        if self.mode != "realtime":
            raise EndpointError("recv() is for realtime endpoints; iterate frames() in lockstep")
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while not self._queue and not self.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            kind, _head, frames = self._next("for frames", left, quiet_timeout=True)
            if kind == P.FRAMES:
                self._queue.extend(frames)
        return self._queue.pop(0) if self._queue else None

    def serve(self, handle: Callable[[Frame, int], Iterable | None]) -> None:
        """Call ``handle(frame, t_ps)`` for every frame until the run ends and send what it
        returns (frames, or (frame, at_ps) pairs)."""
        for frame, t in self.frames():
            for out in handle(frame, t) or ():
                if isinstance(out, tuple):
                    self.send(*out)
                else:
                    self.send(out)

    @property
    def now_ps(self) -> int:
        """Lockstep: the arrival time of the frame being handled (0 before the first)."""
        return self._now

    # --- plumbing -----------------------------------------------------------------------
    def _flush(self, kind: bytes, round_no: int) -> None:
        total = sum(len(f) for f in self._out_frames)
        if total > P.MAX_MESSAGE_BYTES or len(self._out_frames) > P.MAX_FRAMES_PER_MESSAGE:
            n = len(self._out_frames)
            self._out_times, self._out_frames = [], []
            raise EndpointError(f"endpoint {self.host}: {n} frames of {total} B in one round; "
                                f"a round's answer holds at most {P.MAX_FRAMES_PER_MESSAGE} "
                                f"frames and {P.MAX_MESSAGE_BYTES} B")
        self._sock.send_multipart(P.message(kind, {"round": round_no}, self._out_times,
                                            self._out_frames))
        self._out_times, self._out_frames = [], []

    def _next(self, what: str, timeout_s: float | None = None, quiet_timeout: bool = False):
        """(kind, header, [(frame, t)]) of the fabric's next message."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if quiet_timeout:
                    return b"", {}, []
                raise EndpointError(f"no message from the fabric at {self.url} within "
                                    f"{timeout} s {what}")
            ready = dict(poller.poll(min(int(left * 1000) + 1, 1000)))
            if self._sock in ready:
                parts = self._sock.recv_multipart()
                kind = parts[0]
                head = P.header_of(parts)
                frames = []
                if kind == P.FRAMES:
                    times, lengths, blob = P.unpack_frames(parts)
                    frames = list(zip(P.split_frames(lengths, blob), times.tolist()))
                elif kind == P.END:
                    self.ended = True
                    self.end_reason = head.get("reason", "")
                return kind, head, frames
            if self._monitor in ready:
                self._monitor.recv_multipart()
                if not self._sock.poll(100, zmq.POLLIN):
                    self.ended = True
                    self.end_reason = "the fabric closed the connection"
                    raise EndpointError(f"the fabric at {self.url} went away {what} (its run "
                                        f"ended or failed)")

    def close(self) -> None:
        """Detach: frames not yet sent go with the goodbye; the fabric then runs on without
        this program (frames for it are counted as undelivered)."""
        if self._closed:
            return
        self._closed = True
        linger = 0
        if not self.ended and hasattr(self, "info"):
            try:
                self._sock.send_multipart(P.message(P.BYE, {"round": self._round},
                                                    self._out_times, self._out_frames),
                                          zmq.NOBLOCK)
                linger = 1000
            except zmq.ZMQError:
                pass
        self._sock.disable_monitor()
        self._monitor.close(0)
        self._sock.close(linger)
        self._ctx.term()

    def __enter__(self) -> "Endpoint":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
