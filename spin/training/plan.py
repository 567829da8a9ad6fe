"""Which algorithm runs each collective of a trace, and where it lives on the hosts: QP ranges
and host memory, decided for the whole trace before anything is built."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..collectives import algorithm
from ..collectives.common import align
from ..config import HostConfig, NicConfig, SwitchConfig
from ..errors import ConfigError, TraceError
from ..suggest import did_you_mean
from ..topology import Topology
from ..trace_formats.model import COLLECTIVE, SEND, StepTrace, TraceOp, fail
from . import collectives as other
from .collective_choice import ALGORITHMS, PathCosts, resolve, resolve_allreduce

# the one algorithm each non-all-reduce collective has
# the other collectives' algorithms, as "choice/choice/..." for help texts (the first is the
# default; "auto" picks by size, spin.training.collectives.resolve)
FIXED_ALGORITHMS = {kind: "/".join(names) for kind, names in ALGORITHMS.items()}
# all-reduce algorithms a trace may choose: exact ones (lossy variants change the values)
ALLREDUCE_CHOICES = ("ring", "rd", "rabenseifner", "direct", "hierarchical", "nic", "switch",
                     "auto")
MAX_QPS = 4096
# algorithms of other collectives in which a rank receives from several senders on one QP
MANY_SENDERS_PER_QP = ("pairwise", "direct", "scatter_direct")
P2P_QP_BUDGET = 256


@dataclass(frozen=True)
class CollectiveCall:
    """One collective as every member rank calls it: the ``index``-th of its group."""

    group: str
    index: int
    kind: str
    nbytes: int
    ranks: tuple[int, ...]
    node_ids: tuple[int, ...]     # each member's node id, in ``ranks`` order
    algo: str
    qp: int
    job: int                      # switch aggregation job id (distinct per switch call)
    involved_dim: tuple[bool, ...] = ()    # Chakra's per-dimension flags, reported as given

    @property
    def node_id(self) -> int:
        """The node id on the group's first rank (how the report names the call)."""
        return self.node_ids[0]


@dataclass(frozen=True)
class ReplayPlan:
    """Every collective call, how ranks' nodes map to them, and the hosts' layout."""

    calls: tuple[CollectiveCall, ...]
    by_node: dict[tuple[int, int], CollectiveCall]      # (rank, node id) -> call
    p2p_addr: int                 # where point-to-point messages are read and written
    memory_bytes: int
    qps: int
    p2p_qps: dict[tuple[int, int, int], int]     # (src, dst, tag) -> QP of those messages

    def p2p_qp(self, src: int, dst: int, tag: int) -> int:
        """The QP of messages from ``src`` to ``dst`` with ``tag``."""
        return self.p2p_qps[(src, dst, tag)]

    def algorithms(self) -> list[str]:
        """All-reduce algorithms the plan uses (their configs and handler programs)."""
        return sorted({c.algo for c in self.calls if c.kind == "all_reduce"})


def choose(kind: str, algo: str, per_kind: dict[str, str], n: int, nbytes: int,
           costs: PathCosts, hosts: tuple[int, ...] | None = None) -> str:
    """The algorithm of a ``kind`` collective of ``nbytes`` on ``n`` ranks: ``per_kind``
    first, else ``algo`` for all-reduce, else the kind's default ("auto" resolved by size
    and the fabric's ``costs``)."""
    chosen = per_kind.get(kind)
    if kind == "all_reduce":
        if (chosen or algo) == "auto":
            return resolve_allreduce(n, nbytes, costs, hosts)
        name = algorithm(chosen or algo, "all_reduce algorithm").name
        if name not in ALLREDUCE_CHOICES:
            raise ConfigError(f"all_reduce algorithm={name!r} (lossy or quantized); valid "
                              f"choices: {', '.join(ALLREDUCE_CHOICES)}")
        return name
    return resolve(kind, chosen or ALGORITHMS[kind][0], n, nbytes, costs, hosts)


def check_algorithm_choices(per_kind: dict[str, str]) -> None:
    """Each ``TYPE=ALGO`` names a collective type and one of its algorithms (checked even if
    the trace calls no such collective)."""
    for kind, name in per_kind.items():
        if kind not in FIXED_ALGORITHMS and kind != "all_reduce":
            types = ("all_reduce", *FIXED_ALGORITHMS)
            raise ConfigError(f"--algo {kind}={name}: unknown collective type {kind!r}; valid "
                              f"types: {', '.join(types)}{did_you_mean(kind, types)}")
        if kind != "all_reduce" and name not in ALGORITHMS[kind]:
            raise ConfigError(f"{kind} algorithm={name!r}; valid choices: "
                              f"{', '.join(ALGORITHMS[kind])}"
                              f"{did_you_mean(name, ALGORITHMS[kind])}")


