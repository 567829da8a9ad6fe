"""Replay a training step on the fabric: every rank's trace nodes become its host's program
(compute as busy time, sends and receives as RDMA writes, collectives as the chosen
algorithm's own messages or handlers), all in one run, so collectives of different groups,
point-to-point traffic and stragglers meet on the same links in virtual time.

Rank i runs on host i of the topology. Each node is bracketed by two marks, from which the
report reads every node's start and end."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..collectives import algorithm, switch_broadcast
from ..collectives.measure import lossless
from ..config import HOST_PRESETS, EngineConfig, HostConfig, NicConfig, SwitchConfig
from ..describe.payload_mode import PAYLOAD_MODES
from ..engine import state as S
from ..errors import ConfigError, TraceError
from ..runs import run
from ..describe.scenario import Scenario
from ..topology import Topology
from ..trace_formats.model import COLLECTIVE, COMPUTE, RECV, SEND, StepTrace, TraceOp
from . import collectives as other
from .compute import ComputeModel
from .marks import end_label, start_label
from .collective_choice import PathCosts
from .plan import CollectiveCall, ReplayPlan, plan_replay
from .step_report import StepReport, build_report
from .schedule import issue_order

DEFAULT_MAX_MEMORY_BYTES = 256 << 20
OFFLOADED = ("nic", "switch")    # all-reduces the host only posts and waits for
EXACT_FLOAT32 = 1 << 24          # integers up to this add exactly in float32
REDUCING = ("all_reduce", "reduce_scatter")    # collectives that read the bytes they receive


@dataclass(frozen=True)
class ReplayConfig:
    """How to replay: the all-reduce algorithm (``algo``; ``per_kind`` overrides it for a
    collective type, ``per_node`` for one call, named by its node id on its group's first
    rank), the ranks' compute speed, the host memory a rank may use, how many worker
    processes run the fabric, and the host model (``host_preset``, a ``HOST_PRESETS`` name:
    ``gpu`` reduces at HBM bandwidth and pipelines ring steps as NCCL does, ``cpu`` is an MPI
    rank on a server core; None: the trace's own device, so an accelerator trace is not
    priced as a CPU), and where payload bytes live (``payload``: ``stored`` in host memory,
    or ``generated`` from (host, address) as ``Scenario.payload``; None: generated unless a
    collective of the step reduces in host memory, see ``payload_for``), and whether the
    switches offload collectives (``in_network``: ``auto`` then broadcasts by switch multicast,
    ``spin.collectives.switch_broadcast``; off by default, as most fabrics cannot)."""

    algo: str = "ring"
    per_kind: dict[str, str] = field(default_factory=dict)
    per_node: dict[int, str] = field(default_factory=dict)
    compute: ComputeModel = field(default_factory=ComputeModel)
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES
    workers: int = 1
    host_preset: str | None = None
    payload: str | None = None
    in_network: bool = False

    def __post_init__(self) -> None:
        if self.host_preset is not None and self.host_preset not in HOST_PRESETS:
            raise ConfigError(f"host_preset={self.host_preset!r}; valid choices: "
                              f"{', '.join(HOST_PRESETS)} (or None: the trace's device)")
        if self.payload is not None and self.payload not in PAYLOAD_MODES:
            raise ConfigError(f"payload={self.payload!r}; valid choices: "
                              f"{', '.join(PAYLOAD_MODES)} (or None: generated unless the step "
                              f"reduces in host memory)")

    def host_for(self, trace: StepTrace) -> str:
        """The host preset a replay of ``trace`` uses."""
        return self.host_preset or trace.device

    def payload_for(self, plan: ReplayPlan) -> str:
        """Where a replay of ``plan`` keeps payload bytes. Only reductions read them (an
        all-reduce or reduce-scatter sums what it received, and an all-reduce-only step has its
        results checked); sends, receives, compute and the collectives that only move data
        are timed alike either way, so without reductions the payload is generated: no host
        memory is kept, which a 1,024-rank step of MiB-sized messages would fill by GBs."""
        reducing = sorted({c.kind for c in plan.calls if c.kind in REDUCING})
        if self.payload == "generated" and reducing:
            raise ConfigError(f"payload='generated': the step's {' and '.join(reducing)} "
                              f"reduce(s) in host memory, which a generated payload does not "
                              f"keep; use payload='stored' (or None)")
        return self.payload or ("stored" if reducing else "generated")


# Planning and building a replay costs about 14 us per trace operation (a million-operation GOAL
# schedule: 13.6 s on a 2-core VM); above BIG_TRACE_OPS a line says so before it starts.
PLAN_S_PER_OP = 14e-6
BIG_TRACE_OPS = 100_000

def replay(trace: StepTrace, topology: Topology | None = None,
           config: ReplayConfig | None = None, *, quiet: bool = True,
           **scenario_configs) -> StepReport:
    """Run ``trace`` on ``topology`` (default: a star of as many hosts as ranks) and report
    per rank and per collective. ``scenario_configs`` are Scenario fields (nic, host, switch,
    engine); a ``host`` given there replaces the host preset. ``quiet=False`` prints on stderr
    what is compiled, and progress for a run longer than a couple of seconds."""
    config = config or ReplayConfig()
    host = "custom" if "host" in scenario_configs else config.host_for(trace)
    if host != "custom":
        scenario_configs = {**scenario_configs, "host": HostConfig.preset(host)}
    config.compute.check_ranks(trace.n_ranks)
    topo = topology if topology is not None else Topology.star(max(trace.n_ranks, 2))
    if len(topo.hosts) < trace.n_ranks:
        raise ConfigError(f"topology has {len(topo.hosts)} hosts; the trace {trace.name} has "
                          f"{trace.n_ranks} ranks (ranks take the first hosts)")
    costs = PathCosts.of(topo, *(scenario_configs.get(k) or default() for k, default in
                                 (("host", HostConfig), ("nic", NicConfig),
                                  ("switch", SwitchConfig))),
                        in_network=config.in_network)
    n_ops = sum(len(r.ops) for r in trace.ranks)
    if not quiet and n_ops > BIG_TRACE_OPS:
        print(f"spin train: planning {n_ops:,} trace operations of {trace.n_ranks:,} ranks "
              f"(about {n_ops * PLAN_S_PER_OP:.0f} s at {PLAN_S_PER_OP * 1e6:.0f} us per "
              f"operation, as measured on a 2-core VM)", file=sys.stderr, flush=True)
    clock = [time.perf_counter()]
    plan = plan_replay(trace, config.algo, config.per_kind, config.max_memory_bytes,
                       config.per_node, costs)
    clock.append(time.perf_counter())
    sc = _scenario(topo, plan, trace.n_ranks, scenario_configs)
    sc.payload = config.payload_for(plan)
    inputs = _AllreduceCheck.inputs_for(trace, plan, sc)
    built: dict[CollectiveCall, object] = {}
    _emit(trace, plan, sc, config.compute, built)
    sc.engine = _room_for_sends(sc)
    check = _AllreduceCheck.of(inputs, plan, built)
    clock.append(time.perf_counter())
    if not quiet and clock[-1] - clock[0] > 1.0:   # the run's own bar follows if it is long
        ops = sum(len(p.ops) for p in sc.host_programs.values())
        print(f"spin train: planned and built {ops:,} host operations of {trace.n_ranks:,} "
              f"ranks in {clock[-1] - clock[0]:.1f} s; running", file=sys.stderr, flush=True)
    result = run(sc, config.workers, read=check.reads() if check else (), quiet=quiet)
    stuck = [h for h in result.unfinished_hosts() if h.node < trace.n_ranks]
    if stuck:
        raise _stuck(trace, result, stuck)
    result.require_finished()
    clock.append(time.perf_counter())
    correct = check.verify(result) if check else None
    report = build_report(trace, plan, result, config, correct, host, sc.payload)
    clock.append(time.perf_counter())
    report.wall.update(zip(("plan_s", "build_s", "run_s", "report_s"),
                           (b - a for a, b in zip(clock, clock[1:]))),
                       loop_s=float(result.wall.get("seconds", 0.0)))
    return report


def _room_for_sends(sc: Scenario) -> EngineConfig:
    """The engine's message tables raised to every send the programs post, when more: an
    all-to-all or a direct all-gather posts n-1 messages per rank at once (261,632 on 512
    ranks), beyond what the fabric's size alone gives."""
    from ..engine import state as S
    sends = sum(int((p.op_array()[:, 0] == S.OP_SEND).sum()) for p in sc.host_programs.values()
                if len(p.ops))
    eng = sc.engine
    if sends <= min(eng.max_tx_messages, eng.max_rx_messages):
        return eng
    return eng.model_copy(update={"max_tx_messages": max(eng.max_tx_messages, sends),
                                  "max_rx_messages": max(eng.max_rx_messages, sends)})


