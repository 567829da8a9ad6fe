"""The engine as a ``spin.parallel`` worker program: one Simulation per worker process, owning
a subset of the devices; frames for devices owned elsewhere leave through the engine's outbox and
arrive through ``inject_frames`` with the sender's event key, so every worker count produces the
same event order per device and therefore bit-identical results."""
from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .engine import state as S
from .engine.ports import inject_frames
from .errors import ConfigError
from .fabric_partition import auto_partition
from .parallel.batch import FrameBatch
from .parallel.program import INF_PS, worker_factory
from .results import RunResult
from .simulation import CapturedFrames, Scenario, Simulation, write_link_pcaps
from .units import ns
from .wire.headers import ETH_BYTES, IPV4_BYTES, UDP_BYTES

FACTORY = "spin.fabric_workers:make_worker"
# Every frame is Ethernet II / IPv4 / UDP at least (DESIGN §4); shorter bytes are not a frame.
MIN_FRAME_BYTES = ETH_BYTES + IPV4_BYTES + UDP_BYTES
KEY_DEVICE_SHIFT = 40  # event keys are (creating device << 40) | sequence (spin.engine.ports.next_key)


@dataclass(frozen=True)
class PartitionedScenario:
    scenario: Scenario
    owner: tuple[int, ...]   # worker id of every device (hosts first, then switches)
    # host-memory regions (node, addr, nbytes) to bring back from the owning workers
    regions: tuple[tuple[int, int, int], ...] = ()


def explicit_partition(scenario: Scenario, workers: int, assign: dict[str, int]) -> tuple[int, ...]:
    names = scenario.topology.device_names()
    unknown = sorted(set(assign) - set(names))
    if unknown:
        raise ConfigError(f"workers.assign names unknown devices {unknown}; devices: {', '.join(names)}")
    base = auto_partition(scenario, workers)
    owner = []
    for i, name in enumerate(names):
        w = assign.get(name, base[i])
        if not 0 <= w < workers:
            raise ConfigError(f"workers.assign.{name} = {w}; valid workers are 0..{workers - 1}")
        owner.append(w)
    return tuple(owner)


class PeerFrameCheck:
    """Which frames a worker accepts from a peer, decided from the topology and the partition.

    A frame from worker ``w`` must enter through a port of a device this worker owns, whose
    link peer is a device ``w`` owns, and carry the event key of that peer device; its length
    must fit the engine's slot and hold at least Ethernet/IPv4/UDP headers. Anything else would
    make the engine misdeliver, read stale slot bytes, or break the deterministic event order.
    """

    def __init__(self, topology, owner: tuple[int, ...], worker_id: int, slot_bytes: int) -> None:
        names = topology.device_names()
        index = {n: i for i, n in enumerate(names)}
        gp = topology.global_ports()
        n_ports = len(gp)
        self.port_dev = np.full(n_ports, -1, np.int64)
        for (name, _link), port in gp.items():
            self.port_dev[port] = index[name]
        self.peer_dev = np.full(n_ports, -1, np.int64)
        for a, b in topology.link_ports().values():
            self.peer_dev[a], self.peer_dev[b] = self.port_dev[b], self.port_dev[a]
        self.owner = np.asarray(owner, np.int64)
        self.worker_id = worker_id
        self.slot_bytes = slot_bytes
        self.rejected: dict[str, int] = {}

    def reason(self, batch: FrameBatch, sender: int) -> str | None:
        """None if every frame of the batch is acceptable from ``sender``, else the first failed check."""
        length = batch.length
        if int(length.min()) < MIN_FRAME_BYTES or int(length.max()) > min(self.slot_bytes, batch.slot_bytes):
            return "bad_length"
        ports = batch.dst_port.astype(np.int64)
        if int(ports.min()) < 0 or int(ports.max()) >= len(self.port_dev):
            return "bad_port"
        dev = self.port_dev[ports]
        if not np.array_equal(dev, batch.dst_device):
            return "device_mismatch"
        if (self.owner[dev] != self.worker_id).any():
            return "not_owned"
        peer = self.peer_dev[ports]
        if (peer < 0).any() or (self.owner[peer] != sender).any():
            return "wrong_sender"
        if (batch.order_key < 0).any() or ((batch.order_key >> KEY_DEVICE_SHIFT) != peer).any():
            return "bad_key"
        return None

    def admit(self, batch: FrameBatch, sender: int) -> str | None:
        why = self.reason(batch, sender)
        if why is not None:
            self.rejected[why] = self.rejected.get(why, 0) + 1
        return why


