"""Which algorithm runs a collective other than all-reduce, when a trace leaves it to spin
("auto"): the choice MPI libraries and NCCL make by size, decided with the alpha-beta costs of
the run's own configs rather than with fixed thresholds wherever the algorithms' costs differ
in kind (the broadcasts).

* all-gather / reduce-scatter: while a block is small, recursive doubling / halving on
  power-of-two groups (log2 n steps where a step's latency outweighs its block on the wire), or
  direct sends (every rank sends each block straight to its owner: one step of latency, n-1
  messages per rank) where the hosts' per-message overheads are cheaper than those steps; the
  ring (bandwidth-optimal, every link busy) for large blocks, or where the ranks sit in local
  groups with faster links inside (servers on a rail-optimised fabric,
  ``spin.collectives.locality``) the hierarchical rings, which put only 1/g of the ring's
  bytes on the links between groups. Direct sends and recursive doubling / halving are
  estimated through an oversubscribed switch's uplinks (``PathCosts.uplink_factor``).
* all-reduce ("auto" where a trace or ``--algo`` asks for it): for large blocks the
  hierarchical rings where the ranks sit in local groups with faster links inside, else the
  ring; for small ones the cheapest of the ring, direct sends and Rabenseifner
  (``resolve_allreduce``).
* broadcast: a binomial tree below 12 KiB, as MPICH; above it the cheapest of the tree, a chain
  and a double binary tree (NCCL's; they pay off when the hosts pipeline chunks), van de
  Geijn's scatter + all-gather by recursive doubling or by a ring, and the scatter + direct
  all-gather pipelined by chunk (two hops of latency whatever n, but the last relay starts
  n-1 chunks late: it wins while that ramp is shorter than the tree's extra hops). Where the
  switches offload collectives (``PathCosts.in_network``, off by default) and every rank hangs
  off a switch: switch multicast (one hop of latency, the root's link carrying S once), at
  every size above two ranks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..collectives.locality import local_groups
from ..collectives.switch_broadcast import can_multicast
from ..config import HostConfig, NicConfig, SwitchConfig
from ..errors import ConfigError
from ..suggest import did_you_mean

ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_gather": ("auto", "ring", "rd", "direct", "hierarchical"),
    "reduce_scatter": ("auto", "ring", "rh", "direct", "hierarchical"),
    "all_to_all": ("pairwise",),
    "broadcast": ("auto", "binomial", "chain", "double_tree", "scatter_ring", "scatter_rd",
                  "scatter_direct", "multicast"),
    "barrier": ("dissemination",),
}
POWER_OF_TWO_ONLY = ("rd", "rh", "scatter_rd")
# Blocks up to this size go by recursive doubling (all-gather) or halving (reduce-scatter) on
# a power-of-two group: log2 n steps instead of the ring's n-1. 64 KiB is 1.3 us at 400 Gb/s,
# under one message's latency. MPICH switches at 512 KiB in all
# (MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE, REDSCAT_COMMUTATIVE_LONG_MSG_SIZE): the same point on 8 ranks.
LOG_STEP_MAX_BLOCK_BYTES = 64 * 1024
BCAST_SHORT_BYTES = 12 * 1024    # MPICH's MPIR_CVAR_BCAST_SHORT_MSG_SIZE: a tree below it
SCATTER_CHUNKS_PER_PIECE = 64    # scatter + direct broadcast: chunks per relay's piece
OVERHEAD_SHARE = 0.1    # per-message host overheads: at most this share of a chunk's wire time


@dataclass(frozen=True)
class PathCosts:
    """alpha-beta costs of one message between two hosts: ``alpha_ns`` is its fixed part (host
    overheads, three PCIe crossings, two links and a switch: the least any fabric adds) and
    ``bytes_per_ns`` the slowest link's rate. ``pipelined``: hosts move blocks in chunks.
    ``in_network``: the switches offload collectives (``auto`` may pick switch multicast)."""

    alpha_ns: float
    bytes_per_ns: float
    pipelined: bool
    overhead_ns: float = 0.0     # host time per message (send and receive overheads)
    frame_bytes: int = 1024      # payload bytes per frame (EngineConfig.mtu_bytes)
    pause_bytes: int = 32 * 1024     # a switch port's PFC pause threshold (pfc_xoff_bytes)
    chunk_cap_bytes: int = 0     # HostConfig.pipeline_chunk_bytes
    topology: object = field(default=None, compare=False, repr=False)   # for local groups
    in_network: bool = False
    # the worst switch's host links' capacity over its links to other switches (1: none
    # oversubscribed), and how many hosts hang off it (``oversubscription``)
    oversubscription: float = 1.0
    leaf_hosts: int = 0

    @classmethod
    def of(cls, topology, host: HostConfig, nic: NicConfig, switch: SwitchConfig,
           mtu_bytes: int = 1024, in_network: bool = False) -> PathCosts:
        """The costs of ``topology`` with these configs (``mtu_bytes``: the engine's;
        ``in_network``: the switches offload collectives)."""
        links = [link.config for link in topology.links]
        link_ns = max((c.latency_ns for c in links), default=0.0)
        rate_gbps = min((c.rate_gbps for c in links), default=1)
        alpha = (host.send_overhead_ns + host.recv_overhead_ns + 3 * nic.pcie_latency_ns
                 + 2 * link_ns + switch.latency_ns)
        return cls(alpha, rate_gbps / 8, host.pipeline_chunk_bytes > 0,
                   host.send_overhead_ns + host.recv_overhead_ns, mtu_bytes,
                   switch.pfc_xoff_bytes, host.pipeline_chunk_bytes, topology, in_network,
                   *oversubscription(topology))

    @classmethod
    def of_scenario(cls, scenario) -> PathCosts:
        return cls.of(scenario.topology, scenario.host, scenario.nic, scenario.switch,
                      scenario.engine.mtu_bytes)

    def scatter_chunk_bytes(self, n: int, nbytes: int) -> int:
        """Chunk of the scatter + direct broadcast (0: pieces whole), as
        ``spin.training.collectives.scatter_direct_chunk_bytes`` cuts it."""
        if not self.pipelined:
            return 0
        floor = max(self.frame_bytes, int(self.overhead_ns * self.bytes_per_ns / OVERHEAD_SHARE))
        cap = min(self.chunk_cap_bytes, max(floor, self.pause_bytes // 4))
        piece = -(-nbytes // max(1, n - 1))
        chunk = min(cap, max(floor, -(-piece // SCATTER_CHUNKS_PER_PIECE)))
        return max(self.frame_bytes, chunk // self.frame_bytes * self.frame_bytes)

    def small_blocks_ns(self, algo: str, n: int, nbytes: int) -> float:
        """Estimated time of an all-gather or reduce-scatter of small blocks: log2 n steps
        (recursive doubling or halving), or one step whose n-1 messages cost each rank its
        overheads (direct), or n-1 steps (ring); each moves (n-1)/n S through a rank's link.
        Direct sends and recursive doubling or halving send most of it to other switches' ranks,
        so on an oversubscribed switch those bytes share its uplinks (``uplink_factor``); a
        ring leaves a switch by one neighbour, one link's worth."""
        wire = (n - 1) / n * nbytes / self.bytes_per_ns
        if algo == "direct":
            return self.alpha_ns + max(wire * self.uplink_factor(n), (n - 1) * self.overhead_ns)
        if algo in ("rd", "rh"):
            return (n - 1).bit_length() * self.alpha_ns + wire * self.uplink_factor(n)
        return (n - 1) * self.alpha_ns + wire

    def uplink_factor(self, n: int) -> float:
        """How much longer than its own link a rank's bytes to every other rank take to leave
        the worst-oversubscribed switch: its g ranks send (n-g)/(n-1) of their bytes off it,
        through uplinks of 1/``oversubscription`` of their links' capacity (at least 1: the
        rank's own link). Assumes the job fills that switch (its g = min(leaf hosts, n))."""
        if self.oversubscription <= 1 or self.leaf_hosts <= 0 or n < 2:
            return 1.0
        g = min(self.leaf_hosts, n)
        return max(1.0, self.oversubscription * (n - g) / (n - 1))

    def broadcast_ns(self, algo: str, n: int, nbytes: int) -> float:
        """Estimated time of a broadcast of ``nbytes`` on ``n`` ranks with ``algo``."""
        t, a = nbytes / self.bytes_per_ns, self.alpha_ns
        log_n = (n - 1).bit_length()
        if algo == "chain":
            return t + (n - 1) * a if self.pipelined else (n - 1) * (t + a)
        if algo == "double_tree":          # the root, then trees of depth log2 n
            return t + (log_n + 1) * a if self.pipelined else (log_n + 1) * (t + a)
        if algo == "scatter_ring":
            return 2 * t + n * a
        if algo == "scatter_rd":
            return 2 * t + (log_n + 1) * a
        if algo == "multicast":            # the switches copy: one hop
            return t + a
        if algo == "scatter_direct":       # two hops; relay q starts q chunks late
            piece = nbytes / max(1, n - 1)
            chunk = self.scatter_chunk_bytes(n, nbytes) or piece
            sends = (n - 2) * -(-piece // chunk)          # messages per relay
            return max(t, sends * self.overhead_ns) + (n - 1) * chunk / self.bytes_per_ns + 2 * a
        return log_n * (t + a)                                  # binomial


def oversubscription(topology) -> tuple[float, int]:
    """(the largest ratio, over switches with both hosts and other switches on their ports, of
    the host links' capacity to the links' to switches, the hosts on that switch); (1.0, 0)
    where no switch has both (a star) or the topology is unknown."""
    if topology is None:
        return 1.0, 0
    ports, switches = topology.ports(), set(topology.switches)
    worst = (1.0, 0)
    for s in topology.switches:
        down = [topology.links[i].config.rate_gbps for i, peer in ports[s]
                if peer not in switches]
        up = [topology.links[i].config.rate_gbps for i, peer in ports[s] if peer in switches]
        if down and up and sum(down) / sum(up) > worst[0]:
            worst = (sum(down) / sum(up), len(down))
    return worst


def resolve(kind: str, algo: str, n: int, nbytes: int, costs: PathCosts,
            hosts: tuple[int, ...] | None = None) -> str:
    """The algorithm that runs a ``kind`` collective of ``nbytes`` on ``n`` ranks (on
    ``hosts`` of ``costs.topology``, where known): ``algo`` itself (checked), or for "auto"
    the choice above."""
    if algo == "auto" and ALGORITHMS[kind][0] != "auto":
        return ALGORITHMS[kind][0]      # one algorithm only
    if algo not in ALGORITHMS[kind]:
        raise ConfigError(f"{kind} algorithm={algo!r}; valid choices: "
                          f"{', '.join(ALGORITHMS[kind])}{did_you_mean(algo, ALGORITHMS[kind])}")
    power_of_two = n > 1 and not n & (n - 1)
    if algo in POWER_OF_TWO_ONLY and not power_of_two:
        raise ConfigError(f"{kind} algorithm={algo!r} needs a power-of-two group; this one has "
                          f"{n} ranks (choose {'ring' if kind != 'broadcast' else 'scatter_ring'}"
                          f" or auto)")
    if algo != "auto":
        return algo
    if kind in ("all_gather", "reduce_scatter"):
        if n <= 2 or -(-nbytes // n) > LOG_STEP_MAX_BLOCK_BYTES:
            if hosts is not None and costs.topology is not None:
                groups = local_groups(costs.topology, tuple(hosts))
                if groups is not None and groups.faster_inside:
                    return "hierarchical"
            return "ring"
        log = "rd" if kind == "all_gather" else "rh"
        candidates = ["ring", "direct"] + ([log] if power_of_two else [])
        return min(candidates, key=lambda a: costs.small_blocks_ns(a, n, nbytes))
    if n < 3:
        return "binomial"
    if costs.in_network and can_multicast(costs.topology, tuple(hosts or range(n))):
        return "multicast"
    if nbytes < BCAST_SHORT_BYTES:
        return "binomial"
    candidates = ["binomial", "chain", "double_tree", "scatter_ring", "scatter_direct"] + (
        ["scatter_rd"] if power_of_two else [])
    return min(candidates, key=lambda a: costs.broadcast_ns(a, n, nbytes))


def resolve_allreduce(n: int, nbytes: int, costs: PathCosts,
                      hosts: tuple[int, ...] | None = None) -> str:
    """The all-reduce "auto" runs: for large blocks the hierarchical rings where ``hosts`` of
    ``costs.topology`` sit in local groups with faster links inside (a NIC then carries 1/g
    of the ring's bytes), else the ring; for small blocks the cheapest of the ring, direct
    sends and (power-of-two groups) Rabenseifner, each a reduce-scatter and an all-gather as
    ``PathCosts.small_blocks_ns`` estimates them."""
    if n <= 2 or -(-nbytes // n) > LOG_STEP_MAX_BLOCK_BYTES:
        if hosts is not None and costs.topology is not None and n > 2:
            groups = local_groups(costs.topology, tuple(hosts))
            if groups is not None and groups.faster_inside:
                return "hierarchical"
        return "ring"
    steps = {"ring": "ring", "direct": "direct"}
    if not n & (n - 1):
        steps["rabenseifner"] = "rd"
    return min(steps, key=lambda a: costs.small_blocks_ns(steps[a], n, nbytes))
