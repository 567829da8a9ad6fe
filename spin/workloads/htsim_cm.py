"""Import of htsim connection matrices (``.cm``): connections with sizes, start times and
trigger chains, mapped onto host programs, so Ultra Ethernet scenarios can be rerun here.

The format (htsim's ``ConnectionMatrix::load``): a header of ``Nodes N``, ``Connections C`` and
optionally ``Triggers T``; then one line per connection ``SRC->DST id I size BYTES`` with either
``start PS`` (picoseconds, as htsim reads it) or ``trigger X``, and optionally
``send_done_trigger Y`` / ``recv_done_trigger Z`` (fire a trigger when this flow completes) and
``prio P`` (read, not modelled); and one line per trigger ``trigger id X oneshot|multishot|barrier [count N]``.
``#`` starts a comment line. A trigger fires on its first source's completion (oneshot,
multishot) or after ``count`` of them (barrier, default: all its sources).

Mapping: a host program is sequential, so each host's sends and waits are put in one global
order consistent with the dependencies (estimated times, then a topological rank), which
cannot deadlock. A flow's completion is seen where it lands: a trigger's target on the
receiving host waits for the flow itself; one on another host waits for a 1-byte notification
the receiver sends once the flow arrived (a send-done seen by the sender is, on a real NIC, that
ACK). A start time is a delay after the host's previous timed op (minus the send overheads
spent since); a wait placed before it can only make it later. Every flow that is waited for,
and every repeat of a (source, destination) pair, gets its own QP, so flows hash apart under
per-flow ECMP as htsim's connections do.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .common import Workload
from .declare import WorkloadParams, builder

TRIGGER_KINDS = ("oneshot", "multishot", "barrier")
CONN_TOKENS = ("id", "size", "start", "trigger", "send_done_trigger", "recv_done_trigger", "prio")
NOTIFY_BYTES = 1


@dataclass(frozen=True)
class HtsimConnection:
    line: int
    src: int
    dst: int
    flow_id: int
    size_bytes: int
    start_ps: int | None          # None: started by ``trigger``
    trigger: int | None
    send_done_trigger: int | None = None
    recv_done_trigger: int | None = None

    @property
    def done_triggers(self) -> tuple[int, ...]:
        """The triggers this flow's completion fires (both are seen at its receiver)."""
        return tuple(t for t in (self.send_done_trigger, self.recv_done_trigger)
                     if t is not None)

    def to_text(self) -> str:
        out = [f"{self.src}->{self.dst}", "id", str(self.flow_id)]
        out += ["start", str(self.start_ps)] if self.trigger is None else \
            ["trigger", str(self.trigger)]
        out += ["size", str(self.size_bytes)]
        for key in ("send_done_trigger", "recv_done_trigger"):
            if getattr(self, key) is not None:
                out += [key, str(getattr(self, key))]
        return " ".join(out)


@dataclass(frozen=True)
class HtsimTrigger:
    line: int
    id: int
    kind: str
    count: int | None


@dataclass
class HtsimMatrix:
    """A parsed ``.cm`` file; ``apply(scenario)`` adds it as host programs."""

    path: str
    nodes: int
    connections: list[HtsimConnection]
    triggers: dict[int, HtsimTrigger]
    label: str = "htsim"
    qp: int = 1
    fill: bool = True

    def apply(self, scenario) -> Workload:
        return _apply(self, scenario)

    def to_text(self) -> str:
        """The matrix in htsim's format again (comments and ``prio`` dropped)."""
        lines = [f"Nodes {self.nodes}", f"Connections {len(self.connections)}"]
        if self.triggers:
            lines.append(f"Triggers {len(self.triggers)}")
        lines += [c.to_text() for c in self.connections]
        for t in self.triggers.values():
            lines.append(f"trigger id {t.id} {t.kind}" + (f" count {t.count}" if t.count else ""))
        return "\n".join(lines) + "\n"


