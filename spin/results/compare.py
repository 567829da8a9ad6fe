"""Offload benefit: a host-based baseline run against an offloaded run, side by side.

``Metrics`` are the figures of one run that an offload changes (completion time, host CPU time,
PCIe bytes, link bytes, HPU busy time, drops); ``OffloadComparison`` pairs two of them, gives the
gain of each (baseline / offload: above 1 means the offload is better) and asserts gains with
a failure message that prints the whole table. ``spin demo`` and ``spin.testing`` both use it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import ConfigError, OffloadAssertionError
from .report import comparison_table
from .run_result import RunResult
from ..suggest import did_you_mean

# metric -> what it is called in messages
METRIC_NAMES = {"completion_ps": "completion time", "host_cpu_ps": "host CPU time",
                "pcie_bytes": "PCIe bytes", "link_bytes": "link bytes",
                "hpu_busy_ps": "HPU busy time", "drops": "drops"}


@dataclass(frozen=True)
class Metrics:
    """What one run cost, in virtual time (ps) and bytes; ``measure`` says how completion was
    measured (which marks, on which host), in words printed with every comparison."""

    completion_ps: int      # from mark ``start`` (or time 0) to mark ``done`` (or the run's end)
    host_cpu_ps: int        # every host's modelled CPU time
    pcie_bytes: int         # DMA bytes, both directions, every NIC
    link_bytes: int         # bytes sent on every link direction
    hpu_busy_ps: int        # every NIC's HPU time
    drops: int              # frames dropped anywhere
    measure: str = field(default="", compare=False)

    @classmethod
    def of(cls, result: RunResult, done: str | None = "done", start: str | None = "start",
           node: int | str | None = None) -> "Metrics":
        """Metrics of ``result``. Completion runs from mark ``start`` (time 0 where no host
        passed it) to mark ``done`` (the run's end when ``done`` is None):

        * ``node=None`` (the default): over every host, from the earliest ``start`` to the
          latest ``done``: the workload's span, whichever hosts mark it (a receiver on host 1
          is measured on host 1);
        * ``node`` a node id or host name: that host's own marks only."""
        tot = result.totals()
        span, measure = completion(result, done, start, node)
        return cls(completion_ps=span, host_cpu_ps=tot.host_cpu_ps,
                   pcie_bytes=tot.pcie_bytes, link_bytes=tot.link_bytes,
                   hpu_busy_ps=tot.hpu_busy_ps, drops=tot.drops, measure=measure)


def _node_of(result: RunResult, node: int | str) -> int:
    """Node id of a host given by node id or by the name its topology gave it."""
    if isinstance(node, str):
        found = [h.node for h in result.hosts if h.name == node]
        if not found:
            raise ConfigError(f"node={node!r} is not a host of this run; hosts: "
                              f"{', '.join(h.name or str(h.node) for h in result.hosts)}")
        return found[0]
    return node


def _unfinished(result: RunResult) -> str:
    return ", ".join(result.host_name(h.node) for h in result.unfinished_hosts()) or "none"


def completion(result: RunResult, done: str | None, start: str | None,
               node: int | str | None) -> tuple[int, str]:
    """(completion in ps, what was measured in words) for ``Metrics.of``."""
    if node is not None:
        n = _node_of(result, node)
        who = result.host_label(n)
        if done is None:
            end = result.end_time_ps
        elif n in result.marks.get(done, {}):
            end = result.mark(done, n)
        else:
            reached = sorted(label for label, per in result.marks.items() if n in per)
            others = sorted(result.marks.get(done, {}))
            raise ConfigError(
                f"mark done={done!r}: host {who} never reached it (marks it reached: "
                f"{', '.join(reached) or 'none'}; hosts that reached {done!r}: "
                f"{', '.join(result.host_name(o) for o in others) or 'none'}; unfinished hosts: "
                f"{_unfinished(result)})")
        begin = result.marks.get(start, {}).get(n, 0) if start else 0
        since = f"mark {start!r}" if start and n in result.marks.get(start, {}) else "time 0"
        until = f"mark {done!r}" if done is not None else "the end of the run"
        return end - begin, f"host {who}: {since} -> {until}"
    starts = result.marks.get(start, {}) if start else {}
    begin = min(starts.values(), default=0)
    since = (f"mark {start!r} (earliest: {result.host_name(min(starts, key=starts.get))})"
             if starts else "time 0")
    if done is None:
        return result.end_time_ps - begin, f"{since} -> the end of the run"
    ends = result.marks.get(done, {})
    if not ends:
        raise ConfigError(f"mark done={done!r}: no host reached it (marks of this run: "
                          f"{', '.join(sorted(result.marks)) or 'none'}; unfinished hosts: "
                          f"{_unfinished(result)})")
    last = max(ends, key=lambda n: (ends[n], n))
    return ends[last] - begin, (f"{since} -> mark {done!r} (latest of "
                                f"{len(ends)} host{'s' if len(ends) > 1 else ''}: "
                                f"{result.host_name(last)})")


def _fmt(metric: str, v: int) -> str:
    if metric.endswith("_ps"):
        return f"{v / 1e6:,.3f} µs"
    return f"{v:,} {'frames' if metric == 'drops' else 'B'}"


