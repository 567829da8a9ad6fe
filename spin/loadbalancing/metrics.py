"""Figures that tell load-balancing schemes apart, from a ``RunResult``: how evenly each tier of
links was loaded (utilisation, imbalance = max/mean), what congestion did (queues, ECN marks,
trims, drops, PFC pauses), and, when the NIC transport counts them, retransmissions and the
reorder degree.

A tier is ``Link.kind`` (``host``, ``edge-agg``, ``agg-core``, ``leaf-spine``...), both
directions of every link of that kind. Load is in bytes transmitted over the whole run, so
``imbalance`` is the same for bytes and utilisation; 1.0 is perfectly even. ``TierLoad`` and
``tier_loads`` live with the result records (``spin.results.records``: ``RunResult.tier_loads`` needs
them) and are re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..results.records import TierLoad, tier_loads, traffic_duration_ps  # noqa: F401 (re-exported)

# Counters of NicStats that a reliable transport adds; summed over NICs when present.
RETRANSMISSIONS = "retransmissions"
REORDER_DEGREE = "reorder_degree"


@dataclass(frozen=True)
class FabricFigures:
    """One run's load-balancing figures, summed or maximised over the fabric."""

    max_utilisation: float     # busiest link direction, over the traffic's duration
    imbalance: float           # worst tier between switches (host links follow the workload)
    max_queue_bytes: int
    ecn_marks: int
    trims: int
    drops: int                 # frames dropped anywhere, any reason
    pauses: int                # PFC pause frames sent
    flowlets: int              # flows given a path afresh by flowlet switching
    retransmissions: int | None    # None: the NICs' transport does not count them
    reorder_degree: int | None


def _nic_counter(result, name: str, combine) -> int | None:
    values = [getattr(n, name) for n in result.nics if hasattr(n, name)]
    return combine(values) if values else None


def fabric_figures(result) -> FabricFigures:
    tiers = tier_loads(result)
    inner = [t.imbalance for t in tiers if t.tier != "host"] or [t.imbalance for t in tiers]
    links = result.links
    duration = traffic_duration_ps(result)
    return FabricFigures(
        max_utilisation=max((l.utilisation(duration) for l in links), default=0.0),
        imbalance=max(inner, default=0.0),
        max_queue_bytes=max((l.max_queue_bytes for l in links), default=0),
        ecn_marks=sum(l.ecn_marks for l in links), trims=sum(l.trims for l in links),
        drops=sum(result.drops.values()), pauses=sum(l.pauses_sent for l in links),
        flowlets=sum(s.flowlets for s in result.switches),
        retransmissions=_nic_counter(result, RETRANSMISSIONS, sum),
        reorder_degree=_nic_counter(result, REORDER_DEGREE, max))


def utilisation_series(result, interval_ps: int) -> dict[str, tuple[list[int], list[float],
                                                                      list[float]]]:
    """Per tier of links, from ``result.link_samples`` taken every ``interval_ps``: the sample
    instants and, for each, the mean and the busiest utilisation over the tier's link
    directions in the interval that ends there.

    The instants are the whole grid, from 0 to the last sample (and on while a transmission
    still runs): the engine writes no row for an idle direction, and an interval without rows
    is idle (utilisation 0), not missing, so a plot drops to zero across idle gaps instead of
    drawing a line over them. A sample counts a frame's whole transmission in the interval it
    started; what exceeds the interval runs on into the next ones (a direction is busy at most
    the whole interval), so the series add up to each direction's ``LinkStats.busy_ps``."""
    import numpy as np
    if interval_ps <= 0:
        raise ConfigError(f"utilisation series: interval_ps = {interval_ps}; the link sampling "
                          f"interval must be > 0 ps ([engine] queue_sample_ns)")
    directions: dict[str, int] = {}
    for l in result.links:
        directions[l.tier] = directions.get(l.tier, 0) + 1
    tiers = list(directions)
    tier_of = np.zeros(max((l.link for l in result.links), default=0) + 1, np.int64)
    for l in result.links:
        tier_of[l.link] = tiers.index(l.tier)
    rows = np.asarray(result.link_samples, np.int64).reshape(-1, 4)   # t, link, direction, busy
    column = rows[:, 0] // interval_ps
    last = int(column.max()) if len(rows) else 0
    sample_tier = tier_of[rows[:, 1]]
    busy = {}   # tier -> busy ps per (direction that sent anything, interval)
    for i, tier in enumerate(tiers):
        mine = sample_tier == i
        directions_seen, row = np.unique(rows[mine, 1] * 2 + rows[mine, 2], return_inverse=True)
        busy[tier] = np.zeros((len(directions_seen), last + 1))
        np.add.at(busy[tier], (row, column[mine]), rows[mine, 3])
    used = {tier: _spill(b, interval_ps) for tier, b in busy.items()}
    n = max([last + 1] + [u.shape[1] for u in used.values()])
    times = [k * interval_ps for k in range(n)]
    out = {}
    for tier, u in used.items():
        u = np.pad(u, ((0, 0), (0, n - u.shape[1])))
        mean = (u.sum(axis=0) / directions[tier]).tolist() if len(u) else [0.0] * n
        peak = u.max(axis=0).tolist() if len(u) else [0.0] * n
        out[tier] = (times, mean, peak)
    return out


def _spill(busy, interval_ps: int):
    """Utilisation per direction (rows) and interval (columns) from the busy time sampled per
    interval: at most the whole interval, the rest carried into the next ones (columns are
    added while a carry remains). Busy times are integers (ps), so the carry is exact."""
    import numpy as np
    columns = []
    carry = np.zeros(busy.shape[0])
    k = 0
    while k < busy.shape[1] or carry.any():
        total = carry + (busy[:, k] if k < busy.shape[1] else 0.0)
        done = np.minimum(total, interval_ps)
        columns.append(done / interval_ps)
        carry = total - done
        k += 1
    return np.stack(columns, axis=1) if columns else np.zeros((busy.shape[0], 0))
