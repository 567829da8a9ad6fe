"""Scenario (describe) and Simulation (build the engine state, run, collect results).

A ``Scenario`` is plain data: a topology, configs, execution contexts, host programs, initial
host memory and what to capture. ``Simulation`` turns it into engine arrays for one worker
(optionally owning only some devices, for multi-process runs) and drives the generated engine.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import EngineConfig, HostConfig, NicConfig, SwitchConfig
from .engine import state as S
from .engine.codegen import load_engine
from .compile_report import compile_progress, describe_compile_error, is_compile_error
from .errors import ConfigError, HandlerCompileError, HandlerError, SpinError
from .handler import ExecutionContext, HandlerProgram
from .host_program import HostProgram
from .results import RunResult
from .scenario_limits import check_host_op_addresses
from .topology import Topology
from .units import ns

HOST_MEM_ALIGN = 64
PROGRESS_CHUNK_EVENTS = 1 << 20  # engine calls return this often to report progress


@dataclass
class Scenario:
    """Everything a run needs, as plain picklable data."""

    topology: Topology
    nic: NicConfig = field(default_factory=NicConfig)
    host: HostConfig = field(default_factory=HostConfig)
    switch: SwitchConfig = field(default_factory=SwitchConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    contexts: list[ExecutionContext] = field(default_factory=list)
    host_programs: dict[int, HostProgram] = field(default_factory=dict)
    host_memory: list[tuple[int, int, bytes]] = field(default_factory=list)
    capture_links: list[int] = field(default_factory=list)
    mark_index: dict[str, int] = field(default_factory=dict)
    callbacks: list = field(default_factory=list)   # host-program Python calls, by id
    # Optional superset of programs to compile the engine for: scenarios that list the same
    # programs share one compiled (and cached) engine, e.g. a whole test suite.
    engine_programs: list[HandlerProgram] | None = None

    @property
    def n_hosts(self) -> int:
        return len(self.topology.hosts)

    def _check_node(self, node: int, what: str) -> None:
        if not 0 <= node < self.n_hosts:
            raise ConfigError(f"{what}: node={node}; valid nodes are 0..{self.n_hosts - 1}")

    def install(self, ctx: ExecutionContext) -> ExecutionContext:
        """Install an execution context on a NIC (matched in installation order)."""
        self._check_node(ctx.node, "execution context")
        ctx.initial_memory()
        self.contexts.append(ctx)
        return ctx

    def host_program(self, node: int) -> HostProgram:
        self._check_node(node, "host program")
        if node not in self.host_programs:
            self.host_programs[node] = HostProgram(node, self.host.qps, _mark_index=self.mark_index,
                                                   _callbacks=self.callbacks)
        return self.host_programs[node]

    def write_host_memory(self, node: int, addr: int, data) -> None:
        """Initial contents of a host's memory (e.g. the buffer a host will send)."""
        self._check_node(node, "host memory")
        raw = np.ascontiguousarray(data).tobytes()
        if addr < 0 or addr + len(raw) > self.host.memory_bytes:
            raise ConfigError(f"host memory write at addr={addr} of {len(raw)} B exceeds "
                              f"HostConfig.memory_bytes={self.host.memory_bytes}")
        self.host_memory.append((node, addr, raw))

    def capture(self, *links: int) -> None:
        """Record the frames of these links (indices into topology.links; none = all links)."""
        chosen = links or tuple(range(len(self.topology.links)))
        for i in chosen:
            if not 0 <= i < len(self.topology.links):
                raise ConfigError(f"capture link={i}; valid links are 0..{len(self.topology.links) - 1}")
        self.capture_links = sorted(set(self.capture_links) | set(chosen))

    def programs(self) -> list[HandlerProgram]:
        """Programs the engine is compiled for, in dispatch order."""
        seen: list[HandlerProgram] = list(self.engine_programs or [])
        for c in self.contexts:
            if not any(same_program(c.program, p) for p in seen):
                if self.engine_programs is not None:
                    raise ConfigError(f"program {c.program.name!r} is installed but missing from "
                                      f"Scenario.engine_programs "
                                      f"({', '.join(p.name for p in self.engine_programs)})")
                seen.append(c.program)
        return seen

    def run(self, pcap_dir: str | Path | None = None, quiet: bool = True) -> RunResult:
        return Simulation(self, quiet=quiet).run(pcap_dir=pcap_dir, quiet=quiet)


