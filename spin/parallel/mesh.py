"""Peer-to-peer data sockets of one worker and the per-round exchange over them.

Each worker binds one PULL socket and connects one PUSH socket to every peer (PUSH/PULL is the
cheapest zmq pattern, and one message per peer per round keeps the per-message cost bounded).
Every blocking call has a timeout, every socket has LINGER=0 and explicit HWMs, and connecting
sockets use IMMEDIATE=1 so nothing is silently queued for a dead peer. Messages carry the run epoch
and round: a message from another run (a dead run's leftovers replayed to a reused port) is dropped
and counted, never consumed. A peer may be at most one round ahead; its early message is kept.

Nothing received is trusted: a message that is not a batch of this run from a peer in an
acceptable round is dropped and counted by reason in ``TransportStats.rejected`` (a stray local
process cannot end a run by writing to its port). A message of this run whose body does not add
up still counts as that peer's message for the round (its bound keeps the rounds going) but its
frames are dropped, counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import zmq

from spin.errors import TransportError
from spin.parallel.auth import KeyPair, make_client, make_server
from spin.parallel.batch import (
    BatchHeader,
    BatchRejected,
    FrameBatch,
    check_body,
    decode_batch,
    decode_header,
    encode_empty,
)
from spin.parallel.sync import Inbox


_PING = b"SPNPING!"


@dataclass(frozen=True)
class MeshConfig:
    hwm_msgs: int = 1000  # a peer is never more than 2 messages ahead; this only bounds buffering
    send_timeout_s: float = 30.0  # covers connection set-up (IMMEDIATE=1 waits for the handshake)
    round_timeout_s: float = 3600.0  # last resort; dead peers are normally reported by the coordinator
    poll_slice_s: float = 0.1  # how often a waiting worker checks for an abort


@dataclass
class TransportStats:
    """Counters of one worker's data traffic (summed over workers by the coordinator)."""

    messages_sent: int = 0
    frames_sent: int = 0
    bytes_sent: int = 0
    messages_received: int = 0
    frames_received: int = 0
    bytes_received: int = 0
    foreign_dropped: int = 0  # messages of another epoch, dropped
    rejected: dict[str, int] = field(default_factory=dict)  # messages or batches refused, by reason
    rejected_frames: int = 0  # frames inside refused batches

    def reject(self, reason: str, frames: int = 0) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.rejected_frames += frames

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["rejected"] = dict(self.rejected)
        return d


