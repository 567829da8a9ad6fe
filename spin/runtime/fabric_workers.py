"""The engine as a ``spin.parallel`` worker program: one Simulation per worker process, owning
a subset of the devices; frames for devices owned elsewhere leave through the engine's outbox and
arrive through ``inject_frames`` with the sender's event key, so every worker count produces the
same event order per device and therefore bit-identical results."""
from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine import state as S
from ..engine.ports import inject_frames
from ..errors import ConfigError, TransportError
from .fabric_frames import ANY_PEER, REASONS, check_peer_frames, split_outbox
from ..assembly.partition import auto_partition, link_lookahead_ps
from ..assembly.built import build
from ..assembly.state_builder import slot_bytes_for_mtu
from ..parallel import codec
from ..parallel.batch import FrameBatch
from ..parallel.coordinator import Deferred, run_fabric
from ..parallel.program import INF_PS, worker_factory
from ..parallel.sync import run_single
from ..results import RunResult
from .simulation import CapturedFrames, Simulation, write_link_pcaps
from ..describe.scenario import Scenario
from ..results.timeline import Trace
from ..units import ns
from ..wire.headers import ETH_BYTES, IPV4_BYTES, UDP_BYTES

FACTORY = "spin.runtime.fabric_workers:make_worker"
# Every frame is Ethernet II / IPv4 / UDP at least (DESIGN §4); shorter bytes are not a frame.
MIN_FRAME_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES


@dataclass(frozen=True)
class PartitionedScenario:
    scenario: Scenario
    owner: tuple[int, ...]   # worker id of every device (hosts first, then switches)
    # host-memory regions (node, addr, nbytes) to bring back from the owning workers
    regions: tuple[tuple[int, int, int], ...] = ()
    # hosts served by external programs (spin.endpoint): owned by the worker of their link's
    # peer device, local to none
    endpoints: tuple = ()


def check_assign(scenario: Scenario, workers: int, assign: dict[str, int]) -> None:
    """Names and worker ids of an explicit assignment (cheap: checked before workers start)."""
    names = scenario.topology.device_names()
    unknown = sorted(set(assign) - set(names))
    if unknown:
        raise ConfigError(f"workers.assign names unknown devices {unknown}; devices: {', '.join(names)}")
    for name, w in assign.items():
        if not 0 <= w < workers:
            raise ConfigError(f"workers.assign.{name} = {w}; valid workers are 0..{workers - 1}")


def explicit_partition(scenario: Scenario, workers: int, assign: dict[str, int]) -> tuple[int, ...]:
    """The assignment, completed by the automatic partition for devices it does not name."""
    check_assign(scenario, workers, assign)
    base = auto_partition(scenario, workers)
    return tuple(assign.get(name, base[i]) for i, name in enumerate(scenario.topology.device_names()))