@dataclass(frozen=True)
class CapturedFrames:
    """Frames recorded at the start of transmission on captured ports, as arrays (frame ``i`` is
    ``frames[i, :length[i]]``): draining the engine, merging workers and writing pcaps never
    touch frames one by one in Python."""

    time_ps: np.ndarray   # int64
    port: np.ndarray      # int64, engine port number
    length: np.ndarray    # int64
    frames: np.ndarray    # uint8[n, slot_bytes]

    @classmethod
    def empty(cls, slot_bytes: int) -> "CapturedFrames":
        z = np.zeros(0, np.int64)
        return cls(z, z, z, np.zeros((0, slot_bytes), np.uint8))

    @classmethod
    def concat(cls, parts: list["CapturedFrames"]) -> "CapturedFrames":
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("time_ps", "port", "length", "frames")))

    def on_link(self, ports: tuple[int, int]) -> "CapturedFrames":
        """The frames of one link (both directions), ordered by time then port."""
        sel = np.nonzero(np.isin(self.port, ports))[0]
        sel = sel[np.lexsort((self.port[sel], self.time_ps[sel]))]
        return CapturedFrames(self.time_ps[sel], self.port[sel], self.length[sel], self.frames[sel])


def write_link_pcaps(scenario: "Scenario", captured: CapturedFrames,
                     directory: str | Path) -> list[Path]:
    """One pcap per captured link, however many workers recorded the frames."""
    from .capture import PcapWriter
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ports = scenario.topology.link_ports()
    paths = []
    for i in scenario.capture_links:
        link = scenario.topology.links[i]
        path = directory / f"link{i}_{link.a}-{link.b}.pcap"
        sel = captured.on_link(ports[i])
        with PcapWriter(path) as w:
            w.write_many(sel.time_ps, sel.frames, sel.length)
        paths.append(path)
    return paths


def same_program(a: HandlerProgram, b: HandlerProgram) -> bool:
    """Programs are interchangeable for the engine when they run the same handlers on handler
    memory of the same dtype and rank (contents and sizes may differ per instance)."""
    return (a is b) or (a.handlers() == b.handlers() and a.memory.dtype == b.memory.dtype
                        and a.memory.ndim == b.memory.ndim)


