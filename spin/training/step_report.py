"""What a replayed step reports: per rank the step time split into compute and exposed
communication, per collective its time and algorithm, and a Perfetto timeline with each
rank's compute and communication on its own track. Times in µs (1e-6 s) of virtual time."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..trace_formats.model import COMPUTE, StepTrace
from .marks import end_label, start_label

PS_PER_US = 1_000_000


@dataclass(frozen=True)
class RankStep:
    """``step_us``: when the rank's last node ended; ``compute_us``: time in compute nodes;
    ``delay_us``: the straggler delay before its first node; ``exposed_comm_us``: the rest,
    time the rank spent in (or waiting for) communication that no compute hid;
    ``sent_bytes``: what its NIC read from host memory to send: the payload of its sends and
    of its part of the collectives (plus what an offloaded collective's handlers read; resent
    bytes count again)."""

    rank: int
    step_us: float
    compute_us: float
    exposed_comm_us: float
    delay_us: float
    sent_bytes: int = 0


@dataclass(frozen=True)
class CollectiveTime:
    """One collective call: ``time_us`` from the moment its last member joined to the moment
    its last member finished; ``start_us``/``end_us`` are those two moments. ``involved_dim``
    is the trace's own per-dimension flags (Chakra), reported as given: spin's topologies are
    not split into dimensions, so the call runs on its process group's ranks."""

    node_id: int
    type: str
    bytes: int
    algo: str
    time_us: float
    start_us: float
    end_us: float
    group: str
    ranks: list[int]
    involved_dim: list[bool]


@dataclass(frozen=True)
class NodeSpan:
    """When a rank ran one node (ps of virtual time)."""

    rank: int
    node_id: int
    kind: str
    name: str
    start_ps: int
    end_ps: int


@dataclass(frozen=True)
class StepReport:
    """A replayed step: per rank, per collective, every node's span."""

    trace: str
    format: str
    algo: str
    step_us: float
    ranks: list[RankStep]
    collectives: list[CollectiveTime]
    spans: list[NodeSpan]
    allreduce_correct: bool | None     # None: the step mixes collectives, not checked
    packet_events: int
    host: str = "cpu"                  # the host preset (HOST_PRESETS), or "custom"
    payload: str = "stored"            # where payload bytes lived (ReplayConfig.payload)
    # wall-clock seconds of the replay's phases (plan, build, run, loop, report): figures of
    # this machine, never compared
    wall: dict[str, float] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        """``ranks`` and ``collectives`` as JSON-ready lists (spans are in the trace file)."""
        return {"trace": self.trace, "format": self.format, "algo": self.algo,
                "host": self.host, "payload": self.payload, "step_us": self.step_us,
                "allreduce_correct": self.allreduce_correct,
                "packet_events": self.packet_events,
                "ranks": [asdict(r) for r in self.ranks],
                "collectives": [asdict(c) for c in self.collectives]}

    def write_json(self, path: str | Path) -> Path:
        """``to_dict()`` as JSON in ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    def chrome(self) -> dict:
        """Chrome/Perfetto trace-event JSON: process "ranks", one thread per rank; compute
        and communication nodes as complete events of categories compute and comm."""
        events: list[dict] = [{"ph": "M", "pid": 0, "name": "process_name",
                               "args": {"name": f"{self.trace} ranks"}}]
        for r in self.ranks:
            events.append({"ph": "M", "pid": 0, "tid": r.rank, "name": "thread_name",
                           "args": {"name": f"rank {r.rank}"}})
        for s in self.spans:
            events.append({"ph": "X", "pid": 0, "tid": s.rank, "name": s.name or s.kind,
                           "cat": "compute" if s.kind == COMPUTE else "comm",
                           "ts": s.start_ps / PS_PER_US,
                           "dur": (s.end_ps - s.start_ps) / PS_PER_US,
                           "args": {"node_id": s.node_id, "kind": s.kind}})
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def write_trace(self, path: str | Path) -> Path:
        """``chrome()`` in ``path`` (open it in ui.perfetto.dev or chrome://tracing)."""
        path = Path(path)
        path.write_text(json.dumps(self.chrome()))
        return path

    def text(self) -> str:
        """A table per rank and per collective, units in the headers; every figure of
        ``to_dict`` is shown, so a rank's step reads as compute + exposed comm + delay."""
        algo = f", all-reduce {self.algo}" if any(c.type == "all_reduce"
                                                   for c in self.collectives) else ""
        lines = [f"{self.trace} ({self.format}){algo}: step {self.step_us:.3f} us"
                 + ("" if self.allreduce_correct is None else
                    f", all-reduce results {'exact' if self.allreduce_correct else 'WRONG'}"),
                 f"{'rank':>5} {'step_us':>11} {'compute_us':>11} {'exposed_comm_us':>16} "
                 f"{'delay_us':>9} {'sent_bytes':>12}"]
        lines += [f"{r.rank:>5} {r.step_us:>11.3f} {r.compute_us:>11.3f} "
                  f"{r.exposed_comm_us:>16.3f} {r.delay_us:>9.3f} {r.sent_bytes:>12}"
                  for r in self.ranks]
        if self.collectives:
            lines.append(f"{'node':>5} {'type':<15} {'group':<8} {'bytes':>10} {'algo':<14} "
                         f"{'time_us':>10}")
            lines += [f"{c.node_id:>5} {c.type:<15} {c.group or 'world':<8} {c.bytes:>10} "
                      f"{c.algo:<14} {c.time_us:>10.3f}" for c in self.collectives]
        return "\n".join(lines)


def build_report(trace: StepTrace, plan, result, config, correct: bool | None,
                 host: str = "cpu", payload: str = "stored") -> StepReport:
    """Read every node's marks from the run and sum them per rank and per collective."""
    spans: list[NodeSpan] = []
    ranks: list[RankStep] = []
    sent = {nic.node: nic.dma_read_bytes for nic in result.nics}
    for rank in trace.ranks:
        r = rank.rank
        delay_ps = round(config.compute.start_delay_ns(r) * 1000)
        end, compute = delay_ps, 0
        for op in rank.ops:
            s = result.mark(start_label(op.node_id), r)
            e = result.mark(end_label(op.node_id), r)
            spans.append(NodeSpan(r, op.node_id, op.collective or op.kind,
                                  op.name or f"{op.kind} {op.node_id}", s, e))
            end = max(end, e)
            if op.kind == COMPUTE:
                compute += e - s
        ranks.append(RankStep(r, end / PS_PER_US, compute / PS_PER_US,
                              (end - compute - delay_ps) / PS_PER_US, delay_ps / PS_PER_US,
                              int(sent.get(r, 0))))
    calls = []
    for c in plan.calls:
        start = max(result.mark(start_label(n), r) for r, n in zip(c.ranks, c.node_ids))
        stop = max(result.mark(end_label(n), r) for r, n in zip(c.ranks, c.node_ids))
        calls.append(CollectiveTime(c.node_id, c.kind, c.nbytes, c.algo,
                                    (stop - start) / PS_PER_US, start / PS_PER_US,
                                    stop / PS_PER_US, c.group, list(c.ranks),
                                    list(c.involved_dim)))
    calls.sort(key=lambda c: (c.start_us, c.node_id))
    spans.sort(key=lambda s: (s.rank, s.start_ps, s.node_id))
    return StepReport(trace.name, trace.fmt, config.algo,
                      max((r.step_us for r in ranks), default=0.0), ranks, calls, spans,
                      correct, int(result.packet_events), host, payload)