def _scenario(topo: Topology, plan: ReplayPlan, n: int, configs: dict) -> Scenario:
    configs = dict(configs)
    host = configs.pop("host", None) or HostConfig()
    host = HostConfig.make(**{**host.model_dump(),
                              "memory_bytes": max(host.memory_bytes, plan.memory_bytes),
                              "qps": max(host.qps, plan.qps)})
    programs = []
    for name in plan.algorithms():
        alg = algorithm(name)
        # sized for the largest all-reduce that runs with this algorithm
        nbytes = max(c.nbytes for c in plan.calls if c.kind == "all_reduce" and c.algo == name)
        for key, value in (alg.configs(n, nbytes) if alg.configs else {}).items():
            configs.setdefault(key, value)
        if alg.programs is not None:
            programs.extend(p for p in alg.programs() if p not in programs)
    if any(c.algo == "multicast" for c in plan.calls):
        programs.extend(switch_broadcast.programs())
    configs["switch"] = lossless(configs.get("switch"))
    configs["engine"] = sized_for_fabric(configs.get("engine") or EngineConfig(), len(topo.hosts))
    if programs:
        configs.setdefault("engine_programs", programs)
    return Scenario(topo, host=host, **configs)


# EngineConfig tables that grow with the fabric (EngineConfig.for_fabric)
FABRIC_SIZED = ("buffer_slots", "max_events_pending", "log_messages", "max_rx_messages",
                "max_tx_messages")