# Upper bounds that keep every time and size exact in the engine's int64 picoseconds and bytes:
# a start up to 10^15 ps (1000 s of virtual time, the longest host compute op), a flow up to
# 2^48 B (256 TiB).
MAX_VALUE = {"start": 10**15, "size": 2**48}


def _int(path, lineno, token, value, what, lo=0) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{path}:{lineno}: {token} {value!r}: {what} must be an integer") \
            from None
    if v < lo:
        raise ConfigError(f"{path}:{lineno}: {token} {v}: {what} must be >= {lo}")
    hi = MAX_VALUE.get(what, 2**62)
    if v > hi:
        raise ConfigError(f"{path}:{lineno}: {token} {v}: {what} must be <= {hi:.3g}"
                          + (" ps (1000 s of virtual time)" if what == "start" else ""))
    return v


def parse_htsim_cm(path: str | Path) -> HtsimMatrix:
    """Parse a ``.cm`` file; errors name the file, the line and what is wrong."""
    p = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read connection matrix: {exc}") from None
    header: dict[str, int] = {}
    conns: list[HtsimConnection] = []
    triggers: dict[int, HtsimTrigger] = {}
    ids: set[int] = set()
    for n, raw in enumerate(lines, 1):
        tok = raw.split()
        if not tok or tok[0].startswith("#"):
            continue
        if tok[0] in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(tok) != 2:
                raise ConfigError(f"{p}:{n}: {raw.strip()!r}: expected '{tok[0]} <count>'")
            header[tok[0]] = _int(p, n, tok[0], tok[1], "the count")
        elif "->" in tok[0]:
            conns.append(_connection(p, n, tok, ids))
        elif tok[0] == "trigger":
            t = _trigger(p, n, tok)
            if t.id in triggers:
                raise ConfigError(f"{p}:{n}: trigger id {t.id} is declared twice (first on "
                                  f"line {triggers[t.id].line})")
            triggers[t.id] = t
        elif tok[0] == "failure":
            raise ConfigError(f"{p}:{n}: failure lines are not imported: use Scenario.link_down "
                              f"or [[fault]] tables")
        else:
            raise ConfigError(f"{p}:{n}: {tok[0]!r}: unknown line; expected Nodes, Connections, "
                              f"Triggers, 'SRC->DST ...' or 'trigger id ...'")
    if "Nodes" not in header:
        raise ConfigError(f"{p}: no 'Nodes N' header line")
    for key, have in (("Connections", len(conns)), ("Triggers", len(triggers))):
        if key in header and header[key] != have:
            raise ConfigError(f"{p}: header says {key} {header[key]}, the file has {have}")
    for c in conns:
        if max(c.src, c.dst) >= header["Nodes"]:
            raise ConfigError(f"{p}:{c.line}: {c.src}->{c.dst}: nodes are 0..{header['Nodes'] - 1}"
                              f" (Nodes {header['Nodes']})")
        for t in (c.trigger, *c.done_triggers):
            if t is not None and t not in triggers:
                raise ConfigError(f"{p}:{c.line}: trigger {t} is used but never declared "
                                  f"('trigger id {t} oneshot')")
    return HtsimMatrix(p, header["Nodes"], conns, triggers)


