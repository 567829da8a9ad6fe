"""FrameBatch: the frames one worker sends another in one sync round, and their wire encoding.

Frames cross workers as real bytes in fixed-size slots (``frames[i, :length[i]]``), so the engine
can copy them straight into its slot pool. A batch is ONE zmq message: a fixed header, the
per-frame metadata arrays back to back, then the slot buffer. Each zmq part costs about 7 µs of
Python at each end, more than copying a small batch, so a batch under ``INLINE_BYTES`` (a bound
only, the common case, or a few frames) is a single part, copied once on each side; a larger one
is two parts, header+metadata and the slot buffer sent and received without a copy. Decoded
metadata is always a private writable copy; decoded slots are a writable copy for single-part
messages and a read-only view of the received buffer otherwise (copy what you keep).

Decoding trusts nothing: every size in a header is checked against the bytes that came with it
before any view is made, and a refusal is a ``BatchRejected`` carrying a short reason, which the
receiver counts instead of failing the run.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from spin.errors import TransportError

MAX_SLOT_BYTES = 1 << 16  # no engine slot is larger (jumbo frames are 9 KiB)
INLINE_BYTES = 1 << 16  # below this a batch travels as one part (pyzmq copies below it anyway)

MAGIC = b"SPNB"
VERSION = 2
# magic, version, slot_bytes, epoch, round, sender, count, bound_ps, lookahead_ps, padding to 8 B
_HEADER = struct.Struct("<4sHIQQIIqq6x")
HEADER_BYTES = _HEADER.size
# Per-frame metadata, in wire order: (name, dtype). 8-byte fields first keeps every view aligned.
_META_FIELDS: tuple[tuple[str, np.dtype], ...] = (
    ("arrival_ps", np.dtype("<i8")),
    ("order_key", np.dtype("<i8")),
    ("dst_device", np.dtype("<i4")),
    ("dst_port", np.dtype("<i4")),
    ("length", np.dtype("<i4")),
)
META_BYTES_PER_FRAME = sum(dt.itemsize for _, dt in _META_FIELDS)


class BatchRejected(TransportError):
    """A received message that is not an acceptable batch; ``reason`` names the check it failed."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class BatchHeader:
    """What every data message says besides its frames; epoch and round reject stale traffic."""

    epoch: int
    round_no: int
    sender: int
    count: int
    bound_ps: int  # sender's lower bound on any time it will send at (or process) next
    lookahead_ps: int  # sender's lookahead (only meaningful in round 0)
    slot_bytes: int


@dataclass(frozen=True)
class FrameBatch:
    """Frames for one destination worker. Arrays share length n; frame i is ``frames[i, :length[i]]``.

    Decoded batches are views of one private copy of the received message.
    """

    arrival_ps: np.ndarray  # int64[n], virtual arrival time at the destination port
    dst_device: np.ndarray  # int32[n]
    dst_port: np.ndarray  # int32[n]
    order_key: np.ndarray  # int64[n], deterministic tie-break chosen by the engine
    length: np.ndarray  # int32[n], bytes used in each slot
    frames: np.ndarray  # uint8[n, slot_bytes]

    def __post_init__(self) -> None:
        n = len(self.arrival_ps)
        if self.frames.ndim != 2 or self.frames.shape[0] != n:
            raise TransportError(f"frames must be uint8[n={n}, slot_bytes], got {self.frames.shape}")
        for name, _ in _META_FIELDS:
            if len(getattr(self, name)) != n:
                raise TransportError(f"FrameBatch.{name} has {len(getattr(self, name))} entries, expected {n}")

    @classmethod
    def trusted(cls, arrival_ps, dst_device, dst_port, order_key, length, frames) -> "FrameBatch":
        """Build without the shape checks, for arrays a program made itself (the per-round path)."""
        b = object.__new__(cls)
        for name, value in (("arrival_ps", arrival_ps), ("dst_device", dst_device), ("dst_port", dst_port),
                            ("order_key", order_key), ("length", length), ("frames", frames)):
            object.__setattr__(b, name, value)
        return b

    @property
    def n(self) -> int:
        return len(self.arrival_ps)

    def __len__(self) -> int:
        return len(self.arrival_ps)

    @property
    def slot_bytes(self) -> int:
        return int(self.frames.shape[1])

    def min_arrival_ps(self, default: int) -> int:
        return int(self.arrival_ps.min()) if self.n else default

    @classmethod
    def empty(cls, slot_bytes: int) -> "FrameBatch":
        return cls(
            arrival_ps=np.empty(0, np.int64),
            dst_device=np.empty(0, np.int32),
            dst_port=np.empty(0, np.int32),
            order_key=np.empty(0, np.int64),
            length=np.empty(0, np.int32),
            frames=np.empty((0, slot_bytes), np.uint8),
        )

    @classmethod
    def concat(cls, batches: Sequence["FrameBatch"], slot_bytes: int | None = None) -> "FrameBatch":
        """Concatenate in the given order; a single non-empty batch is returned as is (no copy)."""
        if slot_bytes is None:
            if not batches:
                raise TransportError("FrameBatch.concat of no batches needs slot_bytes")
            slot_bytes = batches[0].slot_bytes
        full = [b for b in batches if b.n]
        for b in full:
            if b.slot_bytes != slot_bytes:
                raise TransportError(f"cannot concat batches of slot_bytes {b.slot_bytes} and {slot_bytes}")
        if not full:
            return cls.empty(slot_bytes)
        if len(full) == 1:
            return full[0]
        return cls(
            arrival_ps=np.concatenate([b.arrival_ps for b in full]),
            dst_device=np.concatenate([b.dst_device for b in full]),
            dst_port=np.concatenate([b.dst_port for b in full]),
            order_key=np.concatenate([b.order_key for b in full]),
            length=np.concatenate([b.length for b in full]),
            frames=np.concatenate([b.frames for b in full]),
        )

    def encode(self, epoch: int, round_no: int, sender: int, bound_ps: int, lookahead_ps: int) -> list:
        """One part (header, metadata, slots) below INLINE_BYTES; else the slots as a second,
        zero-copy part."""
        head = _HEADER.pack(
            MAGIC, VERSION, self.slot_bytes, epoch, round_no, sender, self.n, bound_ps, lookahead_ps
        )
        if not self.n:
            return [head]
        meta = (head, self.arrival_ps.astype("<i8", copy=False).tobytes(),
                self.order_key.astype("<i8", copy=False).tobytes(),
                self.dst_device.astype("<i4", copy=False).tobytes(),
                self.dst_port.astype("<i4", copy=False).tobytes(),
                self.length.astype("<i4", copy=False).tobytes())
        frames = np.ascontiguousarray(self.frames, dtype=np.uint8)
        if frames.nbytes < INLINE_BYTES:
            return [b"".join((*meta, frames.tobytes()))]
        return [b"".join(meta), frames]


