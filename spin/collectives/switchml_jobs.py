"""SwitchML jobs on a scenario: ``SwitchMLJob`` describes one aggregation (its number selects
its slot range in every switch it crosses); ``install_jobs`` installs the switch and worker
handler programs for any number of them, sharing the switches' memory, and returns the
``SwitchMLSetup`` whose ``start``/``post`` are the host-program steps of each rank.

The allreduce builders (``switch``, ``quantize``, ``hamming_mesh_allreduce``) sit on top of this
module; see ``spin.collectives.switch`` for the protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..handler import ExecutionContext
from ..wire import switchml as SW
from .common import check_args
from .switch_tree import aggregation_tree

DEFAULT_WINDOW = 128          # slots per worker (SwitchML: 256 outstanding packets per worker)
PART_SLOTS = 128              # slots a start packet opens (handlers.switchml_worker.PART_SLOTS)
MAX_MTU, MIN_MTU = 4096, 256


@dataclass(frozen=True)
class SwitchMLJob:
    """One aggregation: ``count`` elements at ``addr`` (in and out) on every host of ``hosts``,
    summed (or max'ed) in the switches. ``job`` is SwitchML's job number (0..255);
    ``aggregators`` names the switches its tree may aggregate in (default: every switch).
    ``ordered`` (floats only): each switch sums its children in child order, so the result does
    not depend on arrival order, loss or retransmissions (a row of handler memory per child and
    slot); False adds in arrival order (no rows)."""

    job: int
    hosts: tuple[int, ...]
    count: int
    addr: int
    kick_addr: int
    op: int = SW.MSG_SUM_INT32
    window: int = DEFAULT_WINDOW
    aggregators: tuple[str, ...] | None = None
    ordered: bool = True


@dataclass
class SwitchMLSetup:
    """What ``install_jobs`` installed: execution contexts, trees (root and switches per job)."""

    contexts: dict = field(default_factory=dict)     # device -> ExecutionContext
    roots: dict[int, str] = field(default_factory=dict)
    trees: dict[int, dict] = field(default_factory=dict)
    mtu: int = 1024
    qp: int = 0

    def start(self, prog, job: SwitchMLJob) -> None:
        """Host-program steps of one rank for ``job``: post the start, wait for the result."""
        self.post(prog, job)
        prog.wait_event()

    def post(self, prog, job: SwitchMLJob) -> None:
        """Post the start of ``job`` to the rank's own NIC (through the NIC's loopback, one
        packet per 128 slots of window) without waiting: jobs posted together run at once, and
        ``prog.wait_event(count)`` waits for their ``count`` results."""
        parts = -(-min(job.window, self.chunks(job)) // PART_SLOTS)
        prog.send(prog.node, parts * self.mtu, qp=self.qp, local_addr=job.kick_addr,
                  remote_addr=SW.pack(SW.MSG_CONTROL, job.job, SW.CONTROL_KICK, 0))

    def chunks(self, job: SwitchMLJob) -> int:
        """Packets each rank sends for ``job`` (k = MTU/w elements each, the last may be short)."""
        return -(-job.count // (self.mtu // SW.element_bytes(job.op)))


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
    from handlers.switchml import switch_memory, switchml_switch_program  # spin -> handlers:
    from handlers.switchml_worker import worker_memory, switchml_worker_program  # at run time
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
    topo = sc.topology
    setup = SwitchMLSetup(mtu=mtu, qp=qp)
    per_switch: dict[str, list[dict]] = {}
    per_host: dict[int, list[dict]] = {}
    equal_cost = topo.equal_cost_ports() if len(topo.switches) > 1 else None
    for job in jobs:
        _check_job(sc, job)
        k = mtu // SW.element_bytes(job.op)
        root, nodes = aggregation_tree(topo, job.hosts, equal_cost, job.aggregators)
        setup.roots[job.job], setup.trees[job.job] = root, nodes
        entry = {}
        for s, node in nodes.items():
            group = sc.multicast_group(s, node.host_ports) if node.host_ports else -1
            children = [("switch" if kind == "relay" else kind, node_id, under)
                        for kind, node_id, under in node.children]     # relayed: unicast
            per_switch.setdefault(s, []).append({
                "job": job.job, "op": job.op, "ordered": job.ordered,
                "slots": job.window, "k": k, "children": children,
                "parent_port": node.parent_port, "parent_node": node.parent_node,
                "group": group})
            entry.update(node.entry)
        for h in job.hosts:
            per_host.setdefault(h, []).append({
                "job": job.job, "op": job.op, "window": job.window, "slot_base": 0, "k": k,
                "count": job.count, "input_addr": job.addr, "output_addr": job.addr,
                # any other rank: the first switch takes the contribution on the way (a
                # contribution to the worker's own node would stay in its NIC's loopback)
                "dst": entry.get(h, job.hosts[1] if h == job.hosts[0] else job.hosts[0])})
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
