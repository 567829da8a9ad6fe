"""Read GOAL schedules, the text format of LogGOPSim and Schedgen that ATLAHS replays:

    num_ranks 2
    rank 0 {
    l1: send 1024b to 1 tag 7
    l2: calc 500
    l2 requires l1          // l2 starts after l1 finished
    l3: recv 64b from 1 tag 8
    l3 irequires l2         // l3 starts once l2 started
    }

Labels are identifiers local to their rank; ``calc`` takes nanoseconds (LogGOPSim's unit);
``cpu N`` and ``nic N`` suffixes are read and ignored (one CPU and one NIC per rank here).
``//`` and ``/* */`` are comments. A receive from any source or with any tag (``-1``) is
refused: replay matches messages by sender and tag."""
from __future__ import annotations

import re
from pathlib import Path

from .model import (COMPUTE, MAX_COMPUTE_NS, MAX_RANKS, MAX_TRANSFER_BYTES, RECV, SEND, RankTrace,
                    StepTrace, TraceOp, count_limit, fail, validate)

_OP = re.compile(r"(?P<label>[A-Za-z]\w*)\s*:\s*(?P<body>.*)$")
OPERATIONS = ("send", "recv", "calc")
_SEND = re.compile(r"(?P<kind>send|recv)\s+(?P<size>\d+)\s*b\s+(?P<dir>to|from)\s+"
                   r"(?P<peer>-?\d+)(?:\s+tag\s+(?P<tag>-?\d+))?(?P<rest>.*)$")
_CALC = re.compile(r"calc\s+(?P<time>\d+)(?P<rest>.*)$")
_DEP = re.compile(r"(?P<a>[A-Za-z]\w*)\s+(?P<kind>requires|irequires)\s+(?P<b>[A-Za-z]\w*)$")
# Operations a schedule may hold (all ranks): reading and replaying cost ~70 us per op (a
# 100,000-op schedule: 7.4 s), so a million ops is over a minute of work; SPIN_GOAL_MAX_OPS
# raises the limit.
MAX_OPS = 1_000_000
MAX_OPS_ENV = "SPIN_GOAL_MAX_OPS"
_PLACEMENT = re.compile(r"(\s+(cpu|nic)\s+\d+)*\s*$")
_NUM_RANKS = re.compile(r"num_ranks\s+(\d+)")
_RANK_OPEN = re.compile(r"rank\s+(\d+)\s*\{")


def read_goal(path: str | Path) -> StepTrace:
    """The schedule in ``path``, validated; a TraceError names the line and label at fault.

    Ops and dependencies are nearly every line of a schedule (a million in a 1,024-rank
    step), so they are matched first and an op becomes its ``TraceOp`` once, when its rank's
    block closes and its dependencies are known."""
    path = Path(path)
    if not path.is_file():
        raise fail(str(path), None, "is a directory, not a GOAL file" if path.is_dir() else
                   "GOAL file does not exist")
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise fail(str(path), None, f"not a text file ({exc})") from None
    except OSError as exc:
        raise fail(str(path), None, f"cannot read the GOAL file: {exc.strerror or exc}") from None
    ops_limit = max_ops()
    if "/*" in text:
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text,
                      flags=re.DOTALL)
    src = str(path)
    num_ranks, rank, ops, deps, total_ops = None, None, [], {}, 0
    placed: list[bool] = []   # an op named a cpu or nic (read, not modelled: a note says so)
    ranks: dict[int, RankTrace] = {}
    labels: dict[str, int] = {}
    dep_match, op_match = _DEP.fullmatch, _OP.fullmatch
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = (raw.split("//", 1)[0] if "//" in raw else raw).strip()
        if not line:
            continue
        if rank is not None:
            if m := dep_match(line):   # resolved when the block closes: labels may follow
                pending.append((m.group("a"), m.group("b"), m.group("kind"), lineno))
                continue
            if m := op_match(line):
                label = m.group("label")
                if label in labels:
                    raise fail(f"{src}:{lineno}", label, "label defined twice")
                labels[label] = len(labels)
                ops.append(_op(m.group("body"), label, src, lineno, placed))
                total_ops += 1
                if total_ops > ops_limit:
                    raise fail(f"{src}:{lineno}", label, f"more than {ops_limit:,} operations: "
                               f"a schedule this long replays for minutes; set {MAX_OPS_ENV} "
                               f"to allow more")
                continue
            if line == "}":
                for a, b, kind, at in pending:
                    for name, other in ((a, None), (b, a)):
                        if name not in labels:
                            node = other or a
                            raise fail(f"{src}:{at}", node, (
                                f"{node} {kind} {b}, which rank {rank} does not define")
                                if other else f"dependency of {a}, which rank {rank} does not "
                                f"define")
                    deps.setdefault(labels[a], ([], []))[kind == "irequires"].append(labels[b])
                ranks[rank] = _rank(rank, src, ops, deps)
                rank = None
                continue
        where = f"{src}:{lineno}"
        if m := _NUM_RANKS.fullmatch(line):
            num_ranks = _number(m.group(1), "num_ranks", where, None, MAX_RANKS)
        elif m := _RANK_OPEN.fullmatch(line):
            if rank is not None:
                raise fail(where, None, f"rank {m.group(1)} opens inside rank {rank}")
            rank, ops, deps, labels, pending = \
                _number(m.group(1), "rank", where, None, MAX_RANKS), [], {}, {}, []
            if num_ranks is None:
                raise fail(where, None, "rank block before num_ranks")
            if not 0 <= rank < num_ranks or rank in ranks:
                raise fail(where, None, f"rank {rank}: valid ranks are 0..{num_ranks - 1}, "
                           f"each once")
        elif line.split()[0] == "num_ranks":
            raise fail(where, None, f"{line!r}: num_ranks must be an integer 1..{MAX_RANKS:,}")
        elif line == "}":
            raise fail(where, None, "'}' outside a rank block")
        elif rank is None:
            raise fail(where, None, f"{line!r} outside a rank block")
        else:
            raise fail(where, None, f"cannot read {line!r}; expected 'LABEL: send|recv|calc "
                       f"...', 'LABEL requires|irequires LABEL', 'rank N {{' or '}}'")
    if rank is not None:
        raise fail(src, None, f"rank {rank} block not closed (truncated file?)")
    if num_ranks is None:
        raise fail(src, None, "no num_ranks line")
    if len(ranks) < num_ranks:
        missing = next(r for r in range(len(ranks) + 1) if r not in ranks)
        raise fail(src, None, f"num_ranks {num_ranks} but rank {missing} has no block")
    notes = ()
    if placed:
        notes = ("GOAL 'cpu N' and 'nic N' placements are read but not modelled: each rank's "
                 "operations run on one timeline, as on one core",)
    return validate(StepTrace(path.stem, "goal", tuple(ranks[r] for r in range(num_ranks)),
                               device="cpu", notes=notes))