class Simulation:
    """One worker's engine for a scenario (all devices unless ``local_devices`` is given)."""

    def __init__(self, scenario: Scenario, local_devices: set[int] | None = None,
                 quiet: bool = False):
        """``quiet`` silences the line on stderr shown while the engine compiles (cache misses
        only)."""
        self.scenario = scenario
        topo = scenario.topology
        self.device_names = topo.device_names()
        self.n_devs = len(self.device_names)
        self.local = set(range(self.n_devs)) if local_devices is None else set(local_devices)
        self.programs = scenario.programs()
        check_host_op_addresses(scenario)
        self.engine = load_engine(self.programs, scenario.engine.boundscheck)
        self.st = self._build_state()
        self.hmems = self._build_handler_memory()
        self.captured = CapturedFrames.empty(self.st.pool.shape[1])
        self._started = False
        self._compiled, self._quiet = False, quiet

    # --- building -----------------------------------------------------------------------
    def _build_state(self) -> S.EngineState:
        sc, topo = self.scenario, self.scenario.topology
        eng, nic, host = sc.engine, sc.nic, sc.host
        n_hosts = sc.n_hosts
        ports = topo.ports()
        n_ports = sum(len(p) for p in ports.values())
        slot_bytes = ((eng.mtu_bytes + 128 + 63) // 64) * 64
        host_stride = ((host.memory_bytes + HOST_MEM_ALIGN - 1) // HOST_MEM_ALIGN) * HOST_MEM_ALIGN
        n_ops = sum(len(p.ops) for p in sc.host_programs.values())
        sizes = S.StateSizes(
            n_devs=self.n_devs, n_ports=n_ports, n_nodes=n_hosts, n_switches=len(topo.switches),
            n_ecs=len(sc.contexts), n_progs=len(self.programs), n_host_ops=n_ops,
            host_mem_total=host_stride * n_hosts, max_hpus=nic.hpus, max_qp=host.qps,
            n_marks=max(len(sc.mark_index), 1), slot_bytes=slot_bytes, n_slots=eng.buffer_slots,
            queue_frames=eng.queue_frames, max_events=eng.max_events_pending,
            max_rx_messages=eng.max_rx_messages, max_tx_messages=eng.max_tx_messages,
            txq_cap=eng.max_tx_messages, msglog_cap=max(eng.log_messages, 1),
            txlog_cap=max(eng.log_messages, 1),
            capture_frames=eng.capture_frames if sc.capture_links else 16,
            outbox_frames=4096)
        try:
            st = S.allocate_state(sizes)
        except MemoryError as exc:
            from .scenario_limits import allocation_failed
            raise allocation_failed(sc, exc) from None
        st.sc[S.SC_MTU] = eng.mtu_bytes
        st.sc[S.SC_CHECK_ICRC] = 1 if eng.check_icrc else 0
        # devices and ports
        gp_of = topo.global_ports()
        gp = 0
        for d, name in enumerate(self.device_names):
            is_nic = d < n_hosts
            st.dev[d, S.D_KIND] = S.DEV_NIC if is_nic else S.DEV_SWITCH
            st.dev[d, S.D_PORT0] = gp
            st.dev[d, S.D_NPORTS] = len(ports[name])
            st.dev[d, S.D_LOCAL] = 1 if d in self.local else 0
            st.port[gp:gp + len(ports[name]), S.PT_DEV] = d
            gp += len(ports[name])
            if is_nic:
                st.dev[d, S.D_NODE] = d
            else:
                st.dev[d, S.D_SW] = d - n_hosts
                st.dev[d, S.D_SW_LAT_PS] = ns(sc.switch.latency_ns)
        dev_index = {n: i for i, n in enumerate(self.device_names)}
        for i, link in enumerate(topo.links):
            pa, pb = gp_of[(link.a, i)], gp_of[(link.b, i)]
            for src, dst in ((pa, pb), (pb, pa)):
                st.port[src, S.PT_PEER] = dst
                st.port[src, S.PT_RATE_GBPS] = link.config.rate_gbps
                st.port[src, S.PT_LAT_PS] = ns(link.config.latency_ns)
                st.port[src, S.PT_REMOTE] = 0 if st.dev[st.port[dst, S.PT_DEV], S.D_LOCAL] else 1
            if i in sc.capture_links:
                st.port[pa, S.PT_CAPTURE] = 1
                st.port[pb, S.PT_CAPTURE] = 1
        for g in range(n_ports):
            is_switch = st.dev[st.port[g, S.PT_DEV], S.D_KIND] == S.DEV_SWITCH
            st.port[g, S.PT_Q_LIMIT_BYTES] = (sc.switch.port_buffer_bytes if is_switch
                                        else eng.queue_frames * slot_bytes)
        self.port_of_link = topo.link_ports()
        # NICs and hosts
        cycle_ps = int(round(1_000_000 / nic.hpu_clock_mhz))
        for d in range(n_hosts):
            st.dev[d, S.D_NIC_HPUS] = nic.hpus
            st.dev[d, S.D_NIC_CYCLE_PS] = cycle_ps
            st.dev[d, S.D_NIC_MATCH_HDR_CYCLES] = nic.match_header_cycles
            st.dev[d, S.D_NIC_MATCH_PKT_CYCLES] = nic.match_packet_cycles
            st.dev[d, S.D_PCIE_LAT_PS] = ns(nic.pcie_latency_ns)
            st.dev[d, S.D_PCIE_MPS_PER_BYTE] = int(round(1_000_000 / nic.pcie_rate_gbytes_per_s))
            st.dev[d, S.D_NIC_MAX_MSGS] = nic.max_inflight_messages
            st.dev[d, S.D_NIC_TX_WINDOW] = nic.tx_window_frames
            st.dev[d, S.D_HOST_MEM_OFF] = d * host_stride
            st.dev[d, S.D_HOST_MEM_SIZE] = host.memory_bytes
            st.dev[d, S.D_HOST_O_SEND_PS] = ns(host.send_overhead_ns)
            st.dev[d, S.D_HOST_O_RECV_PS] = ns(host.recv_overhead_ns)
            st.dev[d, S.D_HOST_REDUCE_MPS_PER_BYTE] = int(round(host.reduce_ps_per_byte * 1000))
        for node, addr, raw in sc.host_memory:
            off = node * host_stride + addr
            st.host_mem[off:off + len(raw)] = np.frombuffer(raw, np.uint8)
        k = 0
        for node in sorted(sc.host_programs):
            ops = sc.host_programs[node].ops
            st.dev[node, S.D_HOST_OP_FIRST] = k
            st.dev[node, S.D_HOST_OP_COUNT] = len(ops)
            if ops:
                st.host_ops[k:k + len(ops)] = np.asarray(ops, np.int64)
                st.dev[node, S.D_HOST_STATE] = S.HOST_RUNNING
            k += len(ops)
        # execution contexts, grouped per NIC in installation order
        inst_count = [0] * len(self.programs)
        ordered = sorted(enumerate(sc.contexts), key=lambda ic: (ic[1].node, ic[0]))
        self.ec_order: list[ExecutionContext] = []
        for e, (_, ctx) in enumerate(ordered):
            p = next(i for i, q in enumerate(self.programs) if same_program(q, ctx.program))
            if st.dev[ctx.node, S.D_EC_COUNT] == 0:
                st.dev[ctx.node, S.D_EC_FIRST] = e
            st.dev[ctx.node, S.D_EC_COUNT] += 1
            st.ec[e, S.EC_PROG] = p
            st.ec[e, S.EC_INST] = inst_count[p]
            inst_count[p] += 1
            st.ec[e, S.EC_MATCH_QP] = -1 if ctx.match_qp is None else ctx.match_qp
            st.ec[e, S.EC_MATCH_RKEY] = -1 if ctx.match_rkey is None else ctx.match_rkey
            st.ec[e, S.EC_MATCH_SRC] = -1 if ctx.match_src is None else ctx.match_src
            self.ec_order.append(ctx)
        for p, prog in enumerate(self.programs):
            for kind, fn in enumerate(prog.handlers()):
                st.prog[p, S.PR_HAS + kind] = 0 if fn is None else 1
                cost = prog.cost(kind)
                st.prog[p, S.PR_CYCLES + kind] = cost.cycles
                st.prog[p, S.PR_MCPB + kind] = cost.millicycles_per_byte
        # switch routes
        for s_name, table in topo.switch_routes().items():
            s = dev_index[s_name] - n_hosts
            for node, port in table.items():
                st.route[s, node] = port
        return st

    def _build_handler_memory(self) -> tuple:
        mems = []
        for p, prog in enumerate(self.programs):
            insts = [c.initial_memory() for e, c in enumerate(self.ec_order)
                     if int(self.st.ec[e, S.EC_PROG]) == p]
            if not insts:
                insts = [prog.memory.copy()]
            shape = tuple(max(m.shape[i] for m in insts) for i in range(prog.memory.ndim))
            stacked = np.zeros((len(insts),) + shape, prog.memory.dtype)
            for i, m in enumerate(insts):
                stacked[(i,) + tuple(slice(0, n) for n in m.shape)] = m
            mems.append(stacked)
        if not mems:
            mems.append(np.zeros((1, 1), np.int64))
        return tuple(mems)

    # --- running ------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule every local host program at t=0 (idempotent)."""
        if self._started:
            return
        self._started = True
        from .engine.heap import push_event
        for node in range(self.scenario.n_hosts):
            if node in self.local and self.st.dev[node, S.D_HOST_STATE] == S.HOST_RUNNING:
                push_event(self.st, 0, node, S.EV_HOST, node, 0, 0)

    def next_event_ps(self) -> int:
        st = self.st
        if st.sc[S.SC_HEAP_N] == 0:
            return int(S.INF_PS)
        return int(st.ev[st.heap[0], S.E_TIME])

    def run_until(self, t_end_ps: int, max_events: int = 0) -> int:
        """Process every event before ``t_end_ps``, draining captures on the way. Returns early
        (with STATUS_OUTBOX_FULL) when frames for other workers must be shipped first."""
        self.start()
        while True:
            try:
                with nullcontext() if self._compiled else compile_progress(self.programs,
                                                                           self._quiet):
                    status = self.engine.run_until(self.st, self.hmems, np.int64(t_end_ps),
                                                   np.int64(max_events))
                self._compiled = True
            except SpinError:
                raise
            except Exception as exc:  # raised inside jitted code: name the culprit
                err = self._describe_failure(exc)  # Numba's trace of the engine is noise:
                raise err from (None if isinstance(err, HandlerCompileError) else exc)
            if status == S.STATUS_CAPTURE_FULL:
                self._drain_capture()
            elif status in (S.STATUS_DONE, S.STATUS_OUTBOX_FULL, S.STATUS_EVENT_LIMIT):
                return int(status)
            elif status == S.STATUS_HOST_CALL:
                self._host_call()

    def run(self, pcap_dir: str | Path | None = None, quiet: bool = True,
            until_ps: int | None = None) -> RunResult:
        """Run to completion (or ``until_ps``); a progress bar over virtual time appears for runs
        longer than a couple of seconds unless ``quiet``."""
        from .parallel.progress import Progress
        t0 = time.perf_counter()
        t_end = int(S.INF_PS) if until_ps is None else int(until_ps)
        with Progress(until_ps, quiet=quiet) as progress:
            while self.run_until(t_end, max_events=PROGRESS_CHUNK_EVENTS) == S.STATUS_EVENT_LIMIT:
                progress.update(int(self.st.sc[S.SC_NOW]), int(self.st.sc[S.SC_EVENTS]))
        wall = time.perf_counter() - t0
        self._drain_capture()
        if pcap_dir is not None:
            self.write_pcaps(pcap_dir)
        result = self.result()
        result.wall = {"seconds": wall, "events_per_s": result.events / wall if wall > 0 else 0.0}
        return result

    def _host_call(self) -> None:
        from .host_program import HostCall
        st = self.st
        node, idx = int(st.sc[S.SC_CALL_DEV]), int(st.sc[S.SC_CALL_ID])
        fn = self.scenario.callbacks[idx]
        off = int(st.dev[node, S.D_HOST_MEM_OFF])
        memory = st.host_mem[off:off + int(st.dev[node, S.D_HOST_MEM_SIZE])]
        try:
            fn(HostCall(node=node, now_ps=int(st.sc[S.SC_NOW]), memory=memory))
        except Exception as exc:
            raise SpinError(f"host program call {getattr(fn, '__qualname__', fn)!r} on node "
                            f"{node} at t={int(st.sc[S.SC_NOW])} ps failed: "
                            f"{type(exc).__name__}: {exc}") from exc

    def compile(self) -> None:
        """Compile the engine (or load it from the cache) now, without running anything."""
        if not self._compiled:
            self.run_until(0)

    def _describe_failure(self, exc: Exception) -> SpinError:
        if is_compile_error(exc):
            return describe_compile_error(exc, self.programs, self.st, self.hmems)
        st = self.st
        cur = st.cur
        if cur[S.CUR_ACTIVE]:
            ec = self.ec_order[int(cur[S.CUR_EC])]
            kind = S.HANDLER_KIND_NAMES[int(cur[S.CUR_KIND])]
            fn = ec.program.handlers()[int(cur[S.CUR_KIND])]
            fname = getattr(getattr(fn, "py_func", fn), "__qualname__", repr(fn))
            slot = int(cur[S.CUR_SLOT])
            frame = bytes(st.pool[slot][:int(cur[S.CUR_FRAME_LEN])]) if slot >= 0 else b""
            return HandlerError(
                f"{kind} handler {fname!r} (program {ec.program.name!r}, execution context "
                f"#{int(cur[S.CUR_EC])} on node {ec.node}) failed with "
                f"{type(exc).__name__}: {exc}; packet: src node {int(cur[S.CUR_SRC])}, "
                f"qp {int(cur[S.CUR_QP])}, psn {int(cur[S.CUR_PSN])}, message offset "
                f"{int(cur[S.CUR_MSG_OFFSET])}, payload {int(cur[S.CUR_PAYLOAD_LEN])} B, "
                f"t={int(cur[S.CUR_TIME])} ps; frame ({len(frame)} B): {frame[:96].hex()}"
                + ("..." if len(frame) > 96 else ""))
        if isinstance(exc, MemoryError):
            return ConfigError(str(exc))
        return SpinError(f"engine failed at t={int(st.sc[S.SC_NOW])} ps: {type(exc).__name__}: {exc}")

    # --- capture ------------------------------------------------------------------------
    def _drain_capture(self) -> None:
        st = self.st
        n = int(st.sc[S.SC_CAP_N])
        if n:
            self.captured = CapturedFrames.concat([self.captured, CapturedFrames(
                st.cap[:n, S.C_TIME].copy(), st.cap[:n, S.C_PORT].copy(),
                st.cap[:n, S.C_LEN].copy(), st.cap_frames[:n].copy())])
        st.sc[S.SC_CAP_N] = 0

    def captured_frames(self, link: int) -> list[tuple[int, bytes]]:
        """(time_ps, frame) transmitted on either direction of ``link``, in time order."""
        sel = self.captured.on_link(self.port_of_link[link])
        return [(int(t), bytes(f[:n])) for t, f, n in zip(sel.time_ps, sel.frames, sel.length)]

    def write_pcaps(self, directory: str | Path) -> list[Path]:
        return write_link_pcaps(self.scenario, self.captured, directory)

    # --- results ------------------------------------------------------------------------
    def host_memory(self, node: int) -> np.ndarray:
        st = self.st
        off = int(st.dev[node, S.D_HOST_MEM_OFF])
        return st.host_mem[off:off + int(st.dev[node, S.D_HOST_MEM_SIZE])].copy()

    def handler_memory(self, ctx: ExecutionContext) -> np.ndarray:
        e = next(i for i, c in enumerate(self.ec_order) if c is ctx)
        p = int(self.st.ec[e, S.EC_PROG])
        mem = self.hmems[p][int(self.st.ec[e, S.EC_INST])]
        return mem[tuple(slice(0, n) for n in ctx.program.memory.shape)].copy()

    def host_memory_digests(self) -> dict[int, str]:
        import hashlib
        return {n: hashlib.sha256(self.host_memory(n).tobytes()).hexdigest()
                for n in range(self.scenario.n_hosts) if n in self.local}

    def result(self) -> RunResult:
        from .results_builder import build_result
        return build_result(self)
