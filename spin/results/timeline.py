"""A run as a timeline: spans in virtual time, written as a Chrome trace-event file that the
Perfetto UI (ui.perfetto.dev) and chrome://tracing open, as PsPIN's ``trace-chrome`` does.

Turn it on with ``Scenario.trace()`` (``spin run X.toml --trace FILE``); the result then holds a
``Trace`` (``result.trace``). The engine appends integer records while it runs
(``spin.engine.tracing``); everything here runs once, after the run, in Python.

Layout of the file: one process per device (a node's NIC and its host program share the node's
process; each switch has its own), and in it one track per HPU, one per PCIe direction, one per
port (frames, with ``links=True``) and one for the host program. Messages are async spans on the
receiving node, from the first packet's arrival to completion. ``ts`` and ``dur`` are virtual
microseconds (floats of the integer picoseconds); arguments ending in ``_ps`` are exact.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engine import state as S
from ..engine.trace_kinds import TRK_DMA_READ, TRK_DMA_WRITE, TRK_HANDLER, TRK_HOST, TRK_LINK
from ..errors import ConfigError
from ..assembly.state_builder import context_order
# what Scenario.trace records is part of the description; re-exported here, where it was
from ..describe.trace_options import MIN_BUFFER_RECORDS, TraceOptions  # noqa: F401

_HOST_OPS = {S.OP_SEND: "send", S.OP_WAIT_RECV: "wait_recv", S.OP_WAIT_EVENT: "wait_event",
             S.OP_COMPUTE: "compute", S.OP_REDUCE: "reduce", S.OP_MARK: "mark",
             S.OP_CALL: "call"}
# order of a device's tracks in the UI
_T_HOST, _T_PCIE_W, _T_PCIE_R, _T_MSG, _T_HPU, _T_PORT = 1, 2, 3, 4, 100, 10_000


@dataclass(frozen=True)
class Span:
    """One thing that took (virtual) time on one track of one device; instants have
    ``start_ps == end_ps``."""

    category: str          # handler | dma | link | host | message
    device: str            # NIC (node) or switch name
    track: str             # "HPU 3", "PCIe write", "port 0 -> s0", "host program", "messages"
    name: str
    start_ps: int
    end_ps: int
    args: dict[str, Any] = field(default_factory=dict)
    track_index: int = 0   # the track's position within its device

    @property
    def duration_ps(self) -> int:
        """``end_ps - start_ps`` (0 for an instant)."""
        return self.end_ps - self.start_ps


@dataclass(frozen=True)
class TraceNames:
    """Names the records' numbers stand for, from the scenario (plain data, so a merged
    multi-worker trace is labelled exactly as a one-process one)."""

    devices: tuple[str, ...]
    n_hosts: int
    ports: dict[int, tuple[int, int, str]]                   # gp -> (local index, link, peer)
    contexts: tuple[tuple[str, tuple[str, str, str]], ...]  # ec -> (program, handler names)
    marks: dict[int, str]
    callbacks: tuple[str, ...]

    @classmethod
    def from_scenario(cls, scenario) -> "TraceNames":
        """The names of ``scenario``'s devices, ports, execution contexts, marks and calls."""
        topo = scenario.topology
        gp = topo.global_ports()
        ports = {gp[(name, link)]: (k, link, peer)
                 for name, plist in topo.ports().items() for k, (link, peer) in enumerate(plist)}
        contexts = tuple((c.program.name, tuple(_fn_name(f) for f in c.program.handlers()))
                         for c in context_order(scenario))
        return cls(tuple(topo.device_names()), scenario.n_hosts, ports, contexts,
                   {i: label for label, i in scenario.mark_index.items()},
                   tuple(_fn_name(f) for f in scenario.callbacks))


def _fn_name(fn) -> str:
    py = getattr(fn, "py_func", fn)
    return "" if fn is None else getattr(py, "__qualname__", getattr(py, "__name__", repr(fn)))


def canonical_order(records: np.ndarray) -> np.ndarray:
    """Records sorted by start time, then device, kind and every other column: the same rows
    from any number of workers come out in the same order."""
    if records.shape[0] == 0:
        return records
    cols = [S.TRC_T0, S.TRC_DEV, S.TRC_KIND, S.TRC_T1] + [S.TRC_A + i for i in range(7)]
    return records[np.lexsort(tuple(records[:, c] for c in reversed(cols)))]