def sized_for_fabric(engine: EngineConfig, n_hosts: int) -> EngineConfig:
    """``engine`` with its tables at least as large as ``EngineConfig.for_fabric(n_hosts)``:
    every rank of a step may send at once (a ring step, a pipeline's hand-offs), and the
    defaults, sized for small scenarios, ran out of frame slots on 1,024 hosts. Tables are only
    touched when used, so a small step pays nothing for them."""
    fabric = EngineConfig.for_fabric(n_hosts)
    return engine.model_copy(update={f: max(getattr(engine, f), getattr(fabric, f))
                                     for f in FABRIC_SIZED})


def _emit(trace: StepTrace, plan: ReplayPlan, sc: Scenario, compute: ComputeModel,
          built: dict) -> None:
    """Append every rank's nodes to its host program, collectives jointly across members in
    an order consistent with every rank's issue order (each all-reduce's plan goes to
    ``built``)."""
    queues = [issue_order(rank) for rank in trace.ranks]
    pos = [0] * trace.n_ranks
    progs = [sc.host_program(r) for r in range(trace.n_ranks)]
    waits = _Waits(progs)
    for r, prog in enumerate(progs):
        delay = compute.start_delay_ns(r)
        if delay:
            prog.compute(delay)
    done = 0
    total = sum(len(q) for q in queues)
    while done < total:
        progressed = False
        for r in range(trace.n_ranks):
            while pos[r] < len(queues[r]) and queues[r][pos[r]].kind != COLLECTIVE:
                waits.before(r, queues[r][pos[r]])
                _emit_local(r, queues[r][pos[r]], progs[r], plan, compute)
                pos[r] += 1
                done += 1
                progressed = True
        waiting = {plan.by_node[(r, q[pos[r]].node_id)]: None
                   for r, q in enumerate(queues) if pos[r] < len(q)}
        for call in waiting:                        # collectives some rank is waiting at
            heads = [queues[r][pos[r]] if pos[r] < len(queues[r]) else None for r in call.ranks]
            if all(h is not None and plan.by_node.get((r, h.node_id)) is call
                   for r, h in zip(call.ranks, heads)):
                for r in call.ranks:
                    waits.flush(r)
                built[call] = _emit_collective(call, sc, progs, waits)
                for r in call.ranks:
                    pos[r] += 1
                done += len(call.ranks)
                progressed = True
        if not progressed:
            raise _deadlock(trace, queues, pos, plan)
    for r in range(trace.n_ranks):
        waits.flush(r)


