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

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache

from ..errors import ConfigError
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES, US
from ..wire.headers import roce_frame_len
from .common import Flow, Workload


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
        if self.missing_flows:
            out.append(f"{self.missing_flows} flows did not complete (frames dropped: see the "
                       f"run's drops); no collective completion time")
        return "\n".join(out)


def wire_bytes(nbytes: int, mtu_bytes: int) -> int:
    """Bytes a message occupies on the wire: every frame with its headers and Ethernet
    overhead (the first frame also carries the RETH)."""
    frames = max(1, -(-nbytes // mtu_bytes))
    total = 0
    for k in range(frames):
        payload = min(mtu_bytes, nbytes - k * mtu_bytes)
        total += roce_frame_len(max(payload, 0), k == 0) + ETHERNET_WIRE_OVERHEAD_BYTES
    return total


class PathModel:
    """Host link rates and shortest-path base latencies of a scenario's topology."""

    def __init__(self, scenario):
        topo = scenario.topology
        self._mtu = scenario.engine.mtu_bytes
        self._pcie_ps = int(round(scenario.nic.pcie_latency_ns * 1000))
        self._pcie_gbps = scenario.nic.pcie_rate_gbytes_per_s * 8
        self._adj: dict[str, list[tuple[str, int]]] = {d: [] for d in topo.device_names()}
        self.host_rate_gbps: dict[int, int] = {}
        for link in topo.links:
            lat = int(round(link.config.latency_ns * 1000))
            self._adj[link.a].append((link.b, lat))
            self._adj[link.b].append((link.a, lat))
            for end in (link.a, link.b):
                if end in topo._node_of:
                    self.host_rate_gbps[topo.node_id(end)] = link.config.rate_gbps
        self._switch_ps = {s: int(round(topo.switch_latency_ns(s, scenario.switch.latency_ns)
                                        * 1000)) for s in topo.switches}
        self._hosts = topo.hosts
        self.path = lru_cache(maxsize=None)(self._path)

    def _path(self, src: int, dst: int) -> tuple[int, int]:
        """(latency, switches crossed) along the fewest-hop path, the least latency among
        those: links plus the pipelines of the switches crossed. Hosts do not forward."""
        start, goal = self._hosts[src], self._hosts[dst]
        best = {start: (0, 0)}
        heap = [(0, 0, start)]
        while heap:
            hops, lat, dev = heapq.heappop(heap)
            if dev == goal:
                return lat, hops - 1
            if (hops, lat) > best[dev] or (dev != start and dev not in self._switch_ps):
                continue                                  # stale entry, or a host: no transit
            for peer, l_ps in self._adj[dev]:
                cost = (hops + 1, lat + l_ps + self._switch_ps.get(peer, 0))
                if cost < best.get(peer, (1 << 62, 0)):
                    best[peer] = cost
                    heapq.heappush(heap, (*cost, peer))
        raise ConfigError(f"host {src} cannot reach host {dst}")

    def rate_gbps(self, src: int, dst: int) -> float:
        return min(self.host_rate_gbps[src], self.host_rate_gbps[dst], self._pcie_gbps)

    def _ser_ps(self, nbytes: int, rate_gbps: float) -> int:
        return int(math.ceil(nbytes * 8000 / rate_gbps))

    def base_ps(self, src: int, dst: int) -> int:
        """One way through an empty fabric: path, store-and-forward, PCIe at both ends."""
        lat, switches = self.path(src, dst)
        frame = wire_bytes(min(self._mtu, 1 << 30), self._mtu)
        return lat + switches * self._ser_ps(frame, self.rate_gbps(src, dst)) + 2 * self._pcie_ps

    def ideal_fct_ps(self, flow: Flow) -> int:
        ser = self._ser_ps(wire_bytes(flow.nbytes, self._mtu), self.rate_gbps(flow.src, flow.dst))
        return ser + self.base_ps(flow.src, flow.dst)

    def ideal_iteration_ps(self, flows: list[Flow]) -> int:
        """Sum over steps of (busiest host's bytes at its link rate + longest base latency)."""
        total = 0
        for step in sorted({f.step for f in flows}):
            load: dict[tuple[str, int], int] = {}
            base = 0
            for f in (f for f in flows if f.step == step):
                for key, host in ((("tx", f.src), f.src), (("rx", f.dst), f.dst)):
                    load[key] = load.get(key, 0) + self._ser_ps(
                        wire_bytes(f.nbytes, self._mtu),
                        min(self.host_rate_gbps[host], self._pcie_gbps))
                base = max(base, self.base_ps(f.src, f.dst))
            total += max(load.values()) + base
        return total


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
    sizes = {}
    for f in workload.flows:
        sizes.setdefault((f.src, f.dst, f.qp, f.nbytes), f)
    ideal = [model.ideal_fct_ps(sizes[(m.src, m.dst, m.qp, m.bytes)]) for m in msgs]
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
        max(2 * model.path(f.src, f.dst)[0] for f in per_iter))


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