class PeerFrameCheck:
    """Which frames a worker accepts from a peer, decided from the topology and the partition.

    A frame from worker ``w`` must enter through a port of a device this worker owns, whose
    link peer is a device ``w`` owns, and carry the event key of that peer device; its length
    must fit the engine's slot and hold at least Ethernet/IPv4/UDP headers. Anything else would
    make the engine misdeliver, read stale slot bytes, or break the deterministic event order.
    """

    def __init__(self, topology, owner: tuple[int, ...], worker_id: int, slot_bytes: int,
                 reshaped_links: frozenset[int] = frozenset(),
                 max_frame_bytes: int | None = None) -> None:
        """``max_frame_bytes``: the longest frame accepted, when longer than a slot (header
        slots: a row carries a frame's headers, its generated payload is not sent)."""
        names = topology.device_names()
        index = {n: i for i, n in enumerate(names)}
        gp = topology.global_ports()
        n_ports = len(gp)
        self.port_dev = np.full(n_ports, -1, np.int64)
        for (name, _link), port in gp.items():
            self.port_dev[port] = index[name]
        self.peer_dev = np.full(n_ports, -1, np.int64)
        for i, (a, b) in topology.link_ports().items():
            if i in reshaped_links:   # its far end changes at a re-shape
                self.peer_dev[a] = self.peer_dev[b] = ANY_PEER
            else:
                self.peer_dev[a], self.peer_dev[b] = self.port_dev[b], self.port_dev[a]
        self.owner = np.asarray(owner, np.int64)
        self.worker_id = worker_id
        self.slot_bytes = slot_bytes
        self.max_frame_bytes = max_frame_bytes
        self.rejected: dict[str, int] = {}

    def longest(self, batch: FrameBatch) -> int:
        """The longest frame length a batch may claim."""
        if self.max_frame_bytes is not None:
            return self.max_frame_bytes
        return min(self.slot_bytes, batch.slot_bytes)

    def reason(self, batch: FrameBatch, sender: int, not_before_ps: int = 0) -> str | None:
        """None if every frame is acceptable from ``sender`` (arriving at or after
        ``not_before_ps``), else the first failed check (see fabric_frames.REASONS)."""
        if batch.n == 0:
            return None
        code = check_peer_frames(self.port_dev, self.peer_dev, self.owner, self.worker_id, sender,
                                 MIN_FRAME_BYTES, self.longest(batch), not_before_ps,
                                 _own(batch.arrival_ps, np.int64), _own(batch.dst_device, np.int32),
                                 _own(batch.dst_port, np.int32), _own(batch.order_key, np.int64),
                                 _own(batch.length, np.int32))
        return REASONS[code] if code else None

    def admit(self, batch: FrameBatch, sender: int, not_before_ps: int = 0) -> str | None:
        why = self.reason(batch, sender, not_before_ps)
        if why is not None:
            self.rejected[why] = self.rejected.get(why, 0) + 1
        return why


def _first(mask: np.ndarray) -> int | None:
    """Index of the first True, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _own(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` itself if the engine can take it as is (dtype, C order, writable), else a copy: the
    compiled checks and ``inject_frames`` then see one array type, and no copy is made per round."""
    if a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, dtype)


def cut_lookahead_ps(scenario: Scenario, owner) -> int:
    """Earliest a frame sent now can reach another worker: the smallest ``link_lookahead_ps`` over
    links between workers (latency, plus the pipeline of a switch at the far end). Links an
    optical re-shape may re-pair count with their latency alone, whatever their owners."""
    topo = scenario.topology
    index = {n: i for i, n in enumerate(topo.device_names())}
    per_link = link_lookahead_ps(scenario)
    swapped = {i for f in scenario.faults if f.kind == "swap" for i in (f.link, f.other)}
    bounds = []
    for i, l in enumerate(topo.links):
        if i in swapped:
            bounds.append(ns(l.config.latency_ns))
        elif owner[index[l.a]] != owner[index[l.b]]:
            bounds.append(int(per_link[i]))
    return min(bounds) if bounds else INF_PS