class Trace:
    """The spans of one run (merged over workers). ``spans()`` gives them as objects,
    ``chrome()`` as a trace-event document, ``write(path)`` as a file."""

    def __init__(self, records: np.ndarray, names: TraceNames, messages: list, lost: int = 0):
        self.records = canonical_order(np.asarray(records, np.int64).reshape(-1, S.TRACE_COLS))
        self.names = names
        self.messages = messages
        self.lost = int(lost)   # records that found the engine's table full (not in the trace)

    @classmethod
    def build(cls, scenario, records: np.ndarray, messages: list, lost: int = 0) -> "Trace":
        """The trace of a run of ``scenario`` from its engine records and its result's
        messages (``RunResult.messages``)."""
        return cls(records, TraceNames.from_scenario(scenario), messages, lost)

    def __repr__(self) -> str:
        return f"Trace({self.records.shape[0]} records, {len(self.messages)} messages)"

    # --- spans ----------------------------------------------------------------------------
    def spans(self, category: str | None = None) -> list[Span]:
        """Every span (or those of one category), in start-time order per category."""
        out: list[Span] = []
        hosts: dict[int, list[list[int]]] = {}
        for r in self.records.tolist():   # Python ints: much faster per row than numpy scalars
            kind = r[S.TRC_KIND]
            if kind == TRK_HOST:
                hosts.setdefault(r[S.TRC_DEV], []).append(r)
            else:
                out.append(self._span(kind, r))
        for dev in sorted(hosts):
            out += self._host_spans(dev, hosts[dev])
        out += [self._message_span(m) for m in self.messages]
        if category is not None:
            out = [s for s in out if s.category == category]
        return out

    def _span(self, kind: int, r: list[int]) -> Span:
        n = self.names
        dev, t0, t1 = r[S.TRC_DEV], r[S.TRC_T0], r[S.TRC_T1]
        a = r[S.TRC_A:S.TRC_A + 7]
        device = n.devices[dev]
        if kind == TRK_HANDLER:
            hpu, hkind, ec, src, qp, psn, cycles = a
            program, fns = n.contexts[ec]
            return Span("handler", device, f"HPU {hpu}", fns[hkind] or S.HANDLER_KIND_NAMES[hkind],
                        t0, t1, {"program": program, "kind": S.HANDLER_KIND_NAMES[hkind],
                                 "src": self._node(src), "qp": qp, "psn": psn,
                                 "cycles": cycles, "execution_context": ec}, _T_HPU + hpu)
        if kind in (TRK_DMA_WRITE, TRK_DMA_READ):
            write = kind == TRK_DMA_WRITE
            return Span("dma", device, "PCIe write" if write else "PCIe read",
                        "DMA write" if write else "DMA read", t0, t1,
                        {"bytes": a[0], "issued_ps": a[1], "done_ps": a[2]},
                        _T_PCIE_W if write else _T_PCIE_R)
        if kind == TRK_LINK:
            k, link, peer = n.ports[a[0]]
            return Span("link", device, f"port {k} -> {peer}",
                        "priority frame" if a[2] else "frame", t0, t1,
                        {"bytes": a[1], "link": link, "to": peer}, _T_PORT + k)
        raise ConfigError(f"trace record of unknown kind {kind}")

    def _node(self, node: int) -> str:
        return self.names.devices[node] if 0 <= node < self.names.n_hosts else str(node)

    def _host_spans(self, dev: int, rows: list[list[int]]) -> list[Span]:
        """A host program is a sequence: a wait starts where the previous step ended."""
        n = self.names
        out, prev_end = [], 0
        for r in sorted(rows, key=lambda r: r[S.TRC_A + 1]):   # by op index
            op, pc, c, d, e = r[S.TRC_A:S.TRC_A + 5]
            t0, t1 = r[S.TRC_T0], r[S.TRC_T1]
            name = _HOST_OPS.get(op, f"op {op}")
            args: dict[str, Any] = {"op_index": pc}
            if op == S.OP_SEND:
                args.update(dst=self._node(c), qp=d, bytes=e)
            elif op in (S.OP_WAIT_RECV, S.OP_WAIT_EVENT):
                args.update({"qp": c, "count": d} if op == S.OP_WAIT_RECV else {"count": d})
                args["satisfied_ps"] = t0
                t0 = min(prev_end, t0)
            elif op == S.OP_REDUCE:
                args["bytes"] = e
            elif op == S.OP_MARK:
                name = n.marks.get(c, name)
            elif op == S.OP_CALL and 0 <= c < len(n.callbacks):
                name = f"call {n.callbacks[c]}"
            prev_end = t1
            out.append(Span("host", n.devices[dev], "host program", name, t0, t1, args, _T_HOST))
        return out

    def _message_span(self, m) -> Span:
        return Span("message", self._node(m.dst), "messages",
                    f"{self._node(m.src)} -> {self._node(m.dst)} qp {m.qp}",
                    m.t_first_arrival_ps, m.t_done_ps,
                    {"src": self._node(m.src), "dst": self._node(m.dst), "qp": m.qp,
                     "bytes": m.bytes, "first_psn": m.first_psn,
                     "handled_by_nic": m.handled_by_nic, "posted_ps": m.t_post_ps}, _T_MSG)

    # --- Chrome trace-event format ---------------------------------------------------------
    def chrome(self) -> dict[str, Any]:
        """The trace as a Chrome trace-event document (JSON object format)."""
        n = self.names
        pid = {name: i + 1 for i, name in enumerate(n.devices)}
        spans = self.spans()
        tracks = sorted({(pid[s.device], s.track_index, s.track) for s in spans
                         if s.category != "message"})
        meta: list[dict[str, Any]] = []
        for d, name in enumerate(n.devices):
            label = f"{name} (NIC, host)" if d < n.n_hosts else f"{name} (switch)"
            meta.append({"ph": "M", "name": "process_name", "pid": d + 1, "tid": 0,
                         "args": {"name": label}})
            meta.append({"ph": "M", "name": "process_sort_index", "pid": d + 1, "tid": 0,
                         "args": {"sort_index": d}})
        for p, tid, track in tracks:
            meta.append({"ph": "M", "name": "thread_name", "pid": p, "tid": tid,
                         "args": {"name": track}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": p, "tid": tid,
                         "args": {"sort_index": tid}})
        events: list[dict[str, Any]] = []
        for i, s in enumerate(spans):
            base = {"name": s.name, "cat": s.category, "pid": pid[s.device],
                    "tid": s.track_index, "ts": s.start_ps / 1e6}
            if s.category == "message":
                ident = f"msg{i}"
                events.append({**base, "ph": "b", "id": ident, "args": s.args})
                events.append({**base, "ph": "e", "id": ident, "ts": s.end_ps / 1e6})
            elif s.duration_ps == 0 and s.category == "host":
                events.append({**base, "ph": "i", "s": "t", "args": s.args})
            else:
                events.append({**base, "ph": "X", "dur": s.duration_ps / 1e6, "args": s.args})
        return {"traceEvents": meta + events, "displayTimeUnit": "ns",
                "otherData": {"clock": "virtual time: ts and dur in microseconds",
                              "records_lost": self.lost}}

    def write(self, path: str | Path) -> Path:
        """Write the Chrome trace-event JSON to ``path`` (open it in ui.perfetto.dev)."""
        p = Path(path)
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("w") as f:
            json.dump(self.chrome(), f, separators=(",", ":"))
            f.write("\n")
        return p

    # --- engine buffer transport -------------------------------------------------------------
    @staticmethod
    def pack(records: np.ndarray, lost: int) -> dict[str, Any]:
        """A worker's records as JSON-ready data (see ``unpack``)."""
        import base64
        rec = np.ascontiguousarray(records, np.int64)
        return {"rows": int(rec.shape[0]), "lost": int(lost),
                "records": base64.b64encode(rec.tobytes()).decode()}

    @staticmethod
    def unpack(d: dict[str, Any]) -> tuple[np.ndarray, int]:
        """Records and lost count back from ``pack``'s data."""
        import base64
        rec = np.frombuffer(base64.b64decode(d["records"]), np.int64)
        return rec.reshape(int(d["rows"]), S.TRACE_COLS), int(d["lost"])