def plan_replay(trace: StepTrace, algo: str, per_kind: dict[str, str],
                max_memory_bytes: int, per_node: dict[int, str] | None = None,
                costs: PathCosts | None = None) -> ReplayPlan:
    """Match collectives across ranks, pick algorithms (``per_node``: by the node id of a
    call on its group's first rank, before ``per_kind`` and ``algo``; ``costs``: the fabric's,
    for the choice by size, default a star of default configs), and lay out QPs and memory."""
    if costs is None:
        costs = PathCosts.of(Topology.star(2), HostConfig(), NicConfig(), SwitchConfig())
    per_node = dict(per_node or {})
    check_algorithm_choices(per_kind)
    n = trace.n_ranks
    per_group: dict[str, dict[int, list[TraceOp]]] = defaultdict(lambda: defaultdict(list))
    p2p_bytes = 0
    triples = set()
    for rank in trace.ranks:
        for op in rank.ops:
            if op.kind == COLLECTIVE:
                per_group[op.group][rank.rank].append(op)
            elif op.kind == SEND:
                p2p_bytes = max(p2p_bytes, op.nbytes)
                triples.add((rank.rank, op.peer, op.tag))
    p2p_qps, qp_next = p2p_queues(triples, n)
    qp_blocks: dict[tuple, int] = {}
    uses: dict[tuple, int] = defaultdict(int)
    calls, by_node, need, jobs = [], {}, 0, 0
    for group in sorted(per_group):
        members = trace.group_ranks(group)
        first = per_group[group][members[0]]
        for i, ref in enumerate(first):
            chosen = per_node.pop(ref.node_id, None)
            name = choose(ref.collective, algo,
                          {**per_kind, ref.collective: chosen} if chosen else per_kind,
                          len(members), ref.nbytes, costs, members)
            # each switch job installs its own programs on its QP (install_jobs)
            key = (ref.collective, name, members) + ((group, i) if name == "switch" else ())
            if name in MANY_SENDERS_PER_QP and ref.collective != "all_reduce":
                # consecutive calls alternate QP blocks: call k+1 can overlap call k at a
                # receiver that hears every sender on one QP, call k+2 cannot (its senders
                # finished call k+1, which needed that receiver's call k+1 messages)
                key += (uses[key] % 2,)
                uses[key[:-1]] += 1
            if key not in qp_blocks:
                qp_blocks[key] = qp_next
                qp_next += _qps(ref.collective, name, len(members))
            mem = _memory(ref.collective, name, len(members), ref.nbytes)
            if mem > max_memory_bytes:
                raise fail(trace.ranks[members[0]].source, ref.node_id,
                           f"{ref.collective} of {ref.nbytes} B on {len(members)} ranks needs "
                           f"{mem} B of host memory per rank, beyond the limit of "
                           f"{max_memory_bytes} B (raise max_memory_bytes)")
            need = max(need, mem)
            call = CollectiveCall(group, i, ref.collective, ref.nbytes, members,
                                  tuple(per_group[group][r][i].node_id for r in members),
                                  name, qp_blocks[key], jobs, ref.involved_dim)
            jobs += name == "switch"
            calls.append(call)
            for r, node in zip(members, call.node_ids):
                by_node[(r, node)] = call
    if per_node:
        node = next(iter(per_node))
        raise ConfigError(f"algorithm for node {node}: no collective has that node id on its "
                          f"group's first rank; collectives: "
                          f"{', '.join(str(n) for n in sorted({c.node_id for c in calls})) or 'none'}")
    nic_calls = [c for c in calls if c.algo == "nic"]
    if len({c.ranks for c in nic_calls}) < len(nic_calls):
        c = nic_calls[1]
        raise fail(trace.ranks[c.ranks[0]].source, c.node_id,
                   "the nic all-reduce installs one execution context per rank and group, so "
                   "it replays one all-reduce per group; choose ring, rd, rabenseifner or "
                   "switch for traces with more")
    if qp_next > MAX_QPS:
        raise TraceError(f"{trace.name}: the trace needs {qp_next} QPs per host "
                         f"(HostConfig.qps <= {MAX_QPS})")
    p2p_addr = align(need)
    memory = p2p_addr + align(p2p_bytes)
    if memory > max_memory_bytes:
        raise TraceError(f"{trace.name}: point-to-point messages of up to {p2p_bytes} B need "
                         f"{memory} B of host memory per rank, beyond the limit of "
                         f"{max_memory_bytes} B")
    return ReplayPlan(tuple(calls), by_node, p2p_addr, max(memory, 4096), max(qp_next, 1),
                      p2p_qps)


def p2p_queues(triples: set, n: int) -> tuple[dict[tuple[int, int, int], int], int]:
    """QPs of point-to-point messages, and the first QP left for collectives. A receive waits
    for the next message on one QP, and messages of one sender on one QP arrive in order, so
    a QP per (sender, tag) at each receiver matches messages as MPI does (by source and tag,
    in order). Traces with more (sender, tag) pairs per receiver than P2P_QP_BUDGET (Schedgen
    gives many messages their own tag) get a QP per sender: messages of a pair then match in
    the order they were sent, whatever their tags. The budget bounds the per-host QP tables
    (``HostConfig.qps``); it is not a speed limit any more: the engine's open-loop PSN table is
    sized by the send flows, so a 24-rank ring with 46 tags per receiver runs in 0.7 s."""
    per_receiver: dict[int, list] = defaultdict(list)
    for src, dst, tag in sorted(triples):
        per_receiver[dst].append((src, tag))
    if max((len(v) for v in per_receiver.values()), default=0) <= P2P_QP_BUDGET:
        qps = {(src, dst, tag): i for dst, pairs in per_receiver.items()
               for i, (src, tag) in enumerate(pairs)}
        return qps, max(qps.values(), default=-1) + 1
    return {(src, dst, tag): src for src, dst, tag in triples}, n


def _qps(kind: str, algo: str, n: int) -> int:
    if kind == "all_reduce":
        return 2 * n.bit_length() + 2 if algo in ("rd", "rabenseifner") else 2
    return other.qps_needed(kind, n, algo)


def _memory(kind: str, algo: str, n: int, nbytes: int) -> int:
    if kind == "all_reduce":
        return algorithm(algo).plan_memory(n, other.elements(nbytes), other.DTYPE)
    return other.memory_needed(kind, n, nbytes)