def _emit_local(rank: int, op: TraceOp, prog, plan: ReplayPlan, compute: ComputeModel) -> None:
    prog.mark(start_label(op.node_id))
    if op.kind == COMPUTE:
        ns = compute.duration_ns(rank, op)
        if ns > 0:
            prog.compute(ns)
    elif op.kind == SEND:
        prog.send(op.peer, op.nbytes, qp=plan.p2p_qp(rank, op.peer, op.tag),
                  local_addr=plan.p2p_addr, remote_addr=plan.p2p_addr)
    elif op.kind == RECV:
        prog.wait_recv(qp=plan.p2p_qp(op.peer, rank, op.tag))
    prog.mark(end_label(op.node_id))


def _emit_collective(call: CollectiveCall, sc: Scenario, progs, waits: _Waits):
    """The all-reduce's plan (None for other collectives). An offloaded all-reduce leaves its
    wait for completion pending (``_Waits``)."""
    for r, node in zip(call.ranks, call.node_ids):
        progs[r].mark(start_label(node))
    built = None
    if call.kind == "all_reduce":
        options = {"job": call.job} if call.algo == "switch" else {}
        built = algorithm(call.algo).build(sc, other.elements(call.nbytes), other.DTYPE,
                                           hosts=call.ranks, qp=call.qp, **options)
    else:
        other.build(call.kind, sc, call.ranks, call.nbytes, call.qp, call.algo)
    for r, node in zip(call.ranks, call.node_ids):
        if call.algo in OFFLOADED:
            waits.defer(r, node)
        else:
            progs[r].mark(end_label(node))
    return built


class _Waits:
    """Overlap of compute with offloaded collectives. A NIC or switch all-reduce runs in the
    handlers once the host posted it; the host only waits for its completion event. That wait
    (and the collective's end mark) is held back until the rank issues a node that depends on
    the collective, or its next collective (one collective in flight per rank: they share the
    data buffer), or the end of its program; compute issued meanwhile overlaps the
    collective."""

    def __init__(self, progs):
        self.progs = progs
        self.pending: dict[int, tuple[int, list]] = {}

    def defer(self, rank: int, node_id: int) -> None:
        """Hold back the wait just appended for ``rank``'s collective ``node_id``."""
        ops = self.progs[rank].ops
        last = next(i for i in range(len(ops) - 1, -1, -1)      # from the end: the program
                    if ops[i][0] == S.OP_WAIT_EVENT)            # grows with every collective
        self.pending[rank] = (node_id, ops[last:])
        del ops[last:]

    def before(self, rank: int, op: TraceOp) -> None:
        """Wait first if ``op`` depends on the collective held back."""
        held = self.pending.get(rank)
        if held and held[0] in (*op.deps, *op.start_deps):
            self.flush(rank)

    def flush(self, rank: int) -> None:
        """Append the held-back wait and end mark."""
        held = self.pending.pop(rank, None)
        if held:
            self.progs[rank].ops.extend(held[1])
            self.progs[rank].mark(end_label(held[0]))


