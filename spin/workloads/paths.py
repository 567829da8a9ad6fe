"""Shortest paths of an empty fabric for many host pairs at once (``HostPaths``): for each pair,
the fewest hops, and among those the least latency (links plus the pipelines of the switches
entered); hosts do not forward.

Why not one search per flow: at 8,192 hosts a Python Dijkstra per flow took minutes. Hosts
hang off few switches, so the switch graph is searched once per source switch, breadth first
by layers: each layer relaxes the switch-to-switch edges leaving it at once in numpy, for a
batch of source switches, which gives the fewest hops and the least latency along them
exactly (integer picoseconds). A pair's path is then its source host's link into a switch, the
searched path to a switch of the destination, and that switch's link to the destination: the
best over the hosts' links (a host may have several), or a direct host-to-host link when one
exists (one hop beats any path through a switch).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

_FAR = np.int64(1 << 62)      # no path (sums stay below 2**63: a link lasts at most 1e12 ps)
_BATCH_CELLS = 1 << 22        # (source switches x edges) relaxed per numpy step: ~32 MB


def _ps(ns: float) -> int:
    return int(round(ns * 1000))


class HostPaths:
    """Fewest-hop, least-latency paths between hosts of ``topology``; ``switch_ps`` gives
    each switch's pipeline latency in ps, paid by a path that enters it."""

    def __init__(self, topology, switch_ps: dict[str, int]):
        sw_index = {s: i for i, s in enumerate(topology.switches)}
        node_of = topology._node_of
        n_sw = len(topology.switches)
        self._switch_ps = np.array([switch_ps[s] for s in topology.switches], np.int64)
        eu, ev, ew = [], [], []
        ph, psw, pps = [], [], []           # host links: host, switch, link ps
        self._direct: dict[tuple[int, int], int] = {}
        for link in topology.links:
            lat = _ps(link.config.latency_ns)
            ia, ib = sw_index.get(link.a), sw_index.get(link.b)
            if ia is not None and ib is not None:
                eu += [ia, ib]
                ev += [ib, ia]
                ew += [lat + switch_ps[link.b], lat + switch_ps[link.a]]
            elif ia is not None or ib is not None:
                host, sw = (link.b, ia) if ia is not None else (link.a, ib)
                ph.append(node_of[host])
                psw.append(sw)
                pps.append(lat)
            else:
                ha, hb = node_of[link.a], node_of[link.b]
                for key in ((ha, hb), (hb, ha)):
                    self._direct[key] = min(lat, self._direct.get(key, lat))
        order = np.argsort(np.asarray(ev, np.int64), kind="stable")
        self._eu = np.asarray(eu, np.int64)[order]
        self._ev = np.asarray(ev, np.int64)[order]
        self._ew = np.asarray(ew, np.int64)[order]
        # a host's ports in link order, padded with switch n_sw: a sentinel with no path to
        # or from it
        ph = np.asarray(ph, np.int64)
        by_host = np.argsort(ph, kind="stable")
        ph = ph[by_host]
        count = np.bincount(ph, minlength=len(topology.hosts))
        rank = np.arange(len(ph)) - (np.cumsum(count) - count)[ph]
        self._port_sw = np.full((len(topology.hosts), max(1, int(count.max(initial=0)))), n_sw,
                                np.int64)
        self._port_ps = np.zeros(self._port_sw.shape, np.int64)
        self._port_sw[ph, rank] = np.asarray(psw, np.int64)[by_host]
        self._port_ps[ph, rank] = np.asarray(pps, np.int64)[by_host]
        self._switch_ps = np.append(self._switch_ps, 0)
        # searched rows, one per switch with hosts on it (filled on first need), then the
        # sentinel's row; the sentinel's column is unreachable from every row
        roots = np.unique(self._port_sw[self._port_sw < n_sw])
        self._row_of = np.full(n_sw + 1, len(roots), np.int64)
        self._row_of[roots] = np.arange(len(roots))
        self._done = np.zeros(len(roots) + 1, bool)
        self._done[-1] = True
        self._hops = np.empty((len(roots) + 1, n_sw + 1), np.int32)
        self._lat = np.empty((len(roots) + 1, n_sw + 1), np.int64)
        self._hops[-1], self._hops[:, -1] = -1, -1
        self._lat[-1], self._lat[:, -1] = 0, 0
        self._roots = roots
        self._n_sw = n_sw

    def paths(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """(latency in ps, switches crossed) of every pair ``src[i] -> dst[i]`` (node ids):
        links plus the pipelines of the switches crossed along the fewest-hop path with the
        least latency. A pair with ``src == dst`` has latency 0 and -1 switches crossed."""
        src = np.asarray(src, np.int64).reshape(-1)
        dst = np.asarray(dst, np.int64).reshape(-1)
        a, b = self._port_sw[src], self._port_sw[dst]          # (pairs, ports)
        rows = self._row_of[a]
        self._search(np.unique(rows))
        hops = self._hops[rows[:, :, None], b[:, None, :]]
        lat = self._lat[rows[:, :, None], b[:, None, :]]
        ok = hops >= 0
        enter = (self._port_ps[src] + self._switch_ps[a])[:, :, None]
        hops = np.where(ok, hops + np.int64(2), _FAR)
        lat = np.where(ok, enter + lat + self._port_ps[dst][:, None, :], _FAR)
        fewest = hops.min(axis=(1, 2))
        lat = np.where(hops == fewest[:, None, None], lat, _FAR).min(axis=(1, 2))
        if self._direct:
            for i, pair in enumerate(zip(src.tolist(), dst.tolist())):
                if pair in self._direct:
                    fewest[i], lat[i] = 1, self._direct[pair]
        same = src == dst
        fewest[same], lat[same] = 0, 0
        lost = np.flatnonzero(fewest >= _FAR)
        if len(lost):
            i = lost[0]
            raise ConfigError(f"host {src[i]} cannot reach host {dst[i]}")
        return lat, fewest - 1

    def _search(self, rows: np.ndarray) -> None:
        """Fill the hop and latency rows of these source switches (row numbers) not yet
        searched, a batch of them at a time."""
        rows = rows[~self._done[rows]]
        if not len(rows):
            return
        batch = max(1, _BATCH_CELLS // max(1, len(self._eu)))
        for k in range(0, len(rows), batch):
            part = rows[k:k + batch]
            self._hops[part, :-1], self._lat[part, :-1] = self._layers(self._roots[part])
            self._done[part] = True

    def _layers(self, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Breadth first from every root at once: layer k + 1 holds the switches first
        reached in k + 1 hops, each at the least latency over its edges from layer k."""
        hops = np.full((len(roots), self._n_sw), -1, np.int64)
        lat = np.full((len(roots), self._n_sw), _FAR, np.int64)
        hops[np.arange(len(roots)), roots] = 0
        lat[np.arange(len(roots)), roots] = 0
        k = 0
        while True:
            front = hops == k                         # (roots, switches) in layer k
            live = front.any(axis=0)[self._eu]        # edges out of layer k, for some root
            if not live.any():
                break
            u, v, w = self._eu[live], self._ev[live], self._ew[live]
            targets, starts = np.unique(v, return_index=True)     # edges are sorted by v
            cand = np.where(front[:, u], lat[:, u] + w, _FAR)
            best = np.minimum.reduceat(cand, starts, axis=1)
            new = (best < _FAR) & (hops[:, targets] < 0)
            if not new.any():
                break
            r, c = np.nonzero(new)
            hops[r, targets[c]] = k + 1
            lat[r, targets[c]] = best[r, c]
            k += 1
        return hops, lat