def _connection(p, n, tok, ids) -> HtsimConnection:
    src_s, _, dst_s = tok[0].partition("->")
    src = _int(p, n, tok[0], src_s, "the source node")
    dst = _int(p, n, tok[0], dst_s, "the destination node")
    if src == dst:
        raise ConfigError(f"{p}:{n}: {tok[0]}: a connection from a node to itself")
    vals: dict[str, int] = {}
    i = 1
    while i < len(tok):
        key = tok[i]
        if key not in CONN_TOKENS:
            raise ConfigError(f"{p}:{n}: {key!r}: unknown connection attribute; valid: "
                              f"{', '.join(CONN_TOKENS)}")
        if i + 1 >= len(tok):
            raise ConfigError(f"{p}:{n}: {key!r} has no value")
        v = _int(p, n, key, tok[i + 1], key, lo=1 if key in ("id", "trigger") or
                 key.endswith("done_trigger") else 0)
        if key in vals:
            raise ConfigError(f"{p}:{n}: {key!r} given twice")
        vals[key] = v
        i += 2
    for need in ("id", "size"):
        if need not in vals:
            raise ConfigError(f"{p}:{n}: connection {tok[0]} has no {need!r}")
    if vals["size"] == 0:
        raise ConfigError(f"{p}:{n}: size 0 (an endless flow in htsim) is not supported: give "
                          f"the flow's size in bytes")
    if ("start" in vals) == ("trigger" in vals):
        raise ConfigError(f"{p}:{n}: connection {tok[0]} needs exactly one of 'start' (ps) or "
                          f"'trigger'")
    if vals["id"] in ids:
        raise ConfigError(f"{p}:{n}: flow id {vals['id']} is used twice")
    ids.add(vals["id"])
    return HtsimConnection(n, src, dst, vals["id"], vals["size"], vals.get("start"),
                           vals.get("trigger"), vals.get("send_done_trigger"),
                           vals.get("recv_done_trigger"))


def _trigger(p, n, tok) -> HtsimTrigger:
    tid = kind = count = None
    i = 1
    while i < len(tok):
        if tok[i] in TRIGGER_KINDS:
            if kind is not None:
                raise ConfigError(f"{p}:{n}: trigger has two kinds ({kind}, {tok[i]})")
            kind, i = tok[i], i + 1
        elif tok[i] in ("id", "count") and i + 1 < len(tok):
            v = _int(p, n, tok[i], tok[i + 1], f"trigger {tok[i]}", lo=1)
            tid, count = (v, count) if tok[i] == "id" else (tid, v)
            i += 2
        else:
            raise ConfigError(f"{p}:{n}: {tok[i]!r}: expected 'id N', 'count N' or one of "
                              f"{', '.join(TRIGGER_KINDS)}")
    if tid is None or kind is None:
        raise ConfigError(f"{p}:{n}: a trigger needs 'id N' and a kind ({', '.join(TRIGGER_KINDS)})")
    return HtsimTrigger(n, tid, kind, count)


def load_htsim_cm(path: str | Path, *, label: str = "htsim", qp: int = 1,
                  fill: bool = True) -> HtsimMatrix:
    """Read an htsim connection matrix; ``.apply(scenario)`` adds it as host programs and
    returns the ``Workload`` (flows, marks ``<label>.start.0`` / ``<label>.end.0``)."""
    m = parse_htsim_cm(path)
    m.label, m.qp, m.fill = label, qp, fill
    return m


class HtsimCmParams(WorkloadParams):
    file: str


@builder("htsim_cm", HtsimCmParams)
def htsim_cm(sc, p: HtsimCmParams) -> Workload:
    """An htsim connection matrix (``file``, relative to the scenario file), its sizes, start
    times and triggers; message_bytes, iterations and start_skew_ns do not apply."""
    for name in ("message_bytes", "iterations", "start_skew_ns"):
        if name in p.model_fields_set:
            raise ConfigError(f"{name} does not apply to kind = 'htsim_cm': the file gives "
                              f"sizes and start times")
    return load_htsim_cm(p.file, label=p.label or "htsim", qp=p.qp, fill=p.fill).apply(sc)


from .htsim_plan import plan as _plan  # noqa: E402  (the scheduling half lives there)


def _apply(m: HtsimMatrix, sc) -> Workload:
    workload = _plan(m, sc)   # names a connection to a host the topology lacks, first
    hosts = len(sc.topology.hosts)
    if m.nodes > hosts:       # its connections fit, but the file is for another topology
        raise ConfigError(f"{m.path}: Nodes {m.nodes:,} but the topology has {hosts:,} hosts: "
                          f"the connection matrix was written for another topology")
    return workload