def _stuck(trace: StepTrace, result, stuck: list) -> TraceError:
    """Ranks whose programs never ended, named by the trace nodes they wait in: each rank's
    schedule was valid alone (messages match in count), but their dependencies wait on each
    other across ranks. The host ops the engine stopped at mean nothing to the trace's
    author; the first stuck ranks' nodes do, and a few of them fit on one line."""
    def waiting_in(h) -> str:
        rank = trace.ranks[h.node]
        for op in rank.ops:
            started = result.marks.get(start_label(op.node_id), {})
            ended = result.marks.get(end_label(op.node_id), {})
            if h.node in started and h.node not in ended:
                what = (f"recv of {op.nbytes} B from rank {op.peer} tag {op.tag}"
                        if op.kind == RECV else f"send of {op.nbytes} B to rank {op.peer}"
                        if op.kind == SEND else op.collective or op.kind)
                return f"rank {h.node} at node {rank.ref(op.node_id)} ({what})"
        return f"rank {h.node} {h.waiting_for or 'did not finish'}"
    shown = "; ".join(waiting_in(h) for h in stuck[:3])
    more = f"; and {len(stuck) - 3} more" if len(stuck) > 3 else ""
    drops = {k: v for k, v in result.drops.items() if v}
    why = (f"{sum(drops.values()):,} frame(s) were dropped "
           f"({', '.join(f'{k}: {v:,}' for k, v in sorted(drops.items()))}) and were not "
           f"sent again (an open-loop transport or a multicast broadcast does not resend)"
           if drops else "their dependencies wait on each other across ranks (a deadlock)")
    return TraceError(f"{trace.name}: {len(stuck)} of {trace.n_ranks} ranks never finished "
                      f"(the run ended at {result.end_time_ps / 1e6:.3f} us with nothing left "
                      f"to do): {shown}{more}; {why}")


def _deadlock(trace: StepTrace, queues, pos, plan: ReplayPlan) -> TraceError:
    """Ranks wait at collectives that can never all meet (issued in different orders)."""
    for r, q in enumerate(queues):
        if pos[r] < len(q):
            head = q[pos[r]]
            call = plan.by_node[(r, head.node_id)]
            others = [m for m in call.ranks
                      if pos[m] >= len(queues[m])
                      or plan.by_node.get((m, queues[m][pos[m]].node_id)) is not call]
            return TraceError(f"{trace.ranks[r].source}: node {head.node_id}: {call.kind} of "
                              f"group {call.group or 'world'!r} waits for rank(s) {others}, "
                              f"which call other collectives first (the ranks' dependencies "
                              f"order their collectives differently: a deadlock)")
    return TraceError(f"{trace.name}: replay made no progress")


@dataclass(frozen=True)
class _AllreduceCheck:
    """When a step is only all-reduces over all ranks (the sample traces are), the values are
    checked too: inputs are small integers in float32, so every algorithm's sum is exact and
    k all-reduces in place give n^(k-1) times the sum (out of place: the sum)."""

    count: int
    calls: int
    addr: int
    in_place: bool
    inputs: np.ndarray

    @staticmethod
    def inputs_for(trace: StepTrace, plan: ReplayPlan, sc: Scenario) -> np.ndarray | None:
        """Inputs written to every rank's data when the step can be checked, else None."""
        kinds = {(c.kind, c.nbytes, c.ranks, c.algo) for c in plan.calls}
        comm = any(op.kind in (SEND, RECV) for rank in trace.ranks for op in rank.ops)
        if len(kinds) != 1 or comm:
            return None
        kind, nbytes, ranks, _ = next(iter(kinds))
        n, calls = len(ranks), len(plan.calls)
        if kind != "all_reduce" or ranks != tuple(range(trace.n_ranks)) \
                or 8 * n ** calls >= EXACT_FLOAT32:
            return None
        rng = np.random.default_rng(17)
        inputs = rng.integers(-8, 9, (n, other.elements(nbytes))).astype(np.float32)
        for r in ranks:
            sc.write_host_memory(r, 0, inputs[r])
        return inputs

    @classmethod
    def of(cls, inputs, plan: ReplayPlan, built: dict) -> _AllreduceCheck | None:
        """The check of the last all-reduce built, if inputs were written."""
        if inputs is None:
            return None
        last = built[plan.calls[-1]]
        return cls(last.count, len(plan.calls), last.result_addr,
                   last.result_addr == last.input_addr, inputs)

    def reads(self) -> list[tuple[int, int, int, str]]:
        """Host memory to bring back: every rank's result."""
        return [(r, self.addr, self.count, other.DTYPE) for r in range(len(self.inputs))]

    def verify(self, result) -> bool:
        """Every rank holds the exact expected sum."""
        n = len(self.inputs)
        want = self.inputs.astype(np.float64).sum(axis=0)
        if self.in_place:
            want = want * float(n) ** (self.calls - 1)
        return all(np.array_equal(result.read(r, self.addr, self.count, other.DTYPE), want)
                   for r in range(n))