class EngineWorker:
    """``spin.parallel.WorkerProgram`` over a Simulation that owns some devices."""

    def __init__(self, spec: PartitionedScenario, worker_id: int, n_workers: int):
        self.spec = spec
        self.worker_id = worker_id
        self.n_workers = n_workers
        self.owner = np.asarray(spec.owner, np.int64)
        attached = {e.node for e in spec.endpoints}
        local = {d for d, w in enumerate(spec.owner) if w == worker_id and d not in attached}
        self.sim = Simulation(build(spec.scenario, local, attached_hosts=bool(attached)))
        self.sim.start()
        self._ran_until = 0
        topo = spec.scenario.topology
        names = topo.device_names()
        self._lookahead = cut_lookahead_ps(spec.scenario, spec.owner)
        self._names = [names[d] for d in sorted(local)]
        reshaped = frozenset(i for f in spec.scenario.faults if f.kind == "swap"
                             for i in (f.link, f.other))
        self.check = PeerFrameCheck(topo, spec.owner, worker_id, int(self.sim.st.pool.shape[1]),
                                    reshaped, max_frame_bytes=self._max_frame_bytes())
        # load (or compile) the engine and the per-round helpers now, not inside the first round
        self.sim.run_until(0)  # no event is before 0: loads the machine code, changes nothing
        self.check.reason(FrameBatch.trusted(
            np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int64),
            np.zeros(1, np.int32), np.zeros((1, 1), np.uint8)), 0)
        split_outbox(self.sim.st.out, 0, self.check.port_dev, self.check.owner, n_workers)
        self.deliver(FrameBatch.trusted(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32),
                                        np.zeros(0, np.int64), np.zeros(0, np.int32),
                                        np.zeros((0, self.check.slot_bytes), np.uint8)), warm=True)

    def admit(self, batch: FrameBatch, sender: int, not_before_ps: int) -> str | None:
        """Refuse a peer's batch before the engine touches it (see PeerFrameCheck)."""
        return self.check.admit(batch, sender, not_before_ps)

    def describe(self) -> str:
        return f"devices {', '.join(self._names)}"

    def events_processed(self) -> int:
        return int(self.sim.st.sc[S.SC_EVENTS])

    def lookahead_ps(self) -> int:
        return self._lookahead

    def next_event_ps(self) -> int:
        return self.sim.next_event_ps()

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        self._ran_until = max(self._ran_until, t_end_ps)  # a frame may not arrive before this
        out: list[dict[int, FrameBatch]] = []
        while True:
            status = self.sim.run_until(t_end_ps)
            if self.sim.st.sc[S.SC_OUT_N]:
                out.append(self._take_outbox())
            if status != S.STATUS_OUTBOX_FULL:
                break
        if len(out) <= 1:
            return out[0] if out else {}  # the common case: nothing, or one outbox, crossed the cut
        merged: dict[int, FrameBatch] = {}
        for part in out:
            for w, b in part.items():
                merged[w] = FrameBatch.concat([merged[w], b]) if w in merged else b
        return merged

    def _max_frame_bytes(self) -> int | None:
        """With header slots, the longest frame (an MTU of payload and its headers) though a
        slot holds its headers only; else None (a frame fits its slot)."""
        if self.sim.st.sc[S.SC_HEADER_SLOTS] == 0:
            return None
        return slot_bytes_for_mtu(self.spec.scenario.engine.mtu_bytes)

    def _take_outbox(self) -> dict[int, FrameBatch]:
        """The engine's outbox as one batch per destination worker (one compiled pass)."""
        st = self.sim.st
        n = int(st.sc[S.SC_OUT_N])
        st.sc[S.SC_OUT_N] = 0
        arrival, device, port, key, length, order, starts, identity = split_outbox(
            st.out, n, self.check.port_dev, self.check.owner, self.n_workers)
        frames = st.out_frames[:n].copy() if identity else st.out_frames[order]
        result = {}
        for w in range(self.n_workers):
            a, b = int(starts[w]), int(starts[w + 1])
            if b > a:
                result[w] = FrameBatch.trusted(arrival[a:b], device[a:b], port[a:b], key[a:b],
                                               length[a:b], frames[a:b])
        return result

    def deliver(self, batch: FrameBatch, warm: bool = False) -> None:
        """Queue a batch's frames at their ingress ports. What the transport path refuses is
        refused here too, as a TransportError naming the first bad frame (the engine's
        ``inject_frames`` only refuses, unnamed, what would write outside its state)."""
        if batch.n == 0 and not warm:
            return
        if batch.n:
            self._check_delivery(batch)
        self.deliver_admitted(batch)

    def deliver_admitted(self, batch: FrameBatch) -> None:
        """``deliver`` for frames ``admit`` passed (the round loop): no second check."""
        inject_frames(self.sim.st, _own(batch.arrival_ps, np.int64), _own(batch.dst_port, np.int32),
                      _own(batch.order_key, np.int64), _own(batch.length, np.int32),
                      _own(batch.frames, np.uint8))

    def _check_delivery(self, batch: FrameBatch) -> None:
        port_dev, n = self.check.port_dev, batch.n
        port = np.asarray(batch.dst_port, np.int64)
        length = np.asarray(batch.length, np.int64)
        arrival = np.asarray(batch.arrival_ps, np.int64)
        now = max(int(self.sim.st.sc[S.SC_NOW]), self._ran_until)  # what the engine ran past
        shapes = all(len(a) == n for a in (batch.dst_port, batch.length, batch.order_key,
                                            batch.dst_device)) and batch.frames.shape[0] == n
        bad = None
        if not shapes:
            bad = (0, "shape", f"arrays of {n} frames disagree in length")
        elif (i := _first(port < 0) if port.min() < 0 else _first(port >= len(port_dev))) is not None:
            bad = (i, "bad_port", f"port {port[i]} (valid: 0..{len(port_dev) - 1})")
        elif (i := _first(self.owner[port_dev[port]] != self.worker_id)) is not None:
            bad = (i, "not_owned", f"port {port[i]} of device {port_dev[port[i]]}, which worker "
                   f"{self.owner[port_dev[port[i]]]} owns")
        elif (i := _first((length < MIN_FRAME_BYTES)
                          | (length > self.check.longest(batch)))) is not None:
            bad = (i, "bad_length", f"length {length[i]} B (valid: {MIN_FRAME_BYTES}.."
                   f"{self.check.longest(batch)})")
        elif (i := _first(arrival < now)) is not None:
            bad = (i, "arrival_in_past", f"arrival {arrival[i]} ps, before {now} ps, which the "
                   f"engine has run to")
        if bad is not None:
            i, reason, what = bad
            raise TransportError(f"worker {self.worker_id}: deliver refused a batch of {n} frames "
                                 f"({reason}): frame {i}: {what}")

    def result(self) -> dict:
        self.sim._drain_capture()
        d = self.sim.result().to_dict(include_wall=False)
        c = self.sim.captured
        d["captured"] = {"time_ps": c.time_ps.tolist(), "port": c.port.tolist(),
                         "length": c.length.tolist(), "slot_bytes": int(c.frames.shape[1]),
                         "frames": base64.b64encode(c.frames.tobytes()).decode()}
        d["regions"] = [[node, addr, n, self.sim.host_memory(node)[addr:addr + n].tobytes().hex()]
                        for node, addr, n in self.spec.regions if node in self.sim.local]
        d["peer_batches_rejected"] = dict(self.check.rejected)
        d["handler_memory"] = codec.encode(self.sim.local_handler_memories()).decode()
        if self.spec.scenario.tracing is not None:
            d["trace"] = Trace.pack(*self.sim.trace_records())
        return d


