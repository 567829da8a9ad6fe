"""Figures of a workload run: flow completion times (mean, p50, p99, max) from
``RunResult.messages``, collective completion time per iteration from the workload's marks, the
ideal of both derived from the scenario's configs, and the slowdown against that ideal.

Ideal of a flow: its frames (headers, ICRC, preamble, gap and FCS included) serialised at the
slower of its host links (or of PCIe, when slower), plus the base latency of an empty fabric:
link and switch-pipeline latencies along a shortest path, one frame's store-and-forward per
switch, and the PCIe latency at both ends (the sender's NIC reads the data, the receiver's
writes it). htsim quotes serialisation plus base RTT because its flows complete at the sender
on the last ACK; a spin RDMA write completes at its receiver, so the base is one way
(``base_rtt_ps`` in the report is twice the path latency, for reference). Ideal of an
iteration: for every step, the most bytes one host sends or receives in it, serialised, plus
the step's longest base latency; summed over the steps. Host software overheads (posting,
completions) are not part of either ideal: they are the hosts' cost, not the network's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES, US
from ..wire.headers import roce_frame_len
from .common import Flow, Workload
from .paths import HostPaths


@dataclass(frozen=True)
class FctStats:
    """Completion times in ps of ``count`` flows; percentiles by nearest rank."""

    count: int
    mean_ps: float
    p50_ps: int
    p99_ps: int
    max_ps: int

    @classmethod
    def of(cls, values_ps) -> "FctStats":
        v = sorted(int(x) for x in values_ps)
        if not v:
            raise ConfigError("no completed flow: no completion time to summarise")
        rank = lambda q: v[max(0, math.ceil(q * len(v)) - 1)]      # noqa: E731
        return cls(len(v), sum(v) / len(v), rank(0.50), rank(0.99), v[-1])


@dataclass(frozen=True)
class WorkloadReport:
    label: str
    fct: FctStats                    # measured, post to delivery
    ideal_fct: FctStats              # the same flows' ideals
    slowdown_mean: float             # mean over flows of fct / ideal
    slowdown_p99: float
    slowdown_max: float
    collective_ps: tuple[int, ...]   # per iteration: last end mark - first start mark;
                                     # empty when some host never reached its end
    ideal_collective_ps: int
    missing_flows: int               # workload flows that never completed
    base_rtt_ps: int                 # longest path's round trip (links and switches), reference
    unlogged_note: str = ""          # the message log was full: missing flows may have arrived

    def table(self) -> str:
        us = lambda ps: f"{ps / US:,.3f}"                         # noqa: E731
        f, i = self.fct, self.ideal_fct
        rows = [("flows", f"{f.count}", f"{i.count}", ""),
                ("FCT mean (µs)", us(f.mean_ps), us(i.mean_ps), f"{self.slowdown_mean:.2f}x"),
                ("FCT p50 (µs)", us(f.p50_ps), us(i.p50_ps), ""),
                ("FCT p99 (µs)", us(f.p99_ps), us(i.p99_ps), f"{self.slowdown_p99:.2f}x"),
                ("FCT max (µs)", us(f.max_ps), us(i.max_ps), f"{self.slowdown_max:.2f}x"),
                ("base RTT (µs)", "", us(self.base_rtt_ps), "")]
        for it, t in enumerate(self.collective_ps):
            rows.append((f"iteration {it} (µs)", us(t), us(self.ideal_collective_ps),
                         f"{t / self.ideal_collective_ps:.2f}x"))
        head = (f"workload {self.label}", "measured", "ideal", "slowdown")
        w = [max(len(r[c]) for r in rows + [head]) for c in range(4)]
        line = lambda r: "  ".join(x.ljust(w[0]) if c == 0 else x.rjust(w[c])   # noqa: E731
                                   for c, x in enumerate(r))
        out = [line(head), "  ".join("-" * x for x in w)] + [line(r) for r in rows]
        if self.missing_flows and self.unlogged_note:
            out.append(f"{self.missing_flows} flows not in the results: {self.unlogged_note}")
        elif self.missing_flows:
            out.append(f"{self.missing_flows} flows did not complete (frames dropped: see the "
                       f"run's drops); no collective completion time")
        return "\n".join(out)


def wire_bytes(nbytes: int, mtu_bytes: int) -> int:
    """Bytes a message occupies on the wire: every frame with its headers and Ethernet
    overhead (the first frame also carries the RETH; frames between the first and the last
    are full)."""
    frames = max(1, -(-nbytes // mtu_bytes))
    total = roce_frame_len(max(min(mtu_bytes, nbytes), 0), True)
    if frames > 1:
        total += ((frames - 2) * roce_frame_len(mtu_bytes, False)
                  + roce_frame_len(nbytes - (frames - 1) * mtu_bytes, False))
    return total + frames * ETHERNET_WIRE_OVERHEAD_BYTES


class PathModel:
    """Host link rates and shortest-path base latencies of a scenario's topology. The
    ``*_many`` methods take arrays of node ids and sizes (one entry per flow) and return
    arrays: a report reads thousands of flows, and the paths come from one search per source
    switch (``HostPaths``)."""

    def __init__(self, scenario):
        topo = scenario.topology
        self._mtu = scenario.engine.mtu_bytes
        self._pcie_ps = int(round(scenario.nic.pcie_latency_ns * 1000))
        self._pcie_gbps = scenario.nic.pcie_rate_gbytes_per_s * 8
        self.host_rate_gbps: dict[int, int] = {}
        for link in topo.links:
            for end in (link.a, link.b):
                if end in topo._node_of:
                    self.host_rate_gbps[topo.node_id(end)] = link.config.rate_gbps
        self._rate = np.full(len(topo.hosts), np.nan)
        for node, rate in self.host_rate_gbps.items():
            self._rate[node] = rate
        switch_ps = {s: int(round(topo.switch_latency_ns(s, scenario.switch.latency_ns) * 1000))
                     for s in topo.switches}
        self._paths = HostPaths(topo, switch_ps)

    def path(self, src: int, dst: int) -> tuple[int, int]:
        """(latency, switches crossed) along the fewest-hop path, the least latency among
        those: links plus the pipelines of the switches crossed. Hosts do not forward."""
        lat, switches = self._paths.paths([src], [dst])
        return int(lat[0]), int(switches[0])

    def paths(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """``path`` of every pair ``src[i] -> dst[i]``, as two arrays."""
        return self._paths.paths(src, dst)

    def rate_gbps(self, src: int, dst: int) -> float:
        return min(self.host_rate_gbps[src], self.host_rate_gbps[dst], self._pcie_gbps)

    def _ser_ps(self, nbytes: int, rate_gbps: float) -> int:
        return int(math.ceil(nbytes * 8000 / rate_gbps))

    def _ser_many(self, nbytes: np.ndarray, rate_gbps: np.ndarray) -> np.ndarray:
        """``_ser_ps`` of every (bytes, rate) entry, computed once per distinct pair (flows
        share a few sizes and rates), so the figures are exactly the scalar ones."""
        pairs, inverse = np.unique(np.stack([np.asarray(nbytes, np.float64),
                                             np.asarray(rate_gbps, np.float64)], axis=1),
                                   axis=0, return_inverse=True)
        ser = np.array([self._ser_ps(int(n), r) for n, r in pairs.tolist()], np.int64)
        return ser[inverse.reshape(-1)] if len(ser) else np.zeros(0, np.int64)

    def _wire_many(self, nbytes: np.ndarray) -> np.ndarray:
        sizes, inverse = np.unique(np.asarray(nbytes, np.int64), return_inverse=True)
        wire = np.array([wire_bytes(n, self._mtu) for n in sizes.tolist()], np.int64)
        return wire[inverse.reshape(-1)] if len(wire) else np.zeros(0, np.int64)

    def _pair_rate(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return np.minimum(np.minimum(self._rate[src], self._rate[dst]), self._pcie_gbps)

    def base_ps(self, src: int, dst: int) -> int:
        """One way through an empty fabric: path, store-and-forward, PCIe at both ends."""
        return int(self.base_many([src], [dst])[0])

    def base_many(self, src, dst) -> np.ndarray:
        """``base_ps`` of every pair ``src[i] -> dst[i]``."""
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        lat, switches = self._paths.paths(src, dst)
        frame = wire_bytes(min(self._mtu, 1 << 30), self._mtu)
        ser = self._ser_many(np.full(len(src), frame), self._pair_rate(src, dst))
        return lat + switches * ser + 2 * self._pcie_ps

    def ideal_fct_ps(self, flow: Flow) -> int:
        return int(self.ideal_fct_many([flow.src], [flow.dst], [flow.nbytes])[0])

    def ideal_fct_many(self, src, dst, nbytes) -> np.ndarray:
        """``ideal_fct_ps`` of every flow given by its source, destination and size."""
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        base = self.base_many(src, dst)           # first: names a pair that has no path
        return self._ser_many(self._wire_many(nbytes), self._pair_rate(src, dst)) + base

    def ideal_iteration_ps(self, flows: list[Flow]) -> int:
        """Sum over steps of (busiest host's bytes at its link rate + longest base latency)."""
        if not flows:
            return 0
        src, dst, nbytes, step = (np.array(c, np.int64) for c in
                                  zip(*((f.src, f.dst, f.nbytes, f.step) for f in flows)))
        base = self.base_many(src, dst)
        wire = self._wire_many(nbytes)
        pcie = self._pcie_gbps
        tx = self._ser_many(wire, np.minimum(self._rate[src], pcie))
        rx = self._ser_many(wire, np.minimum(self._rate[dst], pcie))
        steps, of_step = np.unique(step, return_inverse=True)
        of_step = of_step.reshape(-1)
        n = len(self._rate)
        # one key per (step, direction, host); the load of a key is the sum of its flows
        keys, load_of = np.unique(np.concatenate([of_step * 2 * n + src,
                                                  of_step * 2 * n + n + dst]),
                                  return_inverse=True)
        load = np.zeros(len(keys), np.int64)
        np.add.at(load, load_of.reshape(-1), np.concatenate([tx, rx]))
        busiest = np.zeros(len(steps), np.int64)
        np.maximum.at(busiest, keys // (2 * n), load)
        longest = np.zeros(len(steps), np.int64)
        np.maximum.at(longest, of_step, base)
        return int(busiest.sum()) + int(longest.sum())


def flow_messages(workload: Workload, result) -> list:
    """The delivered messages of ``result`` that belong to the workload's flows (same source,
    destination, QP and size), in the result's order."""
    keys = {(f.src, f.dst, f.qp, f.nbytes) for f in workload.flows}
    return [m for m in result.messages if (m.src, m.dst, m.qp, m.bytes) in keys
            and not m.handled_by_nic and m.t_post_ps is not None]


def collective_times_ps(workload: Workload, result) -> tuple[int, ...]:
    """Per iteration, from the first host's start mark to the last host's end mark."""
    out = []
    for it in range(workload.iterations):
        starts = result.marks.get(workload.start_label(it), {})
        ends = result.marks.get(workload.end_label(it), {})
        if len(ends) < len(workload.hosts):
            raise ConfigError(f"workload {workload.label!r} iteration {it}: {len(ends)} of "
                              f"{len(workload.hosts)} hosts reached its end (unfinished run?)")
        out.append(max(int(t) for t in ends.values()) - min(int(t) for t in starts.values()))
    return tuple(out)


def workload_report(workload: Workload, scenario, result) -> WorkloadReport:
    """Measured against ideal, for the flows and iterations of ``workload``."""
    model = PathModel(scenario)
    msgs = flow_messages(workload, result)
    ideal = model.ideal_fct_many([m.src for m in msgs], [m.dst for m in msgs],
                                 [m.bytes for m in msgs]).tolist()
    fct = [m.completion_ps for m in msgs]
    slow = sorted(a / b for a, b in zip(fct, ideal))
    per_iter = [f for f in workload.flows if f.iteration == 0]
    try:
        collective = collective_times_ps(workload, result)
    except ConfigError:
        collective = ()                   # an unfinished run: flows lost, hosts still wait
    return WorkloadReport(
        workload.label, FctStats.of(fct), FctStats.of(ideal), sum(slow) / len(slow),
        slow[max(0, math.ceil(0.99 * len(slow)) - 1)], slow[-1],
        collective, model.ideal_iteration_ps(per_iter),
        len(workload.flows) - len(msgs),
        max(2 * lat for lat in model.paths([f.src for f in per_iter],
                                           [f.dst for f in per_iter])[0].tolist()),
        result.unlogged_note())


def report_text(workload: Workload, scenario, result) -> str:
    """The report's table, or one line saying why there is none (an unfinished run)."""
    try:
        return workload_report(workload, scenario, result).table()
    except ConfigError as exc:
        return f"workload {workload.label}: no report: {exc}"


def report_dict(workload: Workload, scenario, result) -> dict:
    """The report as JSON-ready data (``spin run --json``), or the reason there is none."""
    from dataclasses import asdict
    try:
        return asdict(workload_report(workload, scenario, result))
    except ConfigError as exc:
        return {"label": workload.label, "error": str(exc)}