def gain(baseline: float, offload: float) -> float:
    """baseline / offload: 1.0 when both are 0, infinite when only the offload is 0."""
    if offload == 0:
        return 1.0 if baseline == 0 else float("inf")
    return baseline / offload


@dataclass(frozen=True)
class OffloadComparison:
    """A baseline and an offloaded run of the same workload, with gains and assertions."""

    baseline: Metrics
    offload: Metrics
    title: str = ""
    # the runs themselves when built by ``of`` (memory read back, per-device stats)
    baseline_result: RunResult | None = field(default=None, compare=False, repr=False)
    offload_result: RunResult | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, baseline: RunResult, offload: RunResult, *, done: str | None = "done",
           start: str | None = "start", node: int | str | None = None,
           title: str = "") -> "OffloadComparison":
        """Compare two results; ``done``/``start``/``node`` as in ``Metrics.of`` (by default,
        completion spans every host's marks: earliest ``start`` to latest ``done``). The
        table says what was measured."""
        return cls(Metrics.of(baseline, done, start, node), Metrics.of(offload, done, start, node),
                   title, baseline, offload)

    def gain(self, metric: str) -> float:
        """How many times lower the offload's ``metric`` is (above 1: the offload is better)."""
        if metric not in METRIC_NAMES:
            raise ConfigError(f"metric={metric!r}{did_you_mean(metric, METRIC_NAMES)}; valid "
                              f"choices: {', '.join(METRIC_NAMES)}")
        return gain(getattr(self.baseline, metric), getattr(self.offload, metric))

    @property
    def speedup(self) -> float:
        """Baseline completion time / offload completion time."""
        return self.gain("completion_ps")

    def gains(self) -> dict[str, float]:
        """Every metric's gain."""
        return {m: self.gain(m) for m in METRIC_NAMES}

    def table(self) -> str:
        """The side-by-side table (units in the row labels)."""
        return comparison_table(self)

    # --- assertions ---------------------------------------------------------------------------
    def assert_gain(self, metric: str, at_least: float = 1.0) -> "OffloadComparison":
        """Assert the offload lowers ``metric`` (strictly) by a factor of ``at_least`` or more."""
        if not at_least >= 1.0:
            raise ConfigError(f"at_least={at_least}: a gain is >= 1.0 (baseline / offload); "
                              f"to bound a loss use assert_not_worse({metric!r})")
        g = self.gain(metric)
        b, o = getattr(self.baseline, metric), getattr(self.offload, metric)
        if not (o < b and g >= at_least):
            raise OffloadAssertionError(
                f"offload does not lower {METRIC_NAMES[metric]} by {at_least:.2f}x or more: "
                f"baseline {_fmt(metric, b)}, offload {_fmt(metric, o)}, gain {g:.2f}x "
                f"({metric})\n\n{self.table()}")
        return self

    def assert_not_worse(self, metric: str) -> "OffloadComparison":
        """Assert the offload's ``metric`` is at most the baseline's."""
        b, o = getattr(self.baseline, metric), getattr(self.offload, metric)
        if o > b:
            raise OffloadAssertionError(
                f"offload raises {METRIC_NAMES[metric]}: baseline {_fmt(metric, b)}, offload "
                f"{_fmt(metric, o)} ({metric})\n\n{self.table()}")
        return self

    def assert_faster(self, at_least: float = 1.0) -> "OffloadComparison":
        """Assert a speedup (completion time) of ``at_least`` or more."""
        return self.assert_gain("completion_ps", at_least)

    def assert_less_host_cpu(self, at_least: float = 1.0) -> "OffloadComparison":
        """Assert the offload saves host CPU time by ``at_least`` times or more."""
        return self.assert_gain("host_cpu_ps", at_least)

    def assert_less_pcie(self, at_least: float = 1.0) -> "OffloadComparison":
        """Assert the offload moves ``at_least`` times fewer PCIe bytes or better."""
        return self.assert_gain("pcie_bytes", at_least)

    def assert_less_link_bytes(self, at_least: float = 1.0) -> "OffloadComparison":
        """Assert the offload sends ``at_least`` times fewer link bytes or better."""
        return self.assert_gain("link_bytes", at_least)

    def assert_no_drops(self) -> "OffloadComparison":
        """Assert neither run dropped a frame."""
        if self.baseline.drops or self.offload.drops:
            raise OffloadAssertionError(f"frames were dropped: baseline {self.baseline.drops}, "
                                        f"offload {self.offload.drops}\n\n{self.table()}")
        return self

    # --- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: both runs' metrics, the gains (None for infinite), and the title."""
        gains = {m: (None if g == float("inf") else g) for m, g in self.gains().items()}
        return {"title": self.title, "baseline": asdict(self.baseline),
                "offload": asdict(self.offload), "gains": gains, "speedup": gains["completion_ps"]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OffloadComparison":
        """Inverse of ``to_dict`` (the results themselves are not part of it)."""
        names = [f.name for f in fields(Metrics)]
        return cls(Metrics(**{k: d["baseline"][k] for k in names if k in d["baseline"]}),
                   Metrics(**{k: d["offload"][k] for k in names if k in d["offload"]}),
                   d.get("title", ""))
