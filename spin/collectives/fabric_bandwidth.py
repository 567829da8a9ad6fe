"""Measured collective bandwidth of a fabric, from short runs (virtual time, not formulas): what
an allreduce and an all-to-all over every host of a topology achieve, per host, to set
topologies side by side by cost per unit of bandwidth (``spin topo --compare``).

* allreduce: the NIC-offloaded two-dimensional rings (``nic-ring2d``, int32), with four streams
  on a HammingMesh, so every accelerator drives its four ports, and one elsewhere (a host's one
  link), on the grid ``spin.collectives.grid.grid_for`` picks (the accelerators' rows and
  columns; servers and rails on a rail-optimised fabric; hosts in id order otherwise, which
  every builder numbers leaf by leaf). Every NIC is an accelerator's (``ACCELERATOR_NIC``: four
  PsPIN units, a 200 GB/s path to memory) on every fabric. Reported as algbw = S / t per host,
  beside the injection bound (``spin.collectives.theory.injection_bound_ps``) as a bandwidth.
* all-to-all: every host sends S/n bytes to every other host (the workload ``all_to_all``, its
  dispatch phase, pairwise order), or, from ``SHIFTS_FROM_HOSTS`` hosts on, S/k to the hosts k
  random offsets away (the workload ``shifts``: n k messages instead of n (n - 1)). Reported as
  bytes each host sent / t.

The allreduce runs without PFC on deep buffers (``nic_ring2d.run_configs``: its rings never
incast; a lost frame would leave a rank waiting, and the run would say so). The all-to-all runs
over the Ultra-Ethernet-style transport on trimming switches without PFC, as Ultra Ethernet
fabrics carry it: with PFC, shortest-path routing on a mesh such as HammingMesh lets pauses
form a cycle (a PFC deadlock: at 128 hosts and 64 KiB per pair, 426 ports paused each other and
no data moved until the switches' PFC watchdog dropped their queues).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..config import EngineConfig, HostConfig, NicConfig, SwitchConfig
from ..errors import ConfigError, RunIncompleteError
from ..runs import run
from ..describe.scenario import Scenario
from ..topology import Topology
from ..workloads.catalog import build_workload
from ..workloads.metrics import collective_times_ps
from . import algorithm
from .measure import measure
from .nic_ring2d import ACCELERATOR_NIC
from .theory import injection_bound_ps

ALLREDUCE_ALGORITHM = "nic-ring2d"
# The hosts of both runs (HOST_PRESETS): the allreduce is reduced by the NICs, the all-to-all
# only sends, so a host's reduction speed plays no part; the preset is stated with the figures.
HOST_PRESET = "cpu"
SHIFTS_FROM_HOSTS = 1024          # from here on the all-to-all is sampled by shifts
SHIFTS = 64


@dataclass(frozen=True)
class FabricBandwidth:
    """Per host, in GB/s (1e9 B/s): allreduce algbw and its injection bound, all-to-all send
    bandwidth and the peers each host sent to, with the bytes per host each run moved
    (``nbytes`` the allreduce's, ``all_to_all_bytes`` the all-to-all's) and their virtual
    times (ps)."""

    hosts: int
    nbytes: int
    allreduce_gbytes_per_s: float
    allreduce_time_ps: int
    all_to_all_gbytes_per_s: float
    all_to_all_time_ps: int
    allreduce_bound_gbytes_per_s: float = 0.0
    allreduce_algorithm: str = ALLREDUCE_ALGORITHM
    all_to_all_peers: int = 0
    all_to_all_bytes: int = 0
    host_preset: str = HOST_PRESET

    def to_dict(self) -> dict:
        return asdict(self)


def accelerator_nic(n: int, nbytes: int) -> NicConfig:
    """The allreduce's NIC tables with an accelerator NIC's units and memory path."""
    nic = algorithm(ALLREDUCE_ALGORITHM).configs(n, nbytes)["nic"]
    return NicConfig.make(**{**nic.model_dump(), **ACCELERATOR_NIC})


def allreduce_bound_gbytes_per_s(topo: Topology, nbytes: int) -> float:
    """The injection bound of the allreduce on every host of ``topo`` as a bandwidth per host,
    with the accelerator NIC and the engine's default MTU."""
    n = len(topo.hosts)
    bound_ps = injection_bound_ps(topo, range(n), nbytes, mtu_bytes=EngineConfig().mtu_bytes,
                                  pcie_gbytes_per_s=accelerator_nic(n, nbytes)
                                  .pcie_rate_gbytes_per_s)
    return nbytes / bound_ps * 1000


