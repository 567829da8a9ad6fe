"""The messages between a fabric and an attached program, shared by both sides.

Every message is a ZeroMQ multipart ``[kind, JSON header]``, plus three binary parts when it
carries frames: int64 times (little-endian), int32 lengths, and the frames' bytes back to back.
Nothing is pickled, and every size is checked against the bytes that came with it before any
frame is read (``unpack_frames`` raises ``ProtocolError`` with a short reason).

Program -> fabric: ``hello``; ``send`` (frames with the virtual time each is handed to the
host's port; lockstep: the answer to one round); ``bye`` (detach, with any last frames).
Fabric -> program: ``welcome`` (the host's addresses and link); ``frames`` (frames that reached
the host's port, with their arrival times; lockstep: one round, to be answered with ``send``);
``end`` (the run is over, or failed); ``reject``.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..errors import SpinError

VERSION = 1
HELLO = b"hello"
WELCOME = b"welcome"
FRAMES = b"frames"
SEND = b"send"
BYE = b"bye"
END = b"end"
REJECT = b"reject"

MAX_FRAME_BYTES = 1 << 16        # no engine slot is larger (spin.parallel.batch.MAX_SLOT_BYTES)
MAX_FRAMES_PER_MESSAGE = 1 << 16
MAX_HEADER_BYTES = 1 << 14
# The largest message part either side accepts (64 MiB: a thousand full 64 KiB frames, or 65,536
# of 1 KiB). The fabric's socket drops a peer that sends more (ZMQ_MAXMSGSIZE), so a message
# is refused before it is received, not after; the client refuses to build one.
MAX_MESSAGE_BYTES = 1 << 26


class ProtocolError(SpinError):
    """A message that does not follow the protocol; ``reason`` names the check it failed."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def message(kind: bytes, header: dict[str, Any], times=None, frames=None) -> list:
    """``[kind, header]``, plus the frames' parts when ``times`` is given (``frames``: a list of
    bytes, or a ready ``(lengths, blob)`` pair)."""
    parts: list = [kind, json.dumps(header, separators=(",", ":")).encode()]
    if times is not None:
        if isinstance(frames, tuple):
            lengths, blob = frames
        else:
            lengths = np.fromiter((len(f) for f in frames), np.int32, len(frames))
            blob = b"".join(frames)
        parts += [np.ascontiguousarray(times, "<i8").tobytes(),
                  np.ascontiguousarray(lengths, "<i4").tobytes(), blob]
    return parts


def header_of(parts: list) -> dict[str, Any]:
    """The JSON header of a message (a dict), or ProtocolError."""
    if len(parts) < 2:
        raise ProtocolError("short_message", f"{len(parts)} part(s); expected [kind, header, ...]")
    raw = bytes(parts[1])
    if len(raw) > MAX_HEADER_BYTES:
        raise ProtocolError("bad_header", f"{len(raw)} B header")
    try:
        head = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError("bad_header", f"not JSON: {exc}") from None
    if not isinstance(head, dict):
        raise ProtocolError("bad_header", f"a JSON {type(head).__name__}, expected an object")
    return head


def unpack_frames(parts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times int64[n], lengths int32[n], blob uint8) of a frames-carrying message, checked:
    n within MAX_FRAMES_PER_MESSAGE, lengths within 0..MAX_FRAME_BYTES, adding up to the blob."""
    if len(parts) == 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8)
    if len(parts) != 5:
        raise ProtocolError("bad_parts", f"{len(parts)} parts; frames travel as 5")
    tb, lb, blob = (memoryview(p).cast("B") for p in parts[2:])
    if tb.nbytes % 8 or lb.nbytes % 4 or tb.nbytes // 8 != lb.nbytes // 4:
        raise ProtocolError("bad_size", f"{tb.nbytes} B of times for {lb.nbytes} B of lengths")
    n = lb.nbytes // 4
    if n > MAX_FRAMES_PER_MESSAGE:
        raise ProtocolError("too_many_frames", f"{n} frames in one message; at most "
                                               f"{MAX_FRAMES_PER_MESSAGE}")
    times = np.frombuffer(tb, "<i8").astype(np.int64)
    lengths = np.frombuffer(lb, "<i4").astype(np.int32)
    if n and (int(lengths.min()) < 0 or int(lengths.max()) > MAX_FRAME_BYTES):
        raise ProtocolError("bad_length", f"frame lengths outside 0..{MAX_FRAME_BYTES}")
    if blob.nbytes > MAX_MESSAGE_BYTES:
        raise ProtocolError("too_large", f"{blob.nbytes} B of frames; at most {MAX_MESSAGE_BYTES}")
    if int(lengths.sum(dtype=np.int64)) != blob.nbytes:
        raise ProtocolError("bad_size", f"lengths add up to {int(lengths.sum())} B, "
                                         f"{blob.nbytes} B of frames came")
    return times, lengths, np.frombuffer(blob, np.uint8)


def split_frames(lengths: np.ndarray, blob) -> list[bytes]:
    """The frames of a checked message as bytes objects (the program side)."""
    data = bytes(blob)
    out, off = [], 0
    for n in lengths.tolist():
        out.append(data[off:off + n])
        off += n
    return out
