"""Scenario (describe) and Simulation (build the engine state, run, collect results).

A ``Scenario`` is plain data: a topology, configs, execution contexts, host programs, initial
host memory and what to capture. ``Simulation`` turns it into engine arrays for one worker
(optionally owning only some devices, for multi-process runs), loads the handlers' entries and
drives the engine.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .caches import check_cache_root
from .capture import PcapWriter
from .config import PORT_FIELDS, EngineConfig, HostConfig, NicConfig, SwitchConfig, port_schemes
from .engine import state as S
from .engine.codegen import engine_lock_path, load_engine
from .engine.handler_abi import MAX_MEMORY_DIMS, init_call_block
from .engine.handler_build import EntryCompileFailure, build_handler_table, describe_programs
from .compile_report import compile_progress, describe_handler_compile_error, is_compile_error
from .errors import ConfigError, HandlerError, SpinError
from .faults import LinkFault
from .handler import ExecutionContext, HandlerProgram, same_program  # noqa: F401 (re-export)
from .host_program import HostProgram
from .results import RunResult
from .scenario_limits import check_host_op_addresses, check_reordering
from .topology import Topology
from .trace import TraceOptions
from .units import ns
from .watchdog import EngineCall

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
    multicast_groups: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    faults: list[LinkFault] = field(default_factory=list)
    tracing: TraceOptions | None = None   # set by trace()
    # switch name -> port-selection scheme overriding switch.load_balancing (load_balancing())
    switch_load_balancing: dict[str, str] = field(default_factory=dict)
    # per switch port (switch, device it faces): SwitchConfig queue fields that differ there
    port_overrides: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: the topology and counts (host programs and memory can be huge)."""
        programs = ", ".join(dict.fromkeys(c.program.name for c in self.contexts)) or "none"
        return (f"Scenario({self.topology!r}, {len(self.host_programs)} host programs, "
                f"{len(self.contexts)} execution contexts (programs: {programs}), "
                f"{len(self.faults)} faults)")

    @property
    def n_hosts(self) -> int:
        return len(self.topology.hosts)

    def _check_node(self, node: int | str, what: str) -> int:
        """Node id of a host given by node id or name; a ConfigError naming the hosts else."""
        return self.topology.host_node(node, what)

    def install(self, ctx: ExecutionContext) -> ExecutionContext:
        """Install an execution context on a device: a host's NIC (node id or name) or a switch
        (name). Contexts of a device are matched in installation order."""
        what = f"execution context of program {ctx.program.name!r}"
        if not (isinstance(ctx.node, str) and ctx.node in self.topology.switches):
            self.topology.host_node(ctx.node, what, switches_too=True)
        for field_name in ("match_src", "match_dst"):   # matched against packets' node ids
            value = getattr(ctx, field_name)
            if value is not None and (isinstance(value, str) or not 0 <= value < self.n_hosts):
                raise ConfigError(f"{what}: {field_name}={value!r} is not a host's node id; "
                                  f"hosts: {self.topology.hosts_text()}"
                                  + (f" (give {self.topology.node_id(value)} for {value!r})"
                                     if isinstance(value, str) and value in self.topology.hosts
                                     else ""))
        ctx.initial_memory()
        self.contexts.append(ctx)
        return ctx

    def multicast_group(self, switch: str, ports: list[int] | tuple[int, ...]) -> int:
        """Declare a port group of ``switch`` for ``spin_multicast``; returns its id."""
        if switch not in self.topology.switches:
            raise ConfigError(f"multicast group: {switch!r} is not a switch; switches: "
                              f"{', '.join(self.topology.switches) or '(none)'}")
        n = len(self.topology.ports()[switch])
        bad = [p for p in ports if not 0 <= int(p) < n]
        if not ports or bad:
            raise ConfigError(f"multicast group on {switch!r}: ports={list(ports)}; valid ports "
                              f"are 0..{n - 1}, at least one")
        self.multicast_groups.append((switch, tuple(int(p) for p in ports)))
        return len(self.multicast_groups) - 1

    def load_balancing(self, scheme: str, *switches: str) -> None:
        """Let ``switches`` pick ports by ``scheme`` (a ``SwitchConfig.load_balancing`` value)
        instead of ``switch.load_balancing``: e.g. flowlets at the edge, adaptive routing
        above it."""
        port_schemes().get(scheme, "load_balancing scheme")
        for name in switches:
            if name not in self.topology.switches:
                raise ConfigError(f"load_balancing: {name!r} is not a switch; switches: "
                                  f"{', '.join(self.topology.switches) or '(none)'}")
            self.switch_load_balancing[name] = scheme

    def configure_port(self, switch: str, toward: str, **fields: Any) -> None:
        """Give the port(s) of ``switch`` facing device ``toward`` their own queue settings:
        any of ``PORT_FIELDS`` (``SwitchConfig`` fields with their units: buffer, ECN
        thresholds, where ECN is decided, header priority); the rest of the switch keeps
        ``scenario.switch``'s. E.g. RED marking only on the ports towards the hosts."""
        if switch not in self.topology.switches:
            raise ConfigError(f"configure_port: {switch!r} is not a switch; switches: "
                              f"{', '.join(self.topology.switches) or '(none)'}")
        if not any({l.a, l.b} == {switch, toward} for l in self.topology.links):
            peers = sorted({l.b if l.a == switch else l.a for l in self.topology.links
                            if switch in (l.a, l.b)})
            raise ConfigError(f"configure_port: {switch!r} has no port towards {toward!r}; "
                              f"it faces: {', '.join(peers)}")
        bad = sorted(set(fields) - set(PORT_FIELDS))
        if bad:
            raise ConfigError(f"configure_port: {bad[0]!r} is not a port field; valid: "
                              f"{', '.join(PORT_FIELDS)}")
        merged = {**self.port_overrides.get((switch, toward), {}), **fields}
        self.port_switch_config(switch, toward, merged)        # validate now
        self.port_overrides[(switch, toward)] = merged

    def port_switch_config(self, switch: str, toward: str, fields: dict[str, Any]) -> SwitchConfig:
        """The switch's config with one port's overrides, validated (names the port)."""
        try:
            return SwitchConfig.make(**{**self.switch.model_dump(), **fields})
        except ConfigError as exc:
            raise ConfigError(f"port of {switch} towards {toward}: {exc}") from None

    def _fault(self, fault: LinkFault) -> None:
        fault.check(len(self.topology.links))
        self.faults.append(fault)

    def link_down(self, link: int, at_ns: float) -> None:
        """Link ``link`` (index into topology.links) fails at ``at_ns``."""
        self._fault(LinkFault(at_ns, "down", link))

    def link_up(self, link: int, at_ns: float) -> None:
        self._fault(LinkFault(at_ns, "up", link))

    def degrade_link(self, link: int, rate_gbps: int, at_ns: float) -> None:
        """Link ``link`` runs at ``rate_gbps`` from ``at_ns`` on (routes are unchanged)."""
        self._fault(LinkFault(at_ns, "rate", link, rate_gbps=rate_gbps))

    def reshape(self, at_ns: float, swaps: list[tuple[int, int]]) -> None:
        """Optical re-shape at ``at_ns``: for each (i, j), links i and j exchange far ends
        (a-b, c-d become a-d, c-b)."""
        for i, j in swaps:
            self._fault(LinkFault(at_ns, "swap", i, other=j))

    def host_program(self, node: int | str) -> HostProgram:
        """The program of host ``node`` (node id or host name), created empty on first use."""
        node = self._check_node(node, "host program")
        if node not in self.host_programs:
            self.host_programs[node] = HostProgram(node, self.host.qps, _mark_index=self.mark_index,
                                                   _callbacks=self.callbacks,
                                                   _hosts=tuple(self.topology.hosts))
        return self.host_programs[node]

    def write_host_memory(self, node: int | str, addr: int, data) -> None:
        """Initial contents of a host's memory (e.g. the buffer a host will send); ``node`` is
        a node id or a host name."""
        node = self._check_node(node, "host memory")
        raw = np.ascontiguousarray(data).tobytes()
        if addr < 0 or addr + len(raw) > self.host.memory_bytes:
            raise ConfigError(f"host {self.topology.host_label(node)} memory write at "
                              f"addr={addr} of {len(raw)} B exceeds HostConfig.memory_bytes="
                              f"{self.host.memory_bytes}")
        self.host_memory.append((node, addr, raw))

    def capture(self, *links: int) -> None:
        """Record the frames of these links (indices into topology.links; none = all links)."""
        chosen = links or tuple(range(len(self.topology.links)))
        for i in chosen:
            if not 0 <= i < len(self.topology.links):
                raise ConfigError(f"capture link={i}; valid links are 0..{len(self.topology.links) - 1}")
        self.capture_links = sorted(set(self.capture_links) | set(chosen))

    def trace(self, links: bool = False, buffer_records: int = 1 << 16) -> None:
        """Record a timeline of the run (``result.trace``, see ``spin.trace``): handler runs
        per HPU, DMA transfers, host program steps, messages and, with ``links``, every frame
        on every link."""
        self.tracing = TraceOptions(links=links, buffer_records=buffer_records)

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

    def with_debug_handlers(self) -> "Scenario":
        """A copy whose handlers run as plain Python inside the compiled engine
        (``EngineConfig.debug``): print, pdb and tracebacks naming the failing line work, and
        results are the same as compiled."""
        from dataclasses import replace
        return replace(self, engine=self.engine.model_copy(update={"debug": True}))


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