@worker_factory
def make_worker(spec: PartitionedScenario, worker_id: int, n_workers: int) -> EngineWorker:
    if any(spec.owner[e.node] == worker_id for e in spec.endpoints):
        from .endpoint_worker import EndpointHostWorker
        return EndpointHostWorker(spec, worker_id, n_workers)
    return EngineWorker(spec, worker_id, n_workers)


def endpoint_owners(owner: tuple[int, ...], endpoints) -> tuple[int, ...]:
    """Each attached host goes to the worker of its link's peer device: its frames then never
    cross workers, and that worker's bridge is the program's only contact."""
    out = list(owner)
    for e in endpoints:
        out[e.node] = out[e.peer_device]
    return tuple(out)


def run_partitioned(scenario: Scenario, workers: int, *, pcap_dir: str | Path | None = None,
                    quiet: bool = True, partition: dict[str, int] | None = None,
                    timeout_s: float | None = None, bind: str = "127.0.0.1",
                    remote_workers: int = 0, key_file: str | None = None,
                    port: int = 0, regions: tuple[tuple[int, int, int], ...] = (),
                    endpoints: tuple = (),
                    silence_timeout_s: float | None = None, launched=None,
                    join_timeout_s: float | None = None) -> RunResult:
    """Run on ``workers`` processes (``remote_workers`` of them joining from elsewhere) and
    merge their results. ``regions`` (node, addr, nbytes) of host memory come back in
    ``result.memory_regions``; ``endpoints`` (``spin.endpoint.AttachedEndpoint``) are served by
    the workers next to them."""
    if workers < 1:
        raise ConfigError(f"workers = {workers}; must be >= 1")
    if partition:
        check_assign(scenario, workers, partition)

    def spec() -> PartitionedScenario:  # computed while the workers start
        owner = (explicit_partition(scenario, workers, partition) if partition
                 else auto_partition(scenario, workers))
        return PartitionedScenario(scenario, endpoint_owners(owner, endpoints), tuple(regions),
                                   tuple(endpoints))

    outcome = run_fabric(FACTORY, Deferred(spec), workers, quiet=quiet, timeout_s=timeout_s, bind=bind,
                         allow_remote=remote_workers, key_file=key_file, port=port,
                         launched=launched,
                         **({} if silence_timeout_s is None else
                            {"silence_timeout_s": silence_timeout_s}),
                         **({} if join_timeout_s is None else {"join_timeout_s": join_timeout_s}))
    result = merge_worker_results(scenario, list(outcome.results), pcap_dir)
    loop = outcome.loop_wall_s
    result.wall = {"seconds": loop, "total_seconds": outcome.wall_s, "rounds": outcome.rounds,
                   "events_per_s": result.events / loop if loop else 0.0,
                   "frames_exchanged": outcome.transport.get("frames_sent", 0),
                   "bytes_exchanged": outcome.transport.get("bytes_sent", 0),
                   # each worker's CPU time in its round loop (engine, exchange and checks)
                   "worker_loop_cpu_s": [w.stats.get("loop_cpu_ns", 0) / 1e9
                                         for w in outcome.workers],
                   # peer messages refused by reason (junk, bad batches), and the frames they held
                   "peer_batches_rejected": outcome.transport.get("rejected", {}),
                   "peer_frames_rejected": outcome.transport.get("rejected_frames", 0)}
    return result


