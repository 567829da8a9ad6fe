"""Measured collective bandwidth of a fabric, from short runs (virtual time, not formulas): what
an allreduce and an all-to-all over every host of a topology achieve, per host, to set
topologies side by side by cost per unit of bandwidth (``spin topo --compare``).

* allreduce: the NIC-offloaded ring (``nic``, float32) over the hosts in id order, which every
  builder numbers board by board / leaf by leaf, so the ring uses the fabric as a ring placed
  by a scheduler would. It streams at the link bound on one switch (``bench/bench_nic_ring.py``),
  so what it loses elsewhere is the fabric's. Reported as algbw = S / t per host.
* all-to-all: every host sends S/n bytes to every other host (the workload ``all_to_all``, its
  dispatch phase, pairwise order). Reported as bytes each host sent / t.

The allreduce runs lossless (PFC on, as ``measure.lossless``): a ring only ever sends to its
neighbour, so pauses cannot form a cycle. The all-to-all runs over the Ultra-Ethernet-style
transport on trimming switches without PFC, as Ultra Ethernet fabrics carry it: with PFC,
shortest-path routing on a mesh such as HammingMesh lets pauses form a cycle (a PFC deadlock:
at 128 hosts and 64 KiB per pair, 426 ports paused each other and no data moved until the
switches' PFC watchdog dropped their queues).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..config import EngineConfig, HostConfig, NicConfig, SwitchConfig
from ..errors import ConfigError, RunIncompleteError
from ..runs import run
from ..runtime.scenario import Scenario
from ..topology import Topology
from ..workloads.catalog import build_workload
from ..workloads.metrics import collective_times_ps
from .measure import measure

ALLREDUCE_ALGORITHM = "nic"


@dataclass(frozen=True)
class FabricBandwidth:
    """Per host, in GB/s (1e9 B/s): allreduce algbw and all-to-all send bandwidth, with the
    bytes per host each run moved and their virtual times (ps)."""

    hosts: int
    nbytes: int
    allreduce_gbytes_per_s: float
    allreduce_time_ps: int
    all_to_all_gbytes_per_s: float
    all_to_all_time_ps: int

    def to_dict(self) -> dict:
        return asdict(self)


def measure_fabric(topo_factory, nbytes: int) -> FabricBandwidth:
    """Run both collectives on fresh copies of the topology ``topo_factory()`` builds, with
    ``nbytes`` per host (rounded down to whole float32 elements and whole all-to-all chunks)."""
    topo: Topology = topo_factory()
    n = len(topo.hosts)
    if n < 2:
        raise ConfigError(f"fabric bandwidth: {n} host(s); need at least 2")
    chunk = nbytes // n
    if nbytes < 4 * n or chunk < 1:
        raise ConfigError(f"fabric bandwidth: {nbytes} B per host is less than 4 B for each "
                          f"of {n} hosts")
    ar = measure(ALLREDUCE_ALGORITHM, n, nbytes - nbytes % 4, "float32", topology=topo)
    if not ar.correct:
        raise ConfigError(f"fabric bandwidth: the allreduce on {topo.kind} gave a wrong sum")
    memory = max(HostConfig().memory_bytes, -(-3 * n * chunk // 4096) * 4096)
    switch = SwitchConfig.make(pfc=False, trim=True)
    engine = EngineConfig()
    switches = set(topo.switches)
    switch_ports = sum(len(ports) for name, ports in topo.ports().items() if name in switches)
    queued = switch_ports * (switch.port_buffer_bytes // engine.mtu_bytes + 1)
    sc = Scenario(topo_factory(), host=HostConfig(memory_bytes=memory),
                  nic=NicConfig.make(transport={"kind": "ue"}), switch=switch,
                  engine=EngineConfig.for_fabric(n, queued_frames=queued))   # all to all
    wl = build_workload(sc, "all_to_all", message_bytes=chunk, phases="dispatch")
    result = run(sc, 1)
    if result.unfinished_hosts():
        raise RunIncompleteError(
            f"fabric bandwidth: the all-to-all of {chunk:,} B per pair did not finish on "
            f"{topo.kind} ({len(result.unfinished_hosts())} hosts waiting; frames dropped: "
            f"{result.drops or 'none'}); try a smaller --measure-bytes")
    t_a2a = collective_times_ps(wl, result)[0]
    return FabricBandwidth(
        hosts=n, nbytes=nbytes, allreduce_gbytes_per_s=ar.algbw_gbytes_per_s,
        allreduce_time_ps=ar.time_ps,
        all_to_all_gbytes_per_s=(n - 1) * chunk / t_a2a * 1000,
        all_to_all_time_ps=t_a2a)