def measure_allreduce(topo: Topology, nbytes: int) -> tuple[float, int, float]:
    """(algbw GB/s, time ps, injection bound GB/s) of the allreduce on every host of ``topo``."""
    n = len(topo.hosts)
    ar = measure(ALLREDUCE_ALGORITHM, n, nbytes, "int32", topology=topo,
                 nic=accelerator_nic(n, nbytes), host=HostConfig.preset(HOST_PRESET))
    if not ar.correct:
        raise ConfigError(f"fabric bandwidth: the allreduce on {topo.kind} gave a wrong sum")
    return ar.algbw_gbytes_per_s, ar.time_ps, allreduce_bound_gbytes_per_s(topo, nbytes)


def measure_all_to_all(topo_factory, nbytes: int) -> tuple[float, int, int]:
    """(GB/s sent per host, time ps, peers per host) of the all-to-all of ``nbytes`` per host
    (sampled by shifts from SHIFTS_FROM_HOSTS hosts on)."""
    topo: Topology = topo_factory()
    n = len(topo.hosts)
    peers = n - 1 if n < SHIFTS_FROM_HOSTS else min(SHIFTS, n - 1)
    chunk = nbytes // peers
    if chunk < 1:
        raise ConfigError(f"fabric bandwidth: {nbytes} B per host is less than 1 B for each "
                          f"of {peers} peers")
    buffers = 3 * n * chunk if peers == n - 1 else 2 * peers * chunk
    host = HostConfig.preset(HOST_PRESET)
    memory = max(host.memory_bytes, -(-buffers // 4096) * 4096)
    switch = SwitchConfig.make(pfc=False, trim=True)
    engine = EngineConfig()
    switches = set(topo.switches)
    switch_ports = sum(len(ports) for name, ports in topo.ports().items() if name in switches)
    frames = n * peers * -(-chunk // engine.mtu_bytes)           # every data frame of the run
    queued = min(switch_ports * (switch.port_buffer_bytes // engine.mtu_bytes + 1), frames)
    messages = n * peers + n                         # every message of the run at once
    # Pending events: every frame of the run may be in flight at once (each has its arrival
    # or departure pending) plus a timer or two per message. Four per message was measured
    # short: 569k pending at 2,048 hosts on rail_optimized, 4.3 per message, and the 4,096-host
    # comparison ran out of events there.
    events = frames + 2 * messages
    base = EngineConfig.for_fabric(n)
    sc = Scenario(topo_factory(), host=host.model_copy(update={"memory_bytes": memory}),
                  nic=NicConfig.make(transport={"kind": "ue"}), switch=switch,
                  engine=EngineConfig.for_fabric(
                      n, queued_frames=queued,
                      max_tx_messages=max(base.max_tx_messages, messages),
                      max_rx_messages=max(base.max_rx_messages, messages),
                      max_events_pending=max(base.max_events_pending, events)))
    if peers == n - 1:
        wl = build_workload(sc, "all_to_all", message_bytes=chunk, phases="dispatch")
    else:     # thousands of hosts: payload generated from (node, address), not stored
        wl = build_workload(sc, "shifts", message_bytes=chunk, shifts=peers,
                            payload="generated")
    result = run(sc, 1)
    if result.unfinished_hosts():
        raise RunIncompleteError(
            f"fabric bandwidth: the all-to-all of {chunk:,} B per pair did not finish on "
            f"{topo.kind} ({len(result.unfinished_hosts())} hosts waiting; frames dropped: "
            f"{result.drops or 'none'}); try a smaller --measure-bytes")
    t = collective_times_ps(wl, result)[0]
    return peers * chunk / t * 1000, t, peers


def measure_fabric(topo_factory, nbytes: int, a2a_bytes: int | None = None) -> FabricBandwidth:
    """Run both collectives on fresh copies of the topology ``topo_factory()`` builds, with
    ``nbytes`` per host for the allreduce (rounded down to whole int32 elements) and
    ``a2a_bytes`` (default ``nbytes``, rounded down to whole chunks) for the all-to-all."""
    topo: Topology = topo_factory()
    n = len(topo.hosts)
    a2a_bytes = nbytes if a2a_bytes is None else a2a_bytes
    if n < 2:
        raise ConfigError(f"fabric bandwidth: {n} host(s); need at least 2")
    if min(nbytes, a2a_bytes) < 4 * n:
        raise ConfigError(f"fabric bandwidth: {min(nbytes, a2a_bytes)} B per host is less "
                          f"than 4 B for each of {n} hosts")
    ar_bw, ar_t, bound = measure_allreduce(topo, nbytes - nbytes % 4)
    a2a_bw, a2a_t, peers = measure_all_to_all(topo_factory, a2a_bytes)
    return FabricBandwidth(
        hosts=n, nbytes=nbytes, allreduce_gbytes_per_s=ar_bw, allreduce_time_ps=ar_t,
        all_to_all_gbytes_per_s=a2a_bw, all_to_all_time_ps=a2a_t,
        allreduce_bound_gbytes_per_s=bound, all_to_all_peers=peers,
        all_to_all_bytes=a2a_bytes)