def _op(body: str, label: str, src: str, lineno: int, placed: list[bool]) -> dict:
    """The fields of op ``label`` (``TraceOp`` keywords but its dependencies); an op with a
    ``cpu N``/``nic N`` placement appends to ``placed``."""
    where = _Where(src, lineno)
    if m := _SEND.fullmatch(body):
        kind = m.group("kind")
        if (kind == "send") != (m.group("dir") == "to"):
            raise fail(where, label, f"{kind} takes '{'to' if kind == 'send' else 'from'}'")
        peer = _number(m.group("peer"), "peer", where, label, MAX_RANKS, signed=True)
        tag = _number(m.group("tag") or "0", "tag", where, label, 2**63 - 1, signed=True)
        if peer < 0 or tag < 0:
            raise fail(where, label, f"{kind} with peer {peer} and tag {tag}: any-source and "
                       f"any-tag receives (-1) are not replayable")
        if m.group("rest"):
            _placement(m.group("rest"), where, label)
            placed[:] = [True]
        return {"kind": SEND if kind == "send" else RECV, "name": label, "peer": peer,
                "tag": tag, "nbytes": _number(m.group("size"), "size", where, label,
                                              MAX_TRANSFER_BYTES)}
    if m := _CALC.fullmatch(body):
        if m.group("rest"):
            _placement(m.group("rest"), where, label)
            placed[:] = [True]
        time_ns = _number(m.group("time"), "calc time (ns)", where, label, int(MAX_COMPUTE_NS))
        return {"kind": COMPUTE, "name": label, "duration_ns": float(time_ns)}
    word = body.split()[0] if body.split() else body
    if word not in OPERATIONS:
        from ..suggest import did_you_mean
        raise fail(where, label, f"unknown operation {word!r}{did_you_mean(word, OPERATIONS)}; "
                   f"valid operations: {', '.join(OPERATIONS)}")
    expected = ("calc <nanoseconds, an integer 0..{:,}>".format(int(MAX_COMPUTE_NS))
                if word == "calc" else f"{word} <bytes>b {'to' if word == 'send' else 'from'} "
                f"<rank> [tag <tag>] [cpu N] [nic N]")
    raise fail(where, label, f"cannot read {body!r}; expected '{expected}'")


class _Where:
    """``file:line`` of an op, made into text only when an error names it."""

    __slots__ = ("src", "lineno")

    def __init__(self, src: str, lineno: int):
        self.src, self.lineno = src, lineno

    def __str__(self) -> str:
        return f"{self.src}:{self.lineno}"


def _number(text: str, name: str, where: str, label, high: int, signed: bool = False) -> int:
    """A decimal integer of the schedule, at most ``high`` (a 5,000-digit size is named, not
    converted)."""
    if len(text) <= 18 and (value := int(text)) <= high:
        return value
    digits = text.lstrip("-")
    if len(digits) > 19 or int(text) > high:
        shown = text if len(text) <= 24 else f"a number of {len(digits):,} digits"
        raise fail(where, label, f"{name} {shown}: at most {high:,}")
    return int(text)


def max_ops() -> int:
    """How many operations a schedule may hold: ``$SPIN_GOAL_MAX_OPS`` or MAX_OPS."""
    return count_limit(MAX_OPS_ENV, MAX_OPS, "operations")


def _placement(rest: str, where: str, label: str) -> None:
    if not _PLACEMENT.fullmatch(rest):
        raise fail(where, label, f"unexpected {rest.strip()!r}; only 'cpu N' and 'nic N' may "
                   f"follow")


def _rank(rank: int, src: str, ops: list[dict], deps: dict) -> RankTrace:
    out = []
    for node_id, fields in enumerate(ops):
        after, started = deps.get(node_id, ((), ()))
        out.append(TraceOp(node_id, deps=tuple(after), start_deps=tuple(started), **fields))
    return RankTrace(rank, f"{src} rank {rank}", tuple(out), labelled=True)