def encode_empty(epoch: int, round_no: int, sender: int, bound_ps: int, lookahead_ps: int) -> list:
    """A frameless message (the common case: a bound only) is one part: the header alone."""
    return [_HEADER.pack(MAGIC, VERSION, 0, epoch, round_no, sender, 0, bound_ps, lookahead_ps)]


def decode_header(part0: bytes | memoryview) -> BatchHeader:
    """Parse the fixed header; BatchRejected if it is not one of ours (magic, version, sizes)."""
    if len(part0) < HEADER_BYTES:
        raise BatchRejected("short_header", f"{len(part0)} B, a batch header has {HEADER_BYTES}")
    magic, version, slot, epoch, rnd, sender, count, bound, look = _HEADER.unpack_from(part0)
    if magic != MAGIC or version != VERSION:
        raise BatchRejected("bad_magic", f"magic {magic!r} version {version}; want {MAGIC!r} v{VERSION}")
    return BatchHeader(epoch, rnd, sender, count, bound, look, slot)


def check_body(header: BatchHeader, sizes: list[int]) -> None:
    """The sizes a header claims against the parts that arrived (their byte sizes, in order);
    BatchRejected naming the first mismatch."""
    n = header.count
    if len(sizes) > 2 or (len(sizes) == 2 and n == 0):
        raise BatchRejected("bad_parts", f"{len(sizes)}-part message for {n} frames")
    if n and not 0 < header.slot_bytes <= MAX_SLOT_BYTES:
        raise BatchRejected("bad_slot_size", f"slot_bytes {header.slot_bytes} outside 1..{MAX_SLOT_BYTES}")
    meta = HEADER_BYTES + n * META_BYTES_PER_FRAME
    slots = n * header.slot_bytes
    if len(sizes) == 1:
        if sizes[0] != meta + slots:
            raise BatchRejected("bad_size", f"header says {n} x {header.slot_bytes} B slots; "
                                            f"{sizes[0]} B is not {meta + slots} B")
        return
    if sizes[0] != meta:
        raise BatchRejected("bad_count", f"header says {n} frames but the metadata has {sizes[0] - HEADER_BYTES} B")
    if sizes[1] != slots:
        raise BatchRejected("bad_frames_size", f"{n} x {header.slot_bytes} B slots but {sizes[1]} B of frames")


def decode_batch(header: BatchHeader, parts: list) -> FrameBatch:
    """Views over the parts (buffers) of a message that passed check_body: the metadata, and the
    slots of a single-part message, in one private writable copy; a second part's slots as is."""
    n, slot = header.count, header.slot_bytes
    if n == 0:
        return FrameBatch.empty(slot)
    buf = np.frombuffer(parts[0], np.uint8).copy()
    fields = {}
    off = HEADER_BYTES
    for name, dt in _META_FIELDS:
        fields[name] = buf[off:off + n * dt.itemsize].view(dt)
        off += n * dt.itemsize
    frames = buf[off:] if len(parts) == 1 else np.frombuffer(parts[1], np.uint8)
    return FrameBatch.trusted(frames=frames.reshape(n, slot), **fields)


def check_frames(batch: FrameBatch, not_before_ps: int) -> str | None:
    """What every receiver can check without knowing the program: each length within the slot
    and each arrival at or after the end of the round just run (no frame from the past)."""
    if not batch.n:
        return None
    if int(batch.length.min()) < 1 or int(batch.length.max()) > batch.slot_bytes:
        return "bad_length"
    if int(batch.arrival_ps.min()) < not_before_ps:
        return "arrival_in_past"
    return None
