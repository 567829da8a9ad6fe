"""What every workload shares: the ``Flow`` and ``Workload`` records a builder returns, the
start skew, the send-buffer pattern and the memory and QP checks.

Memory layout of every workload: a host's send buffer starts at address 0, its receive buffer
right after it; within one iteration every flow lands in its own region of its receiver, so a
test can check every delivered byte; iterations reuse the same regions.

QPs: the entropy value of a RoCE flow (its UDP source port) mixes source, destination and QP,
so flows between different pairs already hash apart under per-flow ECMP. A workload gives a
flow its own QP only where two flows share a pair (the htsim import), or where a receiver must
tell flows apart to wait for them (one QP per phase of all-to-all).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, HostMemoryError


@dataclass(frozen=True)
class Flow:
    """One message of a workload: ``nbytes`` from ``src``'s ``local_addr`` to ``dst``'s
    ``remote_addr`` on ``qp``, in ``iteration``; ``step`` orders the dependent steps of a
    collective (ring step, all-to-all phase; 0 for one-shot patterns)."""

    src: int
    dst: int
    qp: int
    nbytes: int
    local_addr: int
    remote_addr: int
    iteration: int = 0
    step: int = 0
    origin: tuple[int, int] | None = None   # (node, addr) of the send buffer the bytes came
                                            # from, when forwarded (all-to-all combine)


@dataclass
class Workload:
    """What a builder added to a scenario: its flows, the hosts taking part and the mark labels
    that bound each iteration (``start_label(i)`` when a host enters iteration ``i``, after its
    start skew; ``end_label(i)`` when it has sent and received all of it)."""

    kind: str
    label: str
    hosts: tuple[int, ...]
    iterations: int
    flows: list[Flow] = field(default_factory=list)
    send_bytes: int = 0            # size of every host's send buffer at address 0
    recv_addr: int = 0             # start of the receive buffer
    fill: bool = True

    def start_label(self, iteration: int) -> str:
        return f"{self.label}.start.{iteration}"

    def end_label(self, iteration: int) -> str:
        return f"{self.label}.end.{iteration}"

    def expected_bytes(self, flow: Flow) -> bytes:
        """What ``flow`` leaves in its receiver's memory (its sender's send-buffer pattern)."""
        if not self.fill:
            raise ConfigError(f"workload {self.label!r} was built with fill = false: its send "
                              f"buffers hold zeros, there is no pattern to check")
        node, addr = flow.origin or (flow.src, flow.local_addr)
        return send_pattern(node, addr + flow.nbytes)[addr:].tobytes()


def send_pattern(node: int, nbytes: int) -> np.ndarray:
    """A byte pattern that differs between hosts and along the buffer (period 251, a prime,
    so no chunk of a power-of-two size repeats another one)."""
    return ((np.arange(nbytes, dtype=np.int64) + 37 * node + 1) % 251).astype(np.uint8)


def start_skews_ns(seed: int, skew_ns: float, iterations: int, n_hosts: int) -> np.ndarray:
    """Per iteration and host, a delay uniform in [0, skew_ns]: deterministic in ``seed``."""
    if skew_ns <= 0:
        return np.zeros((iterations, n_hosts))
    rng = np.random.default_rng([seed, 0x5CE])
    return rng.uniform(0.0, skew_ns, (iterations, n_hosts))


def check_hosts(scenario, kind: str, needed: int) -> int:
    n = scenario.n_hosts
    if n < needed:
        raise ConfigError(f"{kind} needs at least {needed} hosts; the topology has {n}")
    return n


def check_qps(scenario, first: int, count: int) -> None:
    last = first + count - 1
    if last >= scenario.host.qps:
        raise ConfigError(f"qp = {first}: the workload uses qps {first}..{last}, beyond "
                          f"host.qps = {scenario.host.qps}; lower qp or raise [host] qps")


def check_memory(scenario, kind: str, needed_bytes: int, what: str) -> None:
    """Refuse a layout that does not fit, saying which memory size would."""
    have = scenario.host.memory_bytes
    if needed_bytes > have:
        raise HostMemoryError(f"{kind} needs {needed_bytes:,} B of host memory per host "
                              f"({what}); host.memory_bytes = {have:,}: set [host] "
                              f"memory_bytes >= {needed_bytes}", needed_bytes)


def prepare(scenario, workload: Workload, senders) -> None:
    """Refuse a label another workload of the scenario marks with, then write the
    send-buffer pattern of every sender (when ``fill``)."""
    if workload.start_label(0) in scenario.mark_index:
        raise ConfigError(f"label = {workload.label!r}: another workload of this scenario "
                          f"already marks with it; give each workload its own label")
    if workload.fill and workload.send_bytes:
        for h in senders:
            scenario.write_host_memory(h, 0, send_pattern(h, workload.send_bytes))


def begin_iteration(program, workload: Workload, iteration: int, skew_ns: float):
    """Start skew (host busy, as the computation before a collective), then the start mark."""
    if skew_ns > 0:
        program.compute(float(skew_ns))
    return program.mark(workload.start_label(iteration))
