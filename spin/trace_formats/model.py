"""What a training-step trace says, independent of its file format: per rank, a graph of
operations (compute, collective, point-to-point send and receive) and their dependencies.

Both readers (Chakra ET, GOAL) produce a ``StepTrace``; ``validate`` checks it as a whole
before anything runs (missing dependencies, cycles, empty transfers, unmatched messages,
collectives that the ranks of a group do not all call alike), so a bad trace fails with one
line naming its file, the node and the problem, and never half-runs."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from ..bounds import shown
from ..errors import TraceError

COMPUTE, COLLECTIVE, SEND, RECV = "compute", "collective", "send", "recv"
OP_KINDS = (COMPUTE, COLLECTIVE, SEND, RECV)
# collective types a trace may call (Chakra's CollectiveCommType names, lower case)
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
               "barrier")
WORLD = ""                      # the process group of every rank
# What a trace may declare, checked while it is read and before anything is allocated for
# it: ranks (the largest topologies build 65,536 hosts), bytes of one transfer (1 PiB) and
# the time of one compute op (1000 s, as a scenario's compute op).
MAX_RANKS = 1 << 20
MAX_TRANSFER_BYTES = 1 << 50
MAX_COMPUTE_NS = 1e12


@dataclass(frozen=True)
class TraceOp:
    """One node of a rank's graph.

    ``deps`` must have finished before this op starts; ``start_deps`` must only have started
    (GOAL's ``irequires``). Compute takes ``duration_ns`` when the trace measured it, else a
    roofline of ``flops`` and ``tensor_bytes`` at the rank's compute rate. ``nbytes`` of a
    collective is its buffer per rank as nccl-tests counts it (all-gather: the gathered output;
    reduce-scatter and all-to-all: the input)."""

    node_id: int
    kind: str
    name: str = ""
    deps: tuple[int, ...] = ()
    start_deps: tuple[int, ...] = ()
    duration_ns: float | None = None
    flops: float = 0.0
    tensor_bytes: int = 0
    cpu_op: bool = False
    collective: str = ""
    nbytes: int = 0
    peer: int = -1              # send: destination rank; recv: source rank
    tag: int = 0
    group: str = WORLD
    involved_dim: tuple[bool, ...] = ()
    op: str = ""                # the framework op a collective was named from (PyTorch)

    @property
    def is_comm(self) -> bool:
        """Anything but compute."""
        return self.kind != COMPUTE


@dataclass(frozen=True)
class RankTrace:
    """One rank's operations, in file order, and the file they came from."""

    rank: int
    source: str
    ops: tuple[TraceOp, ...]
    labelled: bool = False      # nodes are named by label (GOAL), not by number (Chakra)

    def ref(self, node_id: int):
        """How errors name node ``node_id``: its label in GOAL, its id in Chakra."""
        return self._labels.get(node_id, node_id) if self.labelled else node_id

    @cached_property
    def _labels(self) -> dict[int, str]:
        """Label by node id, made once: ``ref`` names every op the checks visit, and a search
        per call made validating a 100,000-op schedule take minutes."""
        return {op.node_id: op.name for op in self.ops}

    @property
    def by_id(self) -> dict[int, TraceOp]:
        """The ops by node id."""
        return {op.node_id: op for op in self.ops}


@dataclass(frozen=True)
class StepTrace:
    """A training step: one ``RankTrace`` per rank (rank i at index i), the process groups
    (name -> ranks) and the format it was read from. ``device``: where the ranks ran, ``gpu``
    (accelerators: Chakra, PyTorch with NCCL kernels) or ``cpu`` (MPI ranks: GOAL; PyTorch
    with CPU ops only), which picks the host model by default. ``skipped``: one line per
    node the readers replay as no collective (a CPU-side launch of a GPU collective)."""

    name: str
    fmt: str
    ranks: tuple[RankTrace, ...]
    groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    device: str = "gpu"
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()   # what of the file the replay reads but does not model

    @property
    def n_ranks(self) -> int:
        """Ranks of the step."""
        return len(self.ranks)

    def group_ranks(self, group: str) -> tuple[int, ...]:
        """The ranks of process group ``group`` (every rank for the world group)."""
        return self.groups.get(group, tuple(range(self.n_ranks))) if group else \
            tuple(range(self.n_ranks))


def whole_number(value, name: str, source: str, node_id, high: int, low: int = 0) -> int:
    """An attribute or field that must be an integer in ``low..high``: a string, a list, NaN,
    an infinity or a fraction where a trace should hold an integer is named, not converted."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(source, node_id, f"{name} = {shown(value)}: expected an integer "
                   f"{low}..{high}")
    if not low <= value <= high:
        raise fail(source, node_id, f"{name} = {shown(value)}: must be {low}..{high}")
    return value


def real_number(value, name: str, source: str, node_id, high: float) -> float:
    """An attribute that must be a finite number in ``0..high``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0 <= value <= high):
        raise fail(source, node_id, f"{name} = {shown(value)}: expected a finite number "
                   f"0..{high:g}")
    return float(value)


