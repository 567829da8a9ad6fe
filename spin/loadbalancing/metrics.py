"""Figures that tell load-balancing schemes apart, from a ``RunResult``: how evenly each tier of
links was loaded (utilisation, imbalance = max/mean), what congestion did (queues, ECN marks,
trims, drops, PFC pauses), and, when the NIC transport counts them, retransmissions and the
reorder degree.

A tier is ``Link.kind`` (``host``, ``edge-agg``, ``agg-core``, ``leaf-spine``...), both
directions of every link of that kind. Load is in bytes transmitted over the whole run, so
``imbalance`` is the same for bytes and utilisation; 1.0 is perfectly even. ``TierLoad`` and
``tier_loads`` live with the result records (``spin.records``: ``RunResult.tier_loads`` needs
them) and are re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..records import TierLoad, tier_loads, traffic_duration_ps  # noqa: F401 (re-exported)

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
    return FabricFigures(
        max_utilisation=max((l.utilisation(traffic_duration_ps(result)) for l in links),
                            default=0.0),
        imbalance=max(inner, default=0.0),
        max_queue_bytes=max((l.max_queue_bytes for l in links), default=0),
        ecn_marks=sum(l.ecn_marks for l in links), trims=sum(l.trims for l in links),
        drops=sum(result.drops.values()), pauses=sum(l.pauses_sent for l in links),
        flowlets=sum(s.flowlets for s in result.switches),
        retransmissions=_nic_counter(result, RETRANSMISSIONS, sum),
        reorder_degree=_nic_counter(result, REORDER_DEGREE, max))


def utilisation_series(result, interval_ps: int) -> dict[str, tuple[list[int], list[float],
                                                                      list[float]]]:
    """Per tier, from ``result.link_samples``: sample times and the mean and maximum
    utilisation over the tier's link directions in each interval (capped at 1: a frame counts
    in the interval its transmission started)."""
    tier_of = {l.link: l.tier for l in result.links}
    directions: dict[str, int] = {}
    for l in result.links:
        directions[l.tier] = directions.get(l.tier, 0) + 1
    by_time: dict[str, dict[int, list[float]]] = {t: {} for t in directions}
    for t, link, _direction, busy in result.link_samples:
        by_time[tier_of[link]].setdefault(t, []).append(min(1.0, busy / interval_ps))
    times = sorted({row[0] for row in result.link_samples})
    out = {}
    for tier, samples in by_time.items():
        n = directions[tier]
        out[tier] = (times, [sum(samples.get(t, ())) / n for t in times],
                     [max(samples.get(t, (0.0,))) for t in times])
    return out
