"""The fabric's side of one attached program: its socket, its share of every round, pacing.

The bridge lives in the worker that owns the device at the other end of the host's link (so
the host's frames never cross workers) and acts as one more participant of the conservative
synchronisation:

* lockstep: frames reaching the host are held until their round (arrival < round end), then
  sent to the program sorted by (arrival, key), whatever the round boundaries, so the program
  sees the same sequence for any worker count. The program answers each round with frames
  stamped no earlier than the frames it answers; they are timed through the host's port and
  reach the fabric at least a link latency later, i.e. after the round. Its bound is the
  earliest held frame: an idle program never holds the fabric back.
* realtime: before each round the bridge waits until the wall clock reaches the round's end
  (``realtime_factor`` wall seconds per virtual second), stamping whatever the program sent
  meanwhile with the current paced virtual time; frames reaching the host go out as their
  time comes. Its bound is the paced "now". A round finishing later than ``max_lag_ms`` after
  its wall-clock time stops the run (or warns).

Everything from the program is checked (``spin.runtime.endpoint_link.admit_frames``, protocol sizes);
refusals are counted by reason, never fatal. Messages from anyone but the attached program are
counted and ignored.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
import zmq

from ..engine import state as S
from ..engine.ports import WIRE_OVERHEAD, arrival_delay_ps, inject_frames
from ..errors import ConfigError, EndpointError
from ..parallel.auth import load_keys, make_server, start_authenticator
from ..parallel.program import INF_PS
from .simulation import CapturedFrames
from ..endpoint import protocol as P
from .endpoint_link import PORT_STATE_WORDS, P_BUSY_PS, P_BYTES, P_FRAMES, REASONS, address_bytes, \
    admit_frames, pack_slots
from ..endpoint.spec import AttachedEndpoint

_POLL_MS = 50


UNREAD_GRACE_MS = 200   # how long the end waits for messages still in flight

class EndpointBridge:
    """Binds the endpoint's address at construction; ``attach`` once the engine exists."""

    def __init__(self, att: AttachedEndpoint) -> None:
        self.att = att
        self.spec = spec = att.spec
        self.where = f"endpoint {spec.host} at {spec.url}"
        keys = load_keys(spec.key_file) if spec.key_file else None
        self._ctx = zmq.Context()
        self._auth = start_authenticator(self._ctx, keys) if keys is not None else None
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SNDHWM, 10000)
        self._sock.setsockopt(zmq.RCVHWM, 10000)
        self._sock.setsockopt(zmq.MAXMSGSIZE, P.MAX_MESSAGE_BYTES)  # a larger part: peer dropped
        make_server(self._sock, keys)
        try:
            self._sock.bind(spec.url)
        except zmq.ZMQError as exc:
            self.close()
            raise ConfigError(f"{self.where}: cannot listen there: {exc} (another run or "
                              f"program uses it?)") from None
        self._client: bytes | None = None
        self.detached = False
        self.round = 0
        self.port = np.zeros(PORT_STATE_WORDS, np.int64)
        self.dropped = np.zeros(len(REASONS), np.int64)
        self.undelivered = 0            # frames for the program after it detached
        self.unread = 0                 # frames the program sent that no round asked for
        self.frames_to = self.bytes_to = 0
        self.last_arrival_ps = 0        # latest frame for the program (delivered or not)
        self.rejected: dict[str, int] = {}
        self._pending: list[tuple[np.ndarray, ...]] = []   # (arrival, key, length, frames)
        self._captured: list[tuple[np.ndarray, ...]] = []  # (tx start, length, frames)
        self._awaiting = False
        self._first_due = 0
        self._last_end = 0
        self._wall0: float | None = None
        self._ps_to_s = spec.realtime_factor * 1e-12
        self._promised = 0
        self.max_lag_s = 0.0
        self._warned = False

    # --- attaching ----------------------------------------------------------------------
    def attach(self, sim) -> None:
        """Wait for the program's hello (and, lockstep, its first frames) on the built engine."""
        st = self._st = sim.st
        topo = sim.scenario.topology
        gp = topo.global_ports()[(self.spec.host, self.att.link)]
        self._gp = gp
        self._peer_port = np.int32(st.port[gp, S.PT_PEER])
        self._rate = np.int64(st.port[gp, S.PT_RATE_GBPS])
        self._delay = np.int64(arrival_delay_ps(st, gp))
        self._slot = int(st.pool.shape[1])
        self._mac, self._ip = address_bytes(self.att.node)
        # load the compiled helpers now, not inside the first rounds
        self._admit(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8), 0)
        pack_slots(np.zeros((0, self._slot), np.uint8), np.zeros(0, np.int32),
                   np.zeros(0, np.int64), np.zeros(0, np.uint8))
        kind, _parts = self._wait((P.HELLO,), self.spec.attach_timeout_s, "to attach")
        peer = topo.device_names()[self.att.peer_device]
        self._send(P.WELCOME, {
            "version": P.VERSION, "host": self.spec.host, "node": self.att.node,
            "mac": ":".join(f"{b:02x}" for b in self._mac.tolist()),
            "ip": ".".join(str(b) for b in self._ip.tolist()), "mode": self.spec.mode,
            "peer": peer, "rate_gbps": int(self._rate), "delay_ps": int(self._delay),
            "lookahead_ps": self.att.lookahead_ps, "max_frame_bytes": self._slot,
            "realtime_factor": self.spec.realtime_factor})
        if self.spec.mode == "lockstep":
            kind, parts = self._wait((P.SEND, P.BYE), self.spec.attach_timeout_s,
                                     "to start (iterate frames() or close())")
            self._take(kind, parts, not_before=0)

    # --- per round ----------------------------------------------------------------------
    def next_bound_ps(self) -> int:
        """Earliest virtual time at which this endpoint may act: its earliest held frame, and
        in real time the paced now (it may send at any moment)."""
        held = min((int(p[0].min()) for p in self._pending), default=int(INF_PS))
        if self.spec.mode == "lockstep" or self.detached:
            return held
        if self._wall0 is None:
            self._wall0 = time.perf_counter()
        self._promised = max(self._promised, self._paced_now(), self._last_end)
        return min(held, self._promised)

    def before_window(self, t_end: int) -> None:
        if self.spec.mode == "realtime":
            self._pace(t_end)
        due = self._take_due(t_end)
        if due is None:
            return
        arrival, _key, length, frames = due
        self.last_arrival_ps = max(self.last_arrival_ps, int(arrival[-1]))
        if self.detached:
            self.undelivered += len(arrival)
            return
        order = np.arange(len(arrival), dtype=np.int64)
        blob = np.empty(int(length.sum(dtype=np.int64)), np.uint8)
        pack_slots(frames, length, order, blob)
        self.round += 1
        self.frames_to += len(arrival)
        self.bytes_to += len(blob)
        self._send(P.FRAMES, {"round": self.round, "horizon_ps": int(t_end)}, arrival,
                   (length, blob))
        if self.spec.mode == "lockstep":
            self._awaiting = True
            self._first_due = int(arrival[0])

    def after_window(self, t_end: int) -> None:
        self._last_end = t_end
        if self.spec.mode == "realtime":
            self._check_lag(t_end)
            return
        if not self._awaiting:
            return
        self._awaiting = False
        while True:
            kind, parts = self._wait((P.SEND, P.BYE), self.spec.reply_timeout_s,
                                     f"to answer the frames of round {self.round}")
            head = self._header(parts)
            if kind == P.BYE or head.get("round") == self.round:
                break
            self._reject("wrong_round")
            self._count_unread(parts)
        self._take(kind, parts, not_before=self._first_due)

    def hold(self, arrival, key, length, frames) -> None:
        """Frames the engine sent to the host's port (arrival >= the round end)."""
        if self.detached and self.spec.mode == "realtime":
            self.undelivered += len(arrival)
            return
        self._pending.append((arrival, key, length, frames))

    # --- frames from the program --------------------------------------------------------
    def _take(self, kind: bytes, parts: list, not_before: int) -> None:
        try:
            times, lengths, blob = P.unpack_frames(parts)
        except P.ProtocolError as exc:
            self._reject(exc.reason)
            times, lengths, blob = np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8)
        if self.spec.mode == "realtime":
            times = np.full(len(times), max(self._paced_now(), self._promised), np.int64)
        self._admit(times, lengths, np.array(blob), not_before)
        if kind == P.BYE:
            self.detached = True
            self._client = None

    def _admit(self, times, lengths, blob, not_before: int) -> None:
        n = len(times)
        out_time = np.empty(n, np.int64)
        out_key = np.empty(n, np.int64)
        out_len = np.empty(n, np.int32)
        out_frames = np.zeros((n, self._slot), np.uint8)
        k = admit_frames(times, lengths, blob, self._mac, self._ip, self._slot, np.int64(not_before),
                         self._rate, self._delay, np.int64(self.att.node), self.port, out_time,
                         out_key, out_len, out_frames, self.dropped)
        if k:
            inject_frames(self._st, out_time[:k], np.full(k, self._peer_port, np.int32),
                          out_key[:k], out_len[:k], out_frames[:k])
            if self._st.port[self._gp, S.PT_CAPTURE]:   # the link is captured: both directions
                n = out_len[:k].astype(np.int64)
                ser = ((n + WIRE_OVERHEAD) * 8000 + self._rate - 1) // self._rate
                self._captured.append((out_time[:k] - self._delay - ser, n, out_frames[:k]))

    def captured_frames(self) -> CapturedFrames | None:
        """The program's frames on a captured link, timed at the start of transmission (as
        the engine captures a local port's), or None."""
        if not self._captured:
            return None
        start = np.concatenate([c[0] for c in self._captured])
        return CapturedFrames(start, np.full(len(start), self._gp, np.int64),
                              np.concatenate([c[1] for c in self._captured]),
                              np.concatenate([c[2] for c in self._captured]))

    # --- real time ----------------------------------------------------------------------
    def _paced_now(self) -> int:
        if self._wall0 is None:
            return 0
        return int((time.perf_counter() - self._wall0) / self._ps_to_s)

    def _pace(self, t_end: int) -> None:
        """Wait until the wall clock reaches ``t_end``, taking the program's frames meanwhile."""
        if self._wall0 is None:
            self._wall0 = time.perf_counter()
        target = self._wall0 + t_end * self._ps_to_s
        while True:
            left = target - time.perf_counter()
            if self.detached:
                if left > 0:
                    time.sleep(left)
                return
            if self._sock.poll(min(max(math.ceil(left * 1000), 0), _POLL_MS), zmq.POLLIN):
                got = self._receive()
                if got is not None and got[0] in (P.SEND, P.BYE):
                    self._take(got[0], got[1], not_before=0)
                elif got is not None:
                    self._reject("unexpected_" + got[0].decode(errors="replace")[:20])
            elif left <= 0:
                return

    def _check_lag(self, t_end: int) -> None:
        lag = time.perf_counter() - (self._wall0 + t_end * self._ps_to_s)
        self.max_lag_s = max(self.max_lag_s, lag)
        if lag * 1000 <= self.spec.max_lag_ms or self.detached:
            return
        text = (f"{self.where}: the emulation fell {lag * 1000:.0f} ms behind the wall clock at "
                f"t={t_end} ps (max_lag_ms = {self.spec.max_lag_ms}, realtime_factor = "
                f"{self.spec.realtime_factor} wall s per virtual s); slow virtual time down with "
                f"a larger realtime_factor, or set on_lag = \"warn\"")
        if self.spec.on_lag == "error":
            raise EndpointError(text)
        if not self._warned:
            self._warned = True
            print(f"spin: warning: {text}", file=sys.stderr, flush=True)

    # --- messaging ----------------------------------------------------------------------
    def _receive(self) -> tuple[bytes, list] | None:
        """One message of the attached program (a hello attaches it); junk is counted."""
        parts = self._sock.recv_multipart()
        if len(parts) < 3:
            self._reject("short_message")
            return None
        ident, kind = parts[0], parts[1]
        if self._client is None and kind == P.HELLO and not self.detached:
            head = self._header(parts[1:])
            if head.get("version") != P.VERSION:
                self._reply(ident, P.REJECT, {"reason": f"protocol version {head.get('version')!r}"
                                                        f"; this fabric speaks {P.VERSION}"})
                self._reject("bad_version")
                return None
            want = head.get("host")
            if want not in (None, self.spec.host):
                self._reply(ident, P.REJECT, {"reason": f"this address serves host "
                                                        f"{self.spec.host}, not {want!r}"})
                self._reject("wrong_host")
                return None
            self._client = ident
            return kind, parts[1:]
        if ident != self._client:
            if kind == P.HELLO:
                self._reply(ident, P.REJECT, {"reason": f"host {self.spec.host} already has a "
                                                        f"program attached"})
            self._reject("unknown_sender")
            return None
        return kind, parts[1:]

    def _wait(self, kinds: tuple[bytes, ...], timeout_s: float, what: str) -> tuple[bytes, list]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self._sock.poll(_POLL_MS, zmq.POLLIN):
                continue
            got = self._receive()
            if got is None:
                continue
            if got[0] in kinds:
                return got
            if got[0] == P.BYE:   # detached while we wait for something else
                self._take(got[0], got[1], not_before=INF_PS)
                raise EndpointError(f"{self.where}: the program detached while the fabric "
                                    f"waited for it {what}")
            self._reject("unexpected_" + got[0].decode(errors="replace")[:20])
        raise EndpointError(f"{self.where}: no program answered within {timeout_s} s {what} "
                            f"(connect one with spin.endpoint.Endpoint({self.spec.url!r}))")

    def _header(self, parts: list) -> dict:
        try:
            return P.header_of(parts)
        except P.ProtocolError as exc:
            self._reject(exc.reason)
            return {}

    def _send(self, kind: bytes, header: dict, times=None, frames=None) -> None:
        if self._client is not None and not self._reply(self._client, kind, header, times, frames):
            raise EndpointError(f"{self.where}: the program is unreachable (could not send "
                                f"{kind.decode()})")

    def _reply(self, ident: bytes, kind: bytes, header: dict, times=None, frames=None) -> bool:
        try:
            self._sock.send_multipart([ident, *P.message(kind, header, times, frames)], zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _take_due(self, t_end: int):
        if not self._pending:
            return None
        arrival = np.concatenate([p[0] for p in self._pending])
        if int(arrival.min()) >= t_end:
            return None
        key = np.concatenate([p[1] for p in self._pending])
        length = np.concatenate([p[2] for p in self._pending])
        frames = np.concatenate([p[3] for p in self._pending])
        order = np.lexsort((key, arrival))
        arrival, key, length, frames = arrival[order], key[order], length[order], frames[order]
        cut = int(np.searchsorted(arrival, t_end))
        rest = (arrival[cut:], key[cut:], length[cut:], frames[cut:])
        self._pending = [rest] if cut < len(arrival) else []
        return arrival[:cut], key[:cut], length[:cut], frames[:cut]

    # --- the end ------------------------------------------------------------------------
    def _drain_unread(self) -> None:
        """At the end: messages the program sent that the run never asked for (lockstep frames
        sent outside a round, e.g. more than one answer before the first) are counted, their
        frames as dropped ``unread``, never silently left in the socket."""
        if self._sock is None:
            return
        # a message the program sent just before the end may still be on its way: wait for it
        # briefly once, then take what is there
        wait_ms = UNREAD_GRACE_MS
        while self._sock.poll(wait_ms, zmq.POLLIN):
            wait_ms = 0
            got = self._receive()
            if got is None:
                continue
            kind, parts = got
            self._reject(f"unread_{kind.decode(errors='replace')[:20]}")
            if kind in (P.SEND, P.BYE):
                self._count_unread(parts)

    def _count_unread(self, parts: list) -> None:
        try:
            self.unread += len(P.unpack_frames(parts)[0])
        except P.ProtocolError as exc:
            self._reject(exc.reason)

    def stats(self, topology) -> dict:
        """This endpoint's EndpointStats and the LinkStats of the host's direction of its link,
        as dicts (spin.results)."""
        self._drain_unread()
        dropped = {r: int(n) for r, n in zip(REASONS, self.dropped.tolist()) if n}
        if self.undelivered:
            dropped["undelivered"] = self.undelivered
        if self.unread:
            dropped["unread"] = self.unread
        link = topology.links[self.att.link]
        peer = link.b if link.a == self.spec.host else link.a
        return {
            "endpoint": {"host": self.spec.host, "node": self.att.node, "mode": self.spec.mode,
                         "frames_to_endpoint": self.frames_to, "bytes_to_endpoint": self.bytes_to,
                         "frames_from_endpoint": int(self.port[P_FRAMES]),
                         "bytes_from_endpoint": int(self.port[P_BYTES]), "dropped": dropped,
                         "messages_rejected": dict(self.rejected)},
            "link": {"link": self.att.link, "from_device": self.spec.host, "to_device": peer,
                     "tx_frames": int(self.port[P_FRAMES]), "tx_bytes": int(self.port[P_BYTES]),
                     "drops": 0, "max_queue_bytes": 0, "busy_ps": int(self.port[P_BUSY_PS])},
        }

    def close(self, reason: str = "the run ended", t_ps: int = 0) -> None:
        """Tell the program the run is over (if it is still attached) and close the socket."""
        if self._ctx.closed:
            return
        if self._sock is not None:
            if self._client is not None and self._reply(self._client, P.END,
                                                        {"reason": reason, "t_ps": int(t_ps)}):
                self._sock.close(1000)   # long enough to deliver the end to a live program
            else:
                self._sock.close(0)
            self._sock = None
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        self._ctx.term()
