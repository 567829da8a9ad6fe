"""What splitting a run over workers costs, predicted from the partition alone: a model of the
multi-worker speedup, to be checked against a measured run and then extrapolated.

A worker's loop does three things, each priced by a constant measured on this machine:

* its share of the work: the frames its devices handle (the partition's vertex weights,
  ``spin.build.partition``), at ``work_s_per_frame`` (a 1-worker loop / all frames handled);
* the frames crossing the cut to or from it (sent and received, at ``cut_s_per_frame``: copy,
  exchange, check and injection);
* one synchronisation round per lookahead of virtual time (the cut's shortest link bound,
  ``spin.runtime.fabric_workers.cut_lookahead_ps``), at ``round_s`` plus ``round_s_per_peer``
  for every other worker it exchanges with each round.

The slowest worker sets the pace: T(w) = max over workers of (work + cut) + rounds x round
cost, and the speedup is T(1) / T(w). Assumptions: one core per worker, traffic as the
partition estimates it (shortest paths, even split over equal-cost hops), and the run's virtual
duration known (measured at one size, assumed at another).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .partition import _edges, auto_partition, link_lookahead_ps, link_traffic


@dataclass(frozen=True)
class CutCosts:
    """The machine's constants (seconds)."""

    work_s_per_frame: float
    cut_s_per_frame: float
    round_s: float
    round_s_per_peer: float = 0.0


@dataclass(frozen=True)
class CutFigures:
    """A partition's figures: frames each worker handles and sends or receives across the cut,
    and the cut's lookahead (ps)."""

    workers: int
    frames_handled: tuple[float, ...]
    frames_crossing: tuple[float, ...]
    lookahead_ps: int

    def time_s(self, costs: CutCosts, duration_ps: int) -> float:
        """Predicted loop time of the run on these workers."""
        rounds = duration_ps / self.lookahead_ps if self.workers > 1 else 0
        busy = max(costs.work_s_per_frame * h + costs.cut_s_per_frame * x
                   for h, x in zip(self.frames_handled, self.frames_crossing))
        return busy + rounds * (costs.round_s + (self.workers - 1) * costs.round_s_per_peer)


def cut_figures(scenario, workers: int, owner: tuple[int, ...] | None = None,
                traffic: np.ndarray | None = None) -> CutFigures:
    """The figures of ``scenario`` cut over ``workers`` (by ``auto_partition`` unless ``owner``
    is given; ``traffic``: ``link_traffic(scenario)``, computed once for several cuts)."""
    topo = scenario.topology
    traffic = link_traffic(scenario) if traffic is None else traffic
    owner = np.asarray(owner if owner is not None else auto_partition(scenario, workers, traffic))
    frames = traffic / scenario.engine.mtu_bytes
    src, dst, link = _edges(topo)
    handled = np.zeros(workers)
    np.add.at(handled, owner[src], frames[link])       # each end handles the link's frames
    crossing = np.zeros(workers)
    cut = owner[src] != owner[dst]
    np.add.at(crossing, owner[src[cut]], frames[link[cut]])
    n_links = len(topo.links)
    cut_links = np.flatnonzero(owner[src[:n_links]] != owner[dst[:n_links]])   # a -> b halves
    lookahead = int(link_lookahead_ps(scenario)[cut_links].min()) if len(cut_links) else 0
    return CutFigures(workers, tuple(handled.tolist()), tuple(crossing.tolist()), lookahead)