def run_in_process(scenario: Scenario, *, pcap_dir: str | Path | None = None,
                   regions: tuple[tuple[int, int, int], ...] = (), endpoints: tuple = (),
                   until_ps: int | None = None) -> RunResult:
    """One worker, in this process, through the worker protocol (no ZeroMQ between workers):
    what a 1-worker run with endpoints needs, since the attached hosts are local to no engine."""
    import time
    from .endpoint_worker import EndpointHostWorker
    spec = PartitionedScenario(scenario, endpoint_owners((0,) * len(scenario.topology.device_names()),
                                                         endpoints), tuple(regions), tuple(endpoints))
    program = make_worker(spec, 0, 1)
    try:
        started = time.perf_counter()
        outcome = run_single(program, until_ps)
        wall = time.perf_counter() - started
        part = program.result()
    except BaseException as exc:
        if isinstance(program, EndpointHostWorker):
            program.close(f"the run failed: {type(exc).__name__}: {exc}")
        raise
    result = merge_worker_results(scenario, [part], pcap_dir)
    result.wall = {"seconds": wall, "rounds": outcome.rounds,
                   "events_per_s": result.events / wall if wall else 0.0}
    return result


def merge_worker_results(scenario: Scenario, results: list[dict],
                         pcap_dir: str | Path | None = None) -> RunResult:
    """One RunResult from the workers' ``result()`` dicts: captures (and pcaps), host-memory
    regions, handler memory (tagged JSON, ``spin.parallel.codec``) and traces brought back."""
    parts, captured, memory, traces, handler_memory = [], [], {}, [], {}
    for d in results:
        if "trace" in d:
            traces.append(Trace.unpack(d.pop("trace")))
        c = d.pop("captured")
        frames = np.frombuffer(base64.b64decode(c["frames"]), np.uint8)
        captured.append(CapturedFrames(np.asarray(c["time_ps"], np.int64),
                                       np.asarray(c["port"], np.int64),
                                       np.asarray(c["length"], np.int64),
                                       frames.reshape(-1, c["slot_bytes"])))
        for node, addr, n, data in d.pop("regions"):
            memory[(int(node), int(addr), int(n))] = bytes.fromhex(data)
        handler_memory.update(codec.decode(d.pop("handler_memory")))
        d.pop("peer_batches_rejected")  # also counted, with the transport's own refusals
        parts.append(RunResult.from_dict(d))
    result = RunResult.merge(parts)
    if pcap_dir is not None:
        write_link_pcaps(scenario, CapturedFrames.concat(captured), pcap_dir)
    result.memory_regions = memory
    result.handler_memories = dict(sorted(handler_memory.items()))
    result.handler_contexts = tuple(scenario.contexts)
    if traces:   # every worker traced its own devices: one timeline, merged by time
        result.trace = Trace.build(scenario, np.concatenate([r for r, _ in traces]),
                                   result.messages, sum(lost for _, lost in traces))
    return result
