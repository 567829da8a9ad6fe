"""Every collective against its link bound, in the network-bound configuration: hosts of the
``network`` preset (no per-message overhead, reduction at HBM speed) on a star with lossless
switches, so only the algorithm and the fabric set the time.

The bound of a collective is what no algorithm can beat on that star: the bytes the busiest
host link must carry, at the payload rate B = R * MTU / (MTU + 82 B of headers and wire
overhead), plus the latency of one packet from its post to its completion at the receiver
(``spin.collectives.theory.streaming_ring_bound``). Per rank, with S as nccl-tests counts it:
all-gather, reduce-scatter and all-to-all move (n-1)/n S through each rank's link, all-reduce
2(n-1)/n S, and a broadcast S through every receiver's link.

Times are from the ranks' marks (first start to last end), not from the run's last event.
Payload is generated (no host memory) unless the hosts add it (reduce-scatter, all-reduce);
those too run with generated payload when asked (``payload``), their reductions then timed but
not computed (``spin.collectives.common``), for sizes whose bytes this machine cannot hold.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..collectives.measure import lossless, measure
from ..collectives.theory import streaming_ring_bound
from ..config import EngineConfig, HostConfig, NicConfig, SwitchConfig
from ..errors import ConfigError
from ..runs import run
from ..describe.scenario import Scenario
from ..topology import Topology
from . import collectives as other
from .collective_choice import PathCosts, resolve, resolve_allreduce

KINDS = ("all_gather", "reduce_scatter", "all_to_all", "broadcast", "all_reduce")
PRESET = "network"
PAGE_BYTES = 4096


@dataclass(frozen=True)
class BoundRow:
    """One collective at one size against its bound (times in us)."""

    kind: str
    algorithm: str
    ranks: int
    nbytes: int
    time_us: float
    bound_us: float
    packet_events: int
    payload: str = "generated"     # "stored": the hosts kept (and added) the bytes

    @property
    def ratio(self) -> float:
        """time / bound: 1.0 is the bound itself."""
        return self.time_us / self.bound_us

    def to_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


def link_bytes(kind: str, n: int, nbytes: int) -> float:
    """Bytes through the busiest host link of a ``kind`` of ``nbytes`` on ``n`` ranks."""
    if kind == "broadcast":
        return float(nbytes)
    return (2 if kind == "all_reduce" else 1) * (n - 1) / n * nbytes


def bound_us(scenario, kind: str, n: int, nbytes: int) -> float:
    """One packet's latency plus the busiest link's bytes at the payload rate (us)."""
    b = streaming_ring_bound(scenario)
    return (b.latency_ps + link_bytes(kind, n, nbytes) / b.bandwidth_bytes_per_ps) / 1e6


def host_memory_bytes(kind: str, n: int, nbytes: int) -> int:
    """Host memory per rank the layout spans."""
    if kind == "all_reduce":
        from ..collectives import algorithm
        need = algorithm(allreduce_algorithm(n, nbytes)).plan_memory(n, nbytes // 4, "float32")
    else:
        need = other.memory_needed(kind, n, nbytes)
    return -(-need // PAGE_BYTES) * PAGE_BYTES


def stored(kind: str) -> bool:
    """Whether a measurement keeps the bytes in host memory: only where the hosts add them
    (the others run with generated payload, so host memory is never allocated)."""
    return kind in ("reduce_scatter", "all_reduce")


def allreduce_algorithm(n: int, nbytes: int) -> str:
    """What "auto" picks on the star (``resolve_allreduce``): the ring for large blocks; for
    small blocks the cheapest of the ring, direct sends and (power-of-two groups)
    Rabenseifner, as the other collectives choose."""
    costs = PathCosts.of(Topology.star(n), HostConfig.preset(PRESET), NicConfig(),
                         SwitchConfig())
    return resolve_allreduce(n, nbytes, costs, tuple(range(n)))


def _engine(n: int, messages: int) -> EngineConfig:
    """Tables sized for ``n`` hosts and ``messages`` posted at once (in all): a message in
    flight may hold an event and a frame slot."""
    engine = EngineConfig.for_fabric(n)
    return engine.model_copy(update={
        "max_tx_messages": max(engine.max_tx_messages, messages),
        "max_rx_messages": max(engine.max_rx_messages, messages),
        "max_events_pending": max(engine.max_events_pending, 2 * messages),
        "buffer_slots": max(engine.buffer_slots, 2 * messages)})


def measure_bound(kind: str, n: int, nbytes: int, payload: str | None = None,
                  algo: str = "auto") -> BoundRow:
    """Run ``kind`` of ``nbytes`` per rank on a star of ``n`` network-preset hosts, with
    ``payload`` stored or generated (None: stored where the hosts add the bytes, as
    ``stored`` says; a stored all-reduce's sums are checked), by ``algo`` (a collective other
    than all-reduce: "auto" picks by size as a replay does with the switches' offload off;
    e.g. "multicast" measures the broadcast by switch multicast)."""
    if kind == "all_reduce" and algo != "auto":
        raise ConfigError(f"all_reduce algo={algo!r}; valid choice here: auto (the "
                          f"all-reduce is measured with the algorithm auto picks)")
    host = HostConfig.preset(PRESET)
    payload = payload or ("stored" if stored(kind) else "generated")
    if payload not in ("stored", "generated"):
        raise ConfigError(f"payload={payload!r}; valid choices: stored, generated")
    if kind == "all_reduce" and payload == "stored":
        name = allreduce_algorithm(n, nbytes)
        m = measure(name, n, nbytes, host=host, engine=_engine(n, 2 * n * (n - 1)))
        if not m.correct:
            raise AssertionError(f"{name} all-reduce on {n} ranks gave a wrong sum")
        sc = Scenario(Topology.star(n), host=host)
        return BoundRow(kind, name, n, nbytes, m.time_ps / 1e6, bound_us(sc, kind, n, nbytes),
                        m.packet_events, payload)
    memory = host_memory_bytes(kind, n, nbytes)
    sc = Scenario(Topology.star(n), host=host.model_copy(update={"memory_bytes": memory}),
                  switch=lossless())
    # all posted at once: all-to-all, and the direct all-gather and reduce-scatter
    messages = n * (n - 1) if kind in ("all_to_all", "all_gather", "reduce_scatter") else 0
    if kind == "broadcast" and resolve(kind, algo, n, nbytes,
                                       PathCosts.of_scenario(sc)) == "scatter_direct":
        messages = n * other.scatter_direct_messages(sc, n, nbytes)
    sc.engine = _engine(n, messages)
    sc.payload = payload           # generated: timing only, nothing reads the bytes
    hosts = tuple(range(n))
    if kind == "all_reduce":       # generated: built directly, its sums left unchecked
        from ..collectives import algorithm
        name = allreduce_algorithm(n, nbytes)
        sc.engine = _engine(n, 2 * n * (n - 1))
        algorithm(name).build(sc, nbytes // 4, "float32", hosts=hosts)
    else:
        for r in hosts:
            sc.host_program(r).mark("start")
        name = other.build(kind, sc, hosts, nbytes, qp=0, algo=algo)
        for r in hosts:
            sc.host_program(r).mark("end")
    result = run(sc).require_finished()
    t = max(result.mark("end", r) for r in hosts) - min(result.mark("start", r) for r in hosts)
    return BoundRow(kind, name, n, nbytes, t / 1e6, bound_us(sc, kind, n, nbytes),
                    result.packet_events, payload)