def tune_socket(sock: zmq.Socket, hwm_msgs: int, connecting: bool) -> None:
    """The failure recipe: LINGER=0, explicit HWMs, IMMEDIATE on connecting sockets."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, hwm_msgs)
    sock.setsockopt(zmq.RCVHWM, hwm_msgs)
    if connecting:
        sock.setsockopt(zmq.IMMEDIATE, 1)


@dataclass
class _Pending:
    by_round: dict[int, dict[int, tuple[BatchHeader, FrameBatch | None]]] = field(default_factory=dict)


class Mesh:
    """Data plane of one worker: bind first (endpoint goes to the coordinator), then connect."""

    def __init__(
        self,
        ctx: zmq.Context,
        keys: KeyPair | None,
        config: MeshConfig = MeshConfig(),
        interrupt: Callable[[], None] | None = None,
    ) -> None:
        self._ctx = ctx
        self._keys = keys
        self._cfg = config
        self._interrupt = interrupt  # raises to abandon a wait (abort from the coordinator)
        self._pull: zmq.Socket | None = None
        self._push: dict[int, zmq.Socket] = {}
        self._endpoints: list[str] = []
        self._pending = _Pending()
        self.stats = TransportStats()
        self.worker_id = -1
        self.n_workers = 0
        self.epoch = 0
        self.endpoint = ""

    def bind(self, host: str) -> str:
        pull = self._ctx.socket(zmq.PULL)
        tune_socket(pull, self._cfg.hwm_msgs, connecting=False)
        make_server(pull, self._keys)
        try:
            pull.bind(f"tcp://{host}:0" if ":" not in host else f"tcp://[{host}]:0")
        except zmq.ZMQError as exc:
            pull.close(0)
            raise TransportError(f"cannot bind a data socket on {host!r}: {exc}") from exc
        pull.setsockopt(zmq.RCVTIMEO, max(1, int(self._cfg.poll_slice_s * 1000)))
        self._pull = pull
        self.endpoint = pull.getsockopt_string(zmq.LAST_ENDPOINT)
        return self.endpoint

    def set_interrupt(self, interrupt: Callable[[], None] | None) -> None:
        """A check run between wait slices; it raises to abandon the run (e.g. on abort)."""
        self._interrupt = interrupt

    def connect(self, worker_id: int, endpoints: list[str], epoch: int) -> None:
        self.worker_id, self.n_workers, self.epoch = worker_id, len(endpoints), epoch
        self._endpoints = list(endpoints)
        for peer, ep in enumerate(endpoints):
            if peer == worker_id:
                continue
            push = self._ctx.socket(zmq.PUSH)
            tune_socket(push, self._cfg.hwm_msgs, connecting=True)
            make_client(push, self._keys)
            push.connect(ep)
            self._push[peer] = push

    def exchange(
        self, round_no: int, outgoing: dict[int, FrameBatch], bound_ps: int, lookahead_ps: int
    ) -> Inbox:
        for peer, sock in self._push.items():
            batch = outgoing.get(peer)
            if batch is not None and batch.n:
                parts = batch.encode(self.epoch, round_no, self.worker_id, bound_ps, lookahead_ps)
                n_frames = batch.n
            else:
                parts = encode_empty(self.epoch, round_no, self.worker_id, bound_ps, lookahead_ps)
                n_frames = 0
            nbytes = sum(memoryview(p).nbytes for p in parts)
            self._send(sock, parts, peer, round_no)
            self.stats.messages_sent += 1
            self.stats.frames_sent += n_frames
            self.stats.bytes_sent += nbytes
        return self.inbox(self._collect(round_no), bound_ps, lookahead_ps)

    def inbox(self, got: dict[int, tuple[BatchHeader, FrameBatch | None]], bound_ps: int,
              lookahead_ps: int) -> Inbox:
        """One round's messages (by sender, as filed by ``admit``) plus our own bound, in sender order."""
        bounds = [0] * self.n_workers
        looks = [0] * self.n_workers
        bounds[self.worker_id], looks[self.worker_id] = bound_ps, lookahead_ps
        batches, senders = [], []
        for sender in sorted(got):
            header, batch = got[sender]
            bounds[sender], looks[sender] = header.bound_ps, header.lookahead_ps
            if batch is not None:
                batches.append(batch)
                senders.append(sender)
        return Inbox(batches=batches, bounds_ps=bounds, lookaheads_ps=looks, senders=senders)

    def round_trip(self, n: int) -> tuple[float, float]:
        """Bare zmq round trips between workers 0 and 1 over the data sockets (the floor a sync
        round is measured against): worker 0 returns the mean wall and CPU (this process, all
        threads) seconds per trip, worker 1 echoes, others return zeros. Call before round 0
        (early round-0 messages are filed as usual) or after the last round."""
        if self.worker_id not in (0, 1) or self.n_workers < 2 or n < 1:
            return 0.0, 0.0
        peer = 1 - self.worker_id
        sock = self._push[peer]
        started = cpu = 0.0
        for i in range(n + 1):  # the first trip sets up the connections and is not timed
            if i == 1:
                started, cpu = time.perf_counter(), time.process_time()
            if self.worker_id == 0:
                self._send(sock, [_PING], peer, 0)
            self._wait_ping()
            if self.worker_id == 1:
                self._send(sock, [_PING], peer, 0)
        if self.worker_id != 0:
            return 0.0, 0.0
        return (time.perf_counter() - started) / n, (time.process_time() - cpu) / n

    def _wait_ping(self) -> None:
        assert self._pull is not None
        deadline = time.monotonic() + self._cfg.send_timeout_s
        while time.monotonic() < deadline:
            try:
                parts = self._pull.recv_multipart(copy=False)
            except zmq.Again:
                if self._interrupt is not None:
                    self._interrupt()
                continue
            if len(parts) == 1 and parts[0].bytes == _PING:
                return
            self.admit(parts, 0)
        raise TransportError(f"worker {self.worker_id}: no round-trip reply within {self._cfg.send_timeout_s} s")

    def _send(self, sock: zmq.Socket, parts: list, peer: int, round_no: int) -> None:
        """Send without blocking for long: a dead peer (IMMEDIATE=1) must not hide an abort."""
        deadline = time.monotonic() + self._cfg.send_timeout_s
        slice_ms = max(1, int(self._cfg.poll_slice_s * 1000))
        while True:
            try:
                if len(parts) == 1:
                    sock.send(parts[0], zmq.NOBLOCK)
                else:
                    sock.send_multipart(parts, zmq.NOBLOCK, copy=False)
                return
            except zmq.Again:
                pass
            if sock.poll(slice_ms, zmq.POLLOUT):
                continue
            if self._interrupt is not None:
                self._interrupt()
            if time.monotonic() > deadline:
                raise TransportError(
                    f"worker {self.worker_id}: could not send round {round_no} to worker {peer} at "
                    f"{self._endpoints[peer]} within {self._cfg.send_timeout_s} s (peer dead, stalled, "
                    f"or refusing our CurveZMQ key)"
                )

    def _collect(self, round_no: int) -> dict[int, tuple[BatchHeader, FrameBatch | None]]:
        need = self.n_workers - 1
        box = self._pending.by_round.setdefault(round_no, {})
        deadline = time.monotonic() + self._cfg.round_timeout_s
        while len(box) < need:
            # A blocking recv with RCVTIMEO (one poll slice) is ~2x cheaper per round than a Poller.
            if self._receive_one(round_no):
                continue
            if self._interrupt is not None:
                self._interrupt()
            if time.monotonic() > deadline:
                missing = [p for p in self._push if p not in box]
                raise TransportError(
                    f"worker {self.worker_id}: no round {round_no} message from workers {missing} "
                    f"({', '.join(self._endpoints[p] for p in missing)}) within {self._cfg.round_timeout_s} s"
                )
        return self._pending.by_round.pop(round_no)

    def _receive_one(self, round_no: int) -> bool:
        """Take one message, waiting at most one poll slice; False if none came."""
        assert self._pull is not None
        try:
            parts = self._pull.recv_multipart(copy=False)
        except zmq.Again:
            return False
        self.admit(parts, round_no)
        return True

    def filed(self, round_no: int) -> dict[int, tuple[BatchHeader, FrameBatch | None]]:
        """Take the messages filed for a round so far (what ``exchange`` waits for)."""
        return self._pending.by_round.pop(round_no, {})

    def admit(self, parts: list, round_no: int) -> None:
        """File one received message under its sender and round, or drop it counted by reason."""
        stats = self.stats
        bufs = [p.buffer if isinstance(p, zmq.Frame) else memoryview(p) for p in parts]
        try:
            header = decode_header(bufs[0])
        except BatchRejected as exc:
            stats.reject(exc.reason)
            return
        if header.epoch != self.epoch:
            stats.foreign_dropped += 1
            stats.reject("foreign_epoch")
            return
        sender, rnd = header.sender, header.round_no
        if not 0 <= sender < self.n_workers or sender == self.worker_id:
            stats.reject("bad_sender")
            return
        if not round_no <= rnd <= round_no + 1:
            stats.reject("bad_round")
            return
        box = self._pending.by_round.setdefault(rnd, {})
        if sender in box:
            stats.reject("duplicate")
            return
        batch = None
        try:
            check_body(header, [b.nbytes for b in bufs])
            if header.count:
                batch = decode_batch(header, bufs)
        except BatchRejected as exc:  # this peer's message for the round, minus its frames
            stats.reject(exc.reason, header.count)
        box[sender] = (header, batch)
        stats.messages_received += 1
        stats.bytes_received += sum(b.nbytes for b in bufs)
        if batch is not None:
            stats.frames_received += batch.n

    def close(self) -> None:
        for sock in self._push.values():
            sock.close(0)
        self._push.clear()
        if self._pull is not None:
            self._pull.close(0)
            self._pull = None
