"""The control protocol between the coordinator and its workers, and its validation.

Every control message is ``[kind, payload]`` (the coordinator's ROUTER adds the sender identity);
payloads are JSON objects, except the run description in ``setup`` (``spin.parallel.codec``).
Nothing received on a control socket is ever unpickled. The coordinator checks each message with
``parse`` before acting on it: whatever does not fit — wrong part count, unknown kind, not a JSON
object, a field of the wrong type — is dropped and counted by reason in ``Rejections``, so a
stray or hostile local process can neither crash nor stall a run.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from spin.errors import SpinError, TransportError

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

MAX_CONTROL_BYTES = 256 << 20  # a result with captured frames can be large; beyond this is junk


class Aborted(SpinError):
    """Raised inside a worker when the coordinator aborts the run (another worker failed)."""


@dataclass(frozen=True)
class Setup:
    """Everything a worker needs besides the spec (which travels as data in its own part)."""

    worker_id: int
    epoch: int
    factory: str
    endpoints: tuple[str, ...]  # data endpoint of every worker, by id ("0.0.0.0" = coordinator's host)
    until_ps: int | None
    heartbeat_interval_s: float
    heartbeat_timeout_s: float
    abort_grace_s: float
    round_trips: int = 0  # bare zmq round trips timed between workers 0 and 1, before and after the rounds

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__).encode()

    @classmethod
    def from_json(cls, payload: bytes) -> "Setup":
        """Strict: every field present with its type; TransportError otherwise."""
        try:
            d = json.loads(payload)
            if not isinstance(d, dict) or set(d) != set(cls.__dataclass_fields__):
                raise ValueError(f"fields {sorted(d) if isinstance(d, dict) else type(d).__name__}")
            setup = cls(
                worker_id=_int(d["worker_id"]), epoch=_int(d["epoch"]), factory=_str(d["factory"]),
                endpoints=tuple(_str(e) for e in d["endpoints"]),
                until_ps=None if d["until_ps"] is None else _int(d["until_ps"]),
                heartbeat_interval_s=_pos(d["heartbeat_interval_s"]),
                heartbeat_timeout_s=_pos(d["heartbeat_timeout_s"]),
                abort_grace_s=_pos(d["abort_grace_s"]),
                round_trips=_int(d["round_trips"]),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise TransportError(f"malformed setup from the coordinator: {exc}") from None
        if not 0 <= setup.worker_id < len(setup.endpoints):
            raise TransportError(f"setup names worker {setup.worker_id} of {len(setup.endpoints)}")
        return setup


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer, got {v!r:.40}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r:.40}")
    return v


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TypeError(f"expected a finite number, got {v!r:.40}")
    return float(v)


def _pos(v: Any) -> float:
    x = _num(v)
    if x <= 0:
        raise ValueError(f"expected a positive number, got {x}")
    return x


class Rejections(Counter):
    """Control messages dropped, by reason (reported in ``RunOutcome.control_rejected``)."""


# kind -> {field: checker}; extra fields are allowed (newer workers), missing or mistyped are not
_SCHEMAS: dict[bytes, dict[str, Any]] = {
    MSG_HELLO: {"pid": _int, "host": _str, "data_endpoint": _str, "hb_identity": _str, "slot": _int,
                "token": _str},
    MSG_READY: {"describe": _str},
    MSG_RESULT: {"result": dict, "rounds": _int, "end_ps": _int, "loop_wall_s": _num, "events": _int,
                 "stats": dict},
    MSG_ERROR: {"kind": _str, "message": _str, "traceback": _str, "describe": _str},
    MSG_BEAT: {},
}


def parse(parts: list[bytes], rejected: Rejections) -> tuple[bytes, bytes, dict] | None:
    """``(identity, kind, body)`` of a well-formed worker message, or None (counted in rejected)."""
    if len(parts) != 3:
        rejected["parts"] += 1
        return None
    ident, kind, payload = parts
    schema = _SCHEMAS.get(kind)
    if schema is None:
        rejected["unknown_kind"] += 1
        return None
    if len(payload) > MAX_CONTROL_BYTES:
        rejected["too_large"] += 1
        return None
    try:
        body = json.loads(payload) if payload else {}
    except (ValueError, RecursionError):
        rejected["not_json"] += 1
        return None
    if not isinstance(body, dict):
        rejected["not_an_object"] += 1
        return None
    if kind == MSG_BEAT:  # t_ps/rounds/events are optional, but typed when present
        schema = {k: _int for k in ("t_ps", "rounds", "events") if k in body}
    for name, check in schema.items():
        if name not in body:
            rejected["missing_field"] += 1
            return None
        value = body[name]
        ok = isinstance(value, check) if isinstance(check, type) else _passes(check, value)
        if not ok:
            rejected["bad_field"] += 1
            return None
    return ident, kind, body


def _passes(check: Any, value: Any) -> bool:
    try:
        check(value)
    except (TypeError, ValueError):
        return False
    return True


def check_stats(stats: dict) -> dict[str, Any]:
    """A worker's transport counters: str keys, int values or {str: int} maps."""
    out: dict[str, Any] = {}
    for k, v in stats.items():
        if isinstance(v, dict):
            out[str(k)] = {str(a): _int(b) for a, b in v.items()}
        else:
            out[str(k)] = _int(v)
    return out
