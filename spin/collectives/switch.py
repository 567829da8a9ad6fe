"""Allreduce by aggregation in the switches, with SwitchML's semantics (``handlers/switchml.py``
in the switches, ``handlers/switchml_worker.py`` on the workers' NICs).

Each rank's NIC streams its vector through a window of switch slots, one packet of k = MTU/4
elements per slot (header in the RETH VA, ``spin.wire.switchml``); the switches of the job's
tree (``switch_tree``) add the children's packets and send one partial up; the root multicasts
the sum down; each NIC writes it over its input (in place, as MPI_IN_PLACE) and raises one host
event at the end. The host only posts the start (a message to its own node, which the NIC
turns around through its loopback, so it crosses no link and cannot be lost) and waits: host
CPU is two message overheads. Lost contributions and results are resent on a NIC-side timer
(``spin_set_timer``; ``handlers/switchml_worker.py``).

Jobs: ``SwitchMLJob`` describes one (its number selects its slot range in every switch it
crosses); ``install_jobs`` sets up any number of them on one scenario, sharing the switches'
memory, and returns per job the host-program steps to call. ``build`` is the registry's
builder (one job over all ranks): int32 sums exactly; float32 is summed natively in the switch
(as SHARP and Flare do) or, with ``mode="quantized"``, converted to int32 at the workers with
SwitchML's block exponents (``spin.collectives.quantize``).

Host memory (same on every rank): ``[0, S)`` data, in and out; then one MTU per 128 slots of
window for the start message; quantized mode adds the block exponents and the int32 copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..wire import switchml as SW
from .common import AllreducePlan, align, check_args, check_memory, write_inputs

NAME = "switch"
DEFAULT_WINDOW = 128          # slots per worker (SwitchML: 256 outstanding packets per worker)
# The registry's workers retransmit after 100 us: a frame dropped anywhere (a full switch
# message table, a lossy link) then costs time, not the run. SwitchML's own default is 10 ms,
# tuned for DPDK hosts; runs here last microseconds to milliseconds of virtual time.
DEFAULT_TIMEOUT_US = 100.0
PART_SLOTS = 128              # slots a start packet opens (handlers.switchml_worker.PART_SLOTS)
MAX_MTU, MIN_MTU = 4096, 256
MODES = ("native", "quantized")


@dataclass(frozen=True)
class SwitchMLJob:
    """One aggregation: ``count`` elements at ``addr`` (in and out) on every host of ``hosts``,
    summed (or max'ed) in the switches. ``job`` is SwitchML's job number (0..255)."""

    job: int
    hosts: tuple[int, ...]
    count: int
    addr: int
    kick_addr: int
    op: int = SW.MSG_SUM_INT32
    window: int = DEFAULT_WINDOW


@dataclass
class SwitchMLSetup:
    """What ``install_jobs`` installed: execution contexts, trees (root and switches per job)."""

    contexts: dict = field(default_factory=dict)     # device -> ExecutionContext
    roots: dict[int, str] = field(default_factory=dict)
    trees: dict[int, dict] = field(default_factory=dict)
    mtu: int = 1024
    qp: int = 0

    def start(self, prog, job: SwitchMLJob) -> None:
        """Host-program steps of one rank for ``job``: post the start to its own NIC (through
        the NIC's loopback, one packet per 128 slots of window), wait for the result."""
        parts = -(-min(job.window, self.chunks(job)) // PART_SLOTS)
        prog.send(prog.node, parts * self.mtu, qp=self.qp, local_addr=job.kick_addr,
                  remote_addr=SW.pack(SW.MSG_CONTROL, job.job, SW.CONTROL_KICK, 0))
        prog.wait_event()

    def chunks(self, job: SwitchMLJob) -> int:
        """Packets each rank sends for ``job`` (k = MTU/4 elements each, the last may be short)."""
        return -(-job.count // (self.mtu // 4))


def kick_bytes(window: int, mtu: int = MAX_MTU) -> int:
    """Bytes of the start message: one MTU-sized packet per 128 slots of window."""
    return -(-window // PART_SLOTS) * mtu


def _check_job(sc, job: SwitchMLJob) -> None:
    if not 0 <= job.job < 256:
        raise ConfigError(f"SwitchML job={job.job}: valid job numbers are 0..255")
    if not 1 <= job.window < SW.MAX_SLOTS:
        raise ConfigError(f"SwitchML window={job.window}: valid windows are 1..{SW.MAX_SLOTS - 1}")
    if job.op not in SW.AGGREGATING_TYPES:
        raise ConfigError(f"SwitchML op={job.op}: valid choices {SW.AGGREGATING_TYPES}")
    if job.count < 1 or job.count >= 1 << 32:
        raise ConfigError(f"SwitchML count={job.count}: need 1..2**32-1 elements")
    check_args(sc, job.count, "int32", job.hosts)


def install_jobs(sc, jobs: list[SwitchMLJob], *, qp: int = 0, timeout_us: float = 0.0,
                 drop_ppm: int = 0, drop_result_ppm: int = 0, seed: int = 1) -> SwitchMLSetup:
    """Install the switch and worker programs for ``jobs`` on scenario ``sc`` (jobs may share
    switches and hosts: each switch holds every job that crosses it, in disjoint slot ranges).
    ``timeout_us`` > 0 runs the workers' retransmission timer (a handler timer on each NIC,
    resending a chunk whose result is ``timeout_us`` overdue); ``drop_ppm`` and
    ``drop_result_ppm`` make every switch drop contributions / results (parts per million),
    as SwitchML's drop simulator. Returns the setup; call ``setup.start(prog, job)`` in each
    rank's host program."""
    from handlers.switchml import switch_memory, switchml_switch_program
    from handlers.switchml_worker import worker_memory, switchml_worker_program
    from ..handler import ExecutionContext
    from .switch_tree import aggregation_tree
    if not 0 <= qp < sc.host.qps:
        raise ConfigError(f"SwitchML qp={qp}: valid QPs are 0..{sc.host.qps - 1}")
    if not 0 <= timeout_us <= 1_000_000 or not 0 <= drop_ppm <= 1_000_000 \
            or not 0 <= drop_result_ppm <= 1_000_000:
        raise ConfigError(f"SwitchML timeout_us={timeout_us} (0..1000000: a handler timer "
                          f"lasts at most 1 s), drop_ppm={drop_ppm}, "
                          f"drop_result_ppm={drop_result_ppm} (0..1000000)")
    taken = sorted({str(c.node) for c in sc.contexts if c.match_qp == qp
                    and c.program.name in ("switchml", "switchml_worker")})
    if taken:
        raise ConfigError(f"SwitchML on qp={qp} is already installed on {', '.join(taken)}: "
                          f"give all jobs of a QP to one install_jobs call (they share each "
                          f"switch's memory), or use another qp")
    numbers = [j.job for j in jobs]
    if len(set(numbers)) != len(numbers):
        raise ConfigError(f"SwitchML jobs {numbers}: job numbers must differ")
    mtu = sc.engine.mtu_bytes
    k = mtu // 4
    topo = sc.topology
    setup = SwitchMLSetup(mtu=mtu, qp=qp)
    per_switch: dict[str, list[dict]] = {}
    per_host: dict[int, list[dict]] = {}
    equal_cost = topo.equal_cost_ports() if len(topo.switches) > 1 else None
    for job in jobs:
        _check_job(sc, job)
        root, nodes = aggregation_tree(topo, job.hosts, equal_cost)
        setup.roots[job.job], setup.trees[job.job] = root, nodes
        for s, node in nodes.items():
            group = sc.multicast_group(s, node.host_ports) if node.host_ports else -1
            per_switch.setdefault(s, []).append({
                "job": job.job, "slots": job.window, "k": k, "children": node.children,
                "parent_port": node.parent_port, "parent_node": node.parent_node,
                "group": group})
        for h in job.hosts:
            per_host.setdefault(h, []).append({
                "job": job.job, "op": job.op, "window": job.window, "slot_base": 0, "k": k,
                "count": job.count, "input_addr": job.addr, "output_addr": job.addr,
                # any other rank: the first switch takes the contribution on the way (a
                # contribution to the worker's own node would stay in its NIC's loopback)
                "dst": job.hosts[1] if h == job.hosts[0] else job.hosts[0]})
    n_hosts = len(topo.hosts)
    for i, s in enumerate(sorted(per_switch, key=topo.switches.index)):
        mem = switch_memory(per_switch[s], n_hosts, drop_ppm=drop_ppm,
                            drop_result_ppm=drop_result_ppm, seed=seed + i)
        setup.contexts[s] = sc.install(ExecutionContext(
            node=s, program=switchml_switch_program(mem), match_qp=qp))
    timeout_ps = int(round(timeout_us * 1_000_000))
    for h in sorted(per_host):
        mem = worker_memory(h, per_host[h], timeout_ps)
        setup.contexts[h] = sc.install(ExecutionContext(
            node=h, program=switchml_worker_program(mem), match_qp=qp))
    return setup


DTYPES = ("int32", "float32")   # what the switch adds natively (16-bit types are refused)


def programs() -> list:
    """The handler programs a switch allreduce installs (the engine is compiled for these)."""
    from handlers.switchml import switchml_switch_program
    from handlers.switchml_worker import switchml_worker_program
    return [switchml_switch_program(), switchml_worker_program()]


def plan_memory(n: int, count: int, dtype: str, mode: str = "native",
                window: int = DEFAULT_WINDOW) -> int:
    """Host bytes the layout needs: data, the start message, and in quantized mode the block
    exponents and the int32 copy."""
    from .quantize import quantized_bytes
    base = align(4 * count) + align(kick_bytes(window))
    return base + (quantized_bytes(count, MIN_MTU // 4) if mode == "quantized" else 0)


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None, qp: int = 0,
          mode: str = "native", window: int = DEFAULT_WINDOW, job: int = 0,
          timeout_us: float = DEFAULT_TIMEOUT_US, drop_ppm: int = 0, drop_result_ppm: int = 0
          ) -> AllreducePlan:
    """Add an in-switch allreduce of ``count`` elements per rank to ``scenario``: int32 or
    float32 (``mode`` "native": the switch adds float32; "quantized": SwitchML's block-exponent
    int32). The retransmission and drop options are ``install_jobs``'s; the timer runs by
    default (``DEFAULT_TIMEOUT_US``).

    Large fabrics need engine room for a window of packets per rank: ``EngineConfig``
    ``max_tx_messages`` and ``buffer_slots`` above ranks x window, and ``SwitchConfig``
    ``max_inflight_messages`` above what a switch holds at once (every contribution is a
    message until its handler finished), else frames are dropped and retransmitted."""
    hosts = check_args(scenario, count, dtype, hosts)
    if dtype not in DTYPES:
        raise ConfigError(f"switch allreduce dtype={dtype!r}; valid choices: int32, float32 "
                          f"(the switch sums 32-bit words; 16-bit data would travel as int32)")
    if mode not in MODES:
        raise ConfigError(f"switch allreduce mode={mode!r}; valid choices: {', '.join(MODES)}")
    quantized = mode == "quantized" and dtype == "float32"
    data = 0
    kick = align(4 * count)
    extra = align(kick + kick_bytes(window))
    plan = AllreducePlan(NAME if not quantized else f"{NAME}-quantized", hosts, count, dtype,
                         data, data, kick,
                         plan_memory(len(hosts), count, dtype, "quantized" if quantized
                                     else "native", window), (qp,))
    check_memory(scenario, plan)
    progs = [scenario.host_program(h) for h in hosts]
    for p in progs:
        p.mark(plan.start_mark)
    opts = dict(qp=qp, timeout_us=timeout_us, drop_ppm=drop_ppm, drop_result_ppm=drop_result_ppm)
    if quantized:
        from .quantize import add_quantized_steps
        add_quantized_steps(scenario, progs, hosts, count, data, kick, extra, job, window, opts)
    else:
        op = SW.MSG_SUM_INT32 if dtype == "int32" else SW.MSG_SUM_FLOAT32
        spec = SwitchMLJob(job, hosts, count, data, kick, op, window)
        setup = install_jobs(scenario, [spec], **opts)
        for p in progs:
            setup.start(p, spec)
    for p in progs:
        p.mark(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan


def switch_result_bound(inputs: np.ndarray, dtype: str, mode: str, k: int) -> np.ndarray:
    """Largest error per element the switch allreduce may make against the exact sum: 0 for
    int32; native float32 as any order of n-1 rounded additions (``measure.check_result``);
    quantized as ``quantize.error_bound`` with blocks of ``k`` elements."""
    from .measure import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF
    if dtype == "int32":
        return np.zeros(inputs.shape[1])
    if mode == "quantized":
        from .quantize import error_bound
        return error_bound(inputs, k)
    x = np.asarray(inputs, np.float64)
    return ((x.shape[0] - 1) * UNIT_ROUNDOFF["float32"] * np.abs(x).sum(axis=0)
            + x.shape[0] * SMALLEST_SUBNORMAL["float32"])