def fail(source: str, node_id, problem: str) -> TraceError:
    """The one-line error every trace problem raises: file, node, problem."""
    where = f"{source}: node {node_id}" if node_id is not None else source
    return TraceError(f"{where}: {problem}")



def count_limit(env: str, default: int, what: str) -> int:
    """A trace reader's bound on how much it reads: ``$env`` (a count >= 1) or ``default``."""
    given = os.environ.get(env, "").strip()
    if not given:
        return default
    if not given.isdigit() or int(given) < 1:
        raise fail(env, None, f"{given!r}: expected a count of {what} >= 1")
    return int(given)

def validate(trace: StepTrace) -> StepTrace:
    """``trace`` if it is replayable; the first problem found as a TraceError otherwise."""
    if trace.n_ranks < 1:
        raise fail(trace.name, None, "no ranks")
    for name, members in trace.groups.items():
        bad = [r for r in members if not 0 <= r < trace.n_ranks]
        if bad or len(set(members)) != len(members) or not members:
            raise fail(trace.name, None, f"process group {name!r} has ranks {list(members)}; "
                       f"valid ranks are 0..{trace.n_ranks - 1}, each once")
    for rank in trace.ranks:
        _check_rank(trace, rank)
    _check_messages(trace)
    _check_collectives(trace)
    return trace


def _check_rank(trace: StepTrace, rank: RankTrace) -> None:
    seen: dict[int, TraceOp] = {}
    for op in rank.ops:
        if op.node_id in seen:
            raise fail(rank.source, op.node_id, "node id used twice")
        seen[op.node_id] = op
    for op in rank.ops:
        for dep in (*op.deps, *op.start_deps):
            if dep not in seen:
                raise fail(rank.source, op.node_id, f"depends on node {dep}, which the file "
                           f"does not have")
            if dep == op.node_id:
                raise fail(rank.source, rank.ref(op.node_id), "depends on itself")
        _check_sizes(trace, rank, op)
    if all(dep < op.node_id for op in rank.ops for dep in (*op.deps, *op.start_deps)):
        return                      # every edge goes to a smaller id: no cycle to look for
    cycle = find_cycle(rank.ops)
    if cycle:
        raise fail(rank.source, rank.ref(cycle[0]), "dependency cycle "
                   + " -> ".join(str(rank.ref(n)) for n in (*cycle, cycle[0])))