class EngineWorker:
    """``spin.parallel.WorkerProgram`` over a Simulation that owns some devices."""

    def __init__(self, spec: PartitionedScenario, worker_id: int, n_workers: int):
        self.spec = spec
        self.worker_id = worker_id
        self.owner = np.asarray(spec.owner, np.int64)
        local = {d for d, w in enumerate(spec.owner) if w == worker_id}
        self.sim = Simulation(spec.scenario, local_devices=local)
        self.sim.start()
        topo = spec.scenario.topology
        names = topo.device_names()
        index = {n: i for i, n in enumerate(names)}
        crossing = [ns(l.config.latency_ns) for l in topo.links
                    if spec.owner[index[l.a]] != spec.owner[index[l.b]]]
        self._lookahead = min(crossing) if crossing else INF_PS
        self._names = [names[d] for d in sorted(local)]
        self.check = PeerFrameCheck(topo, spec.owner, worker_id, int(self.sim.st.pool.shape[1]))

    def admit(self, batch: FrameBatch, sender: int) -> str | None:
        """Refuse a peer's batch before the engine touches it (see PeerFrameCheck)."""
        return self.check.admit(batch, sender)

    def describe(self) -> str:
        return f"devices {', '.join(self._names)}"

    def events_processed(self) -> int:
        return int(self.sim.st.sc[S.SC_EVENTS])

    def lookahead_ps(self) -> int:
        return self._lookahead

    def next_event_ps(self) -> int:
        return self.sim.next_event_ps()

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        out: list[FrameBatch] = []
        while True:
            status = self.sim.run_until(t_end_ps)
            if self.sim.st.sc[S.SC_OUT_N]:
                out.append(self._take_outbox())
            if status != S.STATUS_OUTBOX_FULL:
                break
        if not out:
            return {}  # the common case: nothing crossed the cut this round
        batch = out[0] if len(out) == 1 else FrameBatch.concat(out)
        dst_worker = self.owner[batch.dst_device]
        first = int(dst_worker[0])
        if (dst_worker == first).all():
            return {first: batch}
        result = {}
        for w in np.unique(dst_worker):
            sel = np.nonzero(dst_worker == w)[0]
            result[int(w)] = FrameBatch(batch.arrival_ps[sel], batch.dst_device[sel],
                                        batch.dst_port[sel], batch.order_key[sel],
                                        batch.length[sel], batch.frames[sel])
        return result

    def _take_outbox(self) -> FrameBatch:
        st = self.sim.st
        n = int(st.sc[S.SC_OUT_N])
        st.sc[S.SC_OUT_N] = 0
        ports = st.out[:n, S.O_PORT].astype(np.int32)
        return FrameBatch(arrival_ps=st.out[:n, S.O_TIME].copy(),
                          dst_device=st.port[ports, S.PT_DEV].astype(np.int32),
                          dst_port=ports, order_key=st.out[:n, S.O_KEY].copy(),
                          length=st.out[:n, S.O_LEN].astype(np.int32),
                          frames=st.out_frames[:n].copy())

    def deliver(self, batch: FrameBatch) -> None:
        if batch.n == 0:
            return
        inject_frames(self.sim.st, np.array(batch.arrival_ps, np.int64),
                      np.array(batch.dst_port, np.int32), np.array(batch.order_key, np.int64),
                      np.array(batch.length, np.int32), np.array(batch.frames, np.uint8))

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
        return d


@worker_factory
def make_worker(spec: PartitionedScenario, worker_id: int, n_workers: int) -> EngineWorker:
    return EngineWorker(spec, worker_id, n_workers)


def run_partitioned(scenario: Scenario, workers: int, *, pcap_dir: str | Path | None = None,
                    quiet: bool = True, partition: dict[str, int] | None = None,
                    timeout_s: float | None = None, bind: str = "127.0.0.1",
                    remote_workers: int = 0, key_file: str | None = None,
                    port: int = 0, regions: tuple[tuple[int, int, int], ...] = ()) -> RunResult:
    """Run on ``workers`` processes (``remote_workers`` of them joining from elsewhere) and
    merge their results. ``regions`` (node, addr, nbytes) of host memory come back in
    ``result.memory_regions``."""
    from .parallel.coordinator import run_fabric
    if workers < 1:
        raise ConfigError(f"workers = {workers}; must be >= 1")
    owner = (explicit_partition(scenario, workers, partition) if partition
             else auto_partition(scenario, workers))
    spec = PartitionedScenario(scenario, owner, tuple(regions))
    outcome = run_fabric(FACTORY, spec, workers, quiet=quiet, timeout_s=timeout_s, bind=bind,
                         allow_remote=remote_workers, key_file=key_file, port=port)
    parts, captured, memory = [], [], {}
    for d in outcome.results:
        c = d.pop("captured")
        frames = np.frombuffer(base64.b64decode(c["frames"]), np.uint8)
        captured.append(CapturedFrames(np.asarray(c["time_ps"], np.int64),
                                       np.asarray(c["port"], np.int64),
                                       np.asarray(c["length"], np.int64),
                                       frames.reshape(-1, c["slot_bytes"])))
        for node, addr, n, data in d.pop("regions"):
            memory[(int(node), int(addr), int(n))] = bytes.fromhex(data)
        d.pop("peer_batches_rejected")  # also counted, with the transport's own refusals, below
        parts.append(RunResult.from_dict(d))
    result = RunResult.merge(parts)
    loop = outcome.loop_wall_s
    result.wall = {"seconds": loop, "total_seconds": outcome.wall_s, "rounds": outcome.rounds,
                   "events_per_s": result.events / loop if loop else 0.0,
                   "frames_exchanged": outcome.transport.get("frames_sent", 0),
                   # peer messages refused by reason (junk, bad batches), and the frames they held
                   "peer_batches_rejected": outcome.transport.get("rejected", {}),
                   "peer_frames_rejected": outcome.transport.get("rejected_frames", 0)}
    if pcap_dir is not None:
        write_link_pcaps(scenario, CapturedFrames.concat(captured), pcap_dir)
    result.memory_regions = memory
    return result