def _device_label(topo: Topology, node: int | str) -> str:
    """A device as errors name it: ``host 'h1' (node 1)`` or ``switch 'leaf0'``."""
    if isinstance(node, str) and node in topo.switches:
        return f"switch {node!r}"
    if isinstance(node, str) and node in topo.hosts:
        node = topo.hosts.index(node)
    if not isinstance(node, int):
        return f"device {node!r}"
    if 0 <= node < len(topo.hosts):
        return f"host {topo.host_label(node)}"
    names = topo.device_names()      # engine device ids: hosts, then switches
    return f"switch {names[node]!r}" if 0 <= node < len(names) else f"node {node}"


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
        check_reordering(scenario)
        check_cache_root()
        self.engine = load_engine(scenario.engine.boundscheck)
        self.st = self._build_state()
        init_call_block(self.st)
        self.handlers = self._load_handlers(quiet)
        self.hmem = self._build_handler_memory()
        self.captured = CapturedFrames.empty(self.st.pool.shape[1])
        self._trace_parts: list[np.ndarray] = []
        self.queue_samples: list[np.ndarray] = []   # (time, global port, bytes, busy ps) rows
        self._started = False
        self._compiled, self._quiet = False, quiet

    # --- building -----------------------------------------------------------------------
    def _build_state(self) -> S.EngineState:
        from .state_builder import build_state
        built = build_state(self.scenario, self.programs, self.local)
        self.ec_order = built.ec_order
        self.port_of_link = built.port_of_link
        return built.st

    def _load_handlers(self, quiet: bool):
        """Compile (or load from the cache) the entry of every handler of an installed program
        and write their addresses into the program table; handlers are compiled apart from the
        engine, each on its own (``spin.engine.handler_build``)."""
        installed = {int(p) for p in self.st.ec[:len(self.ec_order), S.EC_PROG]}
        used = [prog for p, prog in enumerate(self.programs) if p in installed]
        try:
            with compile_progress(f"the handlers of {describe_programs(used)}", quiet):
                table = build_handler_table(
                    [prog if p in installed else None for p, prog in enumerate(self.programs)],
                    debug=self.scenario.engine.debug)
        except EntryCompileFailure as failed:
            raise describe_handler_compile_error(failed.cause, failed.kind, failed.program,
                                                 failed.fn) from None
        n = len(self.programs)
        self.st.prog[:n, S.PR_ENTRY:S.PR_ENTRY + 3] = table.addresses[:n]
        return table

    def _build_handler_memory(self) -> np.ndarray:
        """The handler-memory arena: each execution context's memory as bytes, 64-byte aligned,
        its offset, size and shape in its row of ``st.ec``."""
        st = self.st
        mems, offset = [], 0
        for e, ctx in enumerate(self.ec_order):
            mem = ctx.initial_memory()
            if mem.ndim == 0:
                mem = mem.reshape(1)
            st.ec[e, S.EC_MEM_OFF] = offset
            st.ec[e, S.EC_MEM_BYTES] = mem.nbytes
            st.ec[e, S.EC_MEM_DIMS:S.EC_MEM_DIMS + MAX_MEMORY_DIMS] = 0
            st.ec[e, S.EC_MEM_DIMS:S.EC_MEM_DIMS + mem.ndim] = mem.shape
            mems.append((offset, mem))
            offset += -(-mem.nbytes // 64) * 64
        arena = np.zeros(max(offset, 64), np.uint8)
        for off, mem in mems:
            arena[off:off + mem.nbytes] = np.ascontiguousarray(mem).view(np.uint8).reshape(-1)
        return arena

    # --- running ------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule every local host program at t=0 (idempotent)."""
        if self._started:
            return
        self._started = True
        from .engine.heap import push_event, push_event_keyed
        st = self.st
        for node in range(self.scenario.n_hosts):
            if node in self.local and st.dev[node, S.D_HOST_STATE] == S.HOST_RUNNING:
                push_event(st, 0, node, S.EV_HOST, node, 0, 0)
        if self.scenario.faults:
            for row in range(st.ctl.shape[0]):
                push_event_keyed(st, int(st.ctl[row, S.CTL_T]),
                                 (S.CONTROL_CREATOR << 40) | row, S.EV_CONTROL, 0, row, 0)

    def next_event_ps(self) -> int:
        st = self.st
        if st.sc[S.SC_HEAP_N] == 0:
            return int(S.INF_PS)
        return int(st.heap[S.HP_TIME])

    def run_until(self, t_end_ps: int, max_events: int = 0) -> int:
        """Process every event before ``t_end_ps``, draining captures on the way. Returns early
        (with STATUS_OUTBOX_FULL) when frames for other workers must be shipped first."""
        self.compile()
        self.start()
        sc = self.st.sc
        if sc[S.SC_SAMPLE_PS] and not sc[S.SC_SAMPLE_PENDING] and sc[S.SC_HEAP_N] > 0:
            from .engine.ports import schedule_sample
            schedule_sample(self.st, np.int64(sc[S.SC_NOW]))
        while True:
            try:
                with EngineCall(self, self.scenario.engine.handler_timeout_s):
                    status = self.engine.run_until(self.st, self.hmem, np.int64(t_end_ps),
                                                   np.int64(max_events))
            except SpinError:
                raise
            except Exception as exc:  # raised inside jitted code: name the culprit
                raise self._describe_failure(exc) from exc
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
        self.compile()   # or load from the cache: not part of the run's wall time
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
        """Compile the engine (or load it from the cache) now, without running anything. It
        compiles once per spin version; processes that start together compile it once (the
        others wait for the lock, then load it from the cache)."""
        if self._compiled:
            return
        import numba
        from filelock import FileLock
        i64 = numba.types.int64
        signature = (numba.typeof(self.st), numba.typeof(self.hmem), i64, i64)
        try:
            with FileLock(str(engine_lock_path(self.scenario.engine.boundscheck))), \
                    compile_progress("the engine (once per spin version)", self._quiet):
                self.engine.run_until.compile(signature)
        except SpinError:
            raise
        except Exception as exc:
            raise self._describe_failure(exc) from exc
        self._compiled = True

    def _describe_failure(self, exc: Exception) -> SpinError:
        if is_compile_error(exc):
            err = SpinError(f"the engine does not compile: {str(exc).splitlines()[0]} (a spin "
                            f"bug: please report it with this error's .details)")
            err.details = str(exc)
            return err
        st = self.st
        cur = st.cur
        if cur[S.CUR_ACTIVE]:
            if self.scenario.engine.debug:
                hint = self._failing_line(exc)
                if isinstance(exc, FloatingPointError):
                    hint += (" (as plain Python, numpy keeps arithmetic on a uint8 or int32 value "
                             "in that type, where the compiled handler widens to int64: "
                             "convert with int(...))")
            else:
                hint = (" (to see the failing line, run the handlers as plain Python: "
                        "EngineConfig(debug=True), spin run --debug or run(..., debug=True))")
            return HandlerError(self.describe_running_handler(
                f"failed with {type(exc).__name__}: {exc}{hint}"))
        if isinstance(exc, MemoryError):
            return ConfigError(str(exc))
        return SpinError(f"engine failed at t={int(st.sc[S.SC_NOW])} ps: {type(exc).__name__}: {exc}")

    def _failing_line(self, exc: BaseException) -> str:
        """Debug mode: `` at FILE:LINE: `code``` of the innermost frame of the traceback in the
        running handler's own file."""
        import linecache
        import traceback
        fn = self.ec_order[int(self.st.cur[S.CUR_EC])].program.handlers()[
            int(self.st.cur[S.CUR_KIND])]
        file = getattr(getattr(fn, "py_func", fn), "__code__", None)
        file = file.co_filename if file else None
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == file]
        if not frames:
            return ""
        f = frames[-1]
        code = linecache.getline(f.filename, f.lineno).strip()
        return f" at {f.filename}:{f.lineno}" + (f": `{code}`" if code else "")

    def describe_running_handler(self, reason: str = "") -> str:
        """The handler running now (from the engine's current-handler slots): its name, file
        and line, program, execution context and device (named as the topology names it),
        ``reason`` (what went wrong), then the packet it was given, its frame dump last."""
        st = self.st
        cur = st.cur
        ec = self.ec_order[int(cur[S.CUR_EC])]
        kind = S.HANDLER_KIND_NAMES[int(cur[S.CUR_KIND])]
        fn = ec.program.handlers()[int(cur[S.CUR_KIND])]
        py = getattr(fn, "py_func", fn)
        fname = getattr(py, "__qualname__", repr(fn))
        code = getattr(py, "__code__", None)
        where = f" ({code.co_filename}:{code.co_firstlineno})" if code else ""
        slot = int(cur[S.CUR_SLOT])
        frame = bytes(st.pool[slot][:int(cur[S.CUR_FRAME_LEN])]) if slot >= 0 else b""
        topo, src = self.scenario.topology, int(cur[S.CUR_SRC])
        return (f"{kind} handler {fname!r}{where} (program {ec.program.name!r}, execution "
                f"context #{int(cur[S.CUR_EC])} on {_device_label(topo, ec.node)})"
                + (f" {reason}" if reason else "") + "; packet: src "
                f"{_device_label(topo, src)}, qp {int(cur[S.CUR_QP])}, psn {int(cur[S.CUR_PSN])}, "
                f"message offset {int(cur[S.CUR_MSG_OFFSET])}, payload "
                f"{int(cur[S.CUR_PAYLOAD_LEN])} B, t={int(cur[S.CUR_TIME])} ps; frame "
                f"({len(frame)} B): {frame[:96].hex()}" + ("..." if len(frame) > 96 else ""))

    # --- capture ------------------------------------------------------------------------
    def _drain_capture(self) -> None:
        st = self.st
        k = int(st.sc[S.SC_QS_N])
        if k:
            self.queue_samples.append(st.qsamples[:k].copy())
            st.sc[S.SC_QS_N] = 0
        n = int(st.sc[S.SC_CAP_N])
        if n:
            self.captured = CapturedFrames.concat([self.captured, CapturedFrames(
                st.cap[:n, S.CAP_TIME].copy(), st.cap[:n, S.CAP_PORT].copy(),
                st.cap[:n, S.CAP_LEN].copy(), st.cap_frames[:n].copy())])
        st.sc[S.SC_CAP_N] = 0
        n = int(st.sc[S.SC_TRACE_N])
        if n:
            self._trace_parts.append(st.trace[:n].copy())
        st.sc[S.SC_TRACE_N] = 0

    def trace_records(self) -> tuple[np.ndarray, int]:
        """The trace records drained so far (``spin.engine.tracing``) and how many were lost."""
        rows = (np.concatenate(self._trace_parts) if self._trace_parts
                else np.zeros((0, S.TRACE_COLS), np.int64))
        return rows, int(self.st.sc[S.SC_TRACE_LOST])

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
        """A copy of ``ctx``'s handler memory, shaped as its program declared it."""
        return self._ec_memory(next(i for i, c in enumerate(self.ec_order) if c is ctx))

    def _ec_memory(self, e: int) -> np.ndarray:
        st = self.st
        off, nbytes = int(st.ec[e, S.EC_MEM_OFF]), int(st.ec[e, S.EC_MEM_BYTES])
        declared = self.ec_order[e].program.memory
        shape = tuple(int(d) for d in st.ec[e, S.EC_MEM_DIMS:S.EC_MEM_DIMS + max(declared.ndim, 1)])
        return self.hmem[off:off + nbytes].view(declared.dtype).reshape(shape).copy()

    def local_handler_memories(self) -> dict[int, np.ndarray]:
        """Handler memory of every execution context on a device of this worker, by the
        context's index in ``scenario.contexts`` (installation order)."""
        index = {id(c): i for i, c in enumerate(self.scenario.contexts)}
        names = self.device_names
        return {index[id(c)]: self._ec_memory(e) for e, c in enumerate(self.ec_order)
                if (names.index(c.node) if isinstance(c.node, str) else c.node) in self.local}

    def host_memory_digests(self) -> dict[int, str]:
        """SHA-256 of every local host's memory, hashed in place (a 1024-host fabric holds
        gigabytes: copies would double the touched memory) on as many threads as cores
        (hashlib releases the GIL on large buffers)."""
        import hashlib
        import os
        from concurrent.futures import ThreadPoolExecutor
        st = self.st
        nodes = [n for n in range(self.scenario.n_hosts) if n in self.local]

        def digest(node: int) -> str:
            off = int(st.dev[node, S.D_HOST_MEM_OFF])
            return hashlib.sha256(st.host_mem[off:off + int(st.dev[node, S.D_HOST_MEM_SIZE])]
                                  ).hexdigest()
        with ThreadPoolExecutor(max_workers=max(1, min(len(nodes), os.cpu_count() or 1))) as pool:
            return dict(zip(nodes, pool.map(digest, nodes)))

    def result(self) -> RunResult:
        from .results_builder import build_result
        result = build_result(self)
        if self.scenario.tracing is not None:
            from .trace import Trace
            self._drain_capture()
            rows, lost = self.trace_records()
            result.trace = Trace.build(self.scenario, rows, result.messages, lost)
        return result