def _check_sizes(trace: StepTrace, rank: RankTrace, op: TraceOp) -> None:
    if op.kind == COMPUTE:
        if op.duration_ns is not None and op.duration_ns < 0:
            raise fail(rank.source, rank.ref(op.node_id), f"compute duration "
                       f"{op.duration_ns} ns < 0")
        return
    if op.kind != COLLECTIVE and op.nbytes > 0 and 0 <= op.peer < trace.n_ranks \
            and op.peer != rank.rank:
        return                      # a send or receive that passes (nearly every op)
    node = rank.ref(op.node_id)
    if op.kind == COLLECTIVE:
        if op.collective not in COLLECTIVES:
            raise fail(rank.source, node, f"collective type {op.collective!r}; valid "
                       f"choices: {', '.join(COLLECTIVES)}")
        members = trace.group_ranks(op.group)
        if op.group and op.group not in trace.groups:
            raise fail(rank.source, node, f"process group {op.group!r} is not defined; "
                       f"defined: {', '.join(sorted(trace.groups)) or 'none'}")
        if rank.rank not in members:
            raise fail(rank.source, node, f"rank {rank.rank} calls a collective of "
                       f"process group {op.group!r}, whose ranks are {list(members)}")
        if op.nbytes <= 0 and op.collective != "barrier":
            raise fail(rank.source, node, f"{op.collective} of {op.nbytes} B: the size "
                       f"must be > 0")
        return
    if op.nbytes <= 0:
        raise fail(rank.source, node, f"{op.kind} of {op.nbytes} B: the size must be > 0")
    if not 0 <= op.peer < trace.n_ranks or op.peer == rank.rank:
        raise fail(rank.source, node, f"{op.kind} peer rank {op.peer}; valid peers are "
                   f"0..{trace.n_ranks - 1} other than {rank.rank}")


def find_cycle(ops: tuple[TraceOp, ...]) -> list[int]:
    """Node ids of one dependency cycle among ``ops`` (empty if there is none)."""
    succ: dict[int, list[int]] = defaultdict(list)
    for op in ops:
        for dep in (*op.deps, *op.start_deps):
            succ[dep].append(op.node_id)
    colour: dict[int, int] = {}             # 1: on the current path, 2: done
    for root in (op.node_id for op in ops):
        if root in colour:
            continue
        path, stack = [root], [iter(succ[root])]
        colour[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):]
            elif nxt not in colour:
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(succ[nxt]))
    return []


def _check_messages(trace: StepTrace) -> None:
    """Every send has its receive: same pair, tag and size, as many on both sides."""
    sends: Counter = Counter()
    recvs: Counter = Counter()
    first: dict = {}
    for rank in trace.ranks:
        for op in rank.ops:
            if op.kind == SEND:
                key = (rank.rank, op.peer, op.tag, op.nbytes)
                sends[key] += 1
            elif op.kind == RECV:
                key = (op.peer, rank.rank, op.tag, op.nbytes)
                recvs[key] += 1
            else:
                continue
            first.setdefault((op.kind, key), (rank.source, rank.ref(op.node_id)))
    for key in sorted(set(sends) | set(recvs)):
        if sends[key] != recvs[key]:
            src, dst, tag, nbytes = key
            kind = SEND if sends[key] > recvs[key] else RECV
            source, node = first[(kind, key)]
            raise fail(source, node, f"{sends[key]} send(s) of {nbytes} B from rank {src} to "
                       f"rank {dst} with tag {tag} but {recvs[key]} matching recv(s)")


def _check_collectives(trace: StepTrace) -> None:
    """The ranks of a group call the same collectives of the same sizes in the same order
    (how NCCL and MPI match them)."""
    calls: dict[str, dict[int, list[TraceOp]]] = defaultdict(lambda: defaultdict(list))
    for rank in trace.ranks:
        for op in rank.ops:
            if op.kind == COLLECTIVE:
                calls[op.group][rank.rank].append(op)
    for group, per_rank in calls.items():
        members = trace.group_ranks(group)
        ref_rank = members[0]
        ref = per_rank.get(ref_rank, [])
        for r in members:
            mine = per_rank.get(r, [])
            for i in range(max(len(ref), len(mine))):
                a = ref[i] if i < len(ref) else None
                b = mine[i] if i < len(mine) else None
                if a is None or b is None or (a.collective, a.nbytes) != (b.collective,
                                                                           b.nbytes):
                    bad_rank, bad = (r, b) if b is not None else (ref_rank, a)
                    desc = (f"{bad.collective} of {bad.nbytes} B" if bad else "nothing")
                    other = a if bad_rank == r else b     # the same call on the other rank
                    want = (f"{other.collective} of {other.nbytes} B" if other is not None
                            else "nothing")
                    raise fail(trace.ranks[bad_rank].source,
                               trace.ranks[bad_rank].ref(bad.node_id),
                               f"collective #{i} of group {group or 'world'!r} is {desc} "
                               f"here but {want} on rank "
                               f"{ref_rank if bad_rank == r else r}")
