"""``Simulation``: one worker's engine for a scenario, run.

``spin.assembly.built.build`` turns a ``Scenario`` (plain data, ``spin.describe.scenario``) into a
``Built``: the engine arrays for one worker (optionally owning only some devices, for
multi-process runs) with the handlers' entries loaded. ``Simulation`` drives that engine:
events, host calls, captures, failures named in the user's words, and the ``RunResult``.
"""
from __future__ import annotations

import importlib

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..engine import state as S
from ..engine.layout import DEV as DEV_TABLE
from ..engine.codegen import engine_lock_path
from ..assembly.built import Built, build
from ..assembly.compile_report import compile_progress, is_compile_error
from ..errors import ConfigError, HandlerError, SpinError
from ..handler import ExecutionContext
from ..results import RunResult
from ..results.capture import PcapWriter
from ..topology import Topology
from .watchdog import EngineCall

if TYPE_CHECKING:  # annotations only
    from ..describe.scenario import Scenario


PROGRESS_CHUNK_EVENTS = 1 << 20  # engine calls return this often to report progress
REPLAY_MAX_EVENTS = 5_000_000    # a handler failure after more events keeps its hint, unreplayed


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


def _frame_values(exc: BaseException, file: str, limit: int = 8) -> str:
    """The scalar locals (ints, floats, bools) of the innermost frame of ``exc`` in ``file``:
    what an index or a divisor was when the handler failed."""
    import traceback
    frame = None
    for candidate, _ in traceback.walk_tb(exc.__traceback__):
        if candidate.f_code.co_filename == file:
            frame = candidate
    if frame is None:
        return ""
    shown = [f"{name}={value!r}" for name, value in frame.f_locals.items()
             if isinstance(value, (bool, int, float, np.integer, np.floating))]
    return ", ".join(shown[:limit])


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
    """One worker's engine for a scenario, run: give it a ``Built`` (``spin.assembly.built.build``)
    or a ``Scenario``, which it builds itself (all devices unless ``local_devices`` is given)."""

    def __init__(self, scenario: Scenario | Built, local_devices: set[int] | None = None,
                 quiet: bool = False, attached_hosts: bool = False):
        """``quiet`` silences the line on stderr shown while the engine or handlers compile
        (cache misses only); ``local_devices`` and ``attached_hosts`` (some frames leave for
        hosts attached from outside spin, which need every byte of them) go to ``build``."""
        if isinstance(scenario, Built):
            if local_devices is not None or attached_hosts:
                raise ConfigError("Simulation(built): local_devices and attached_hosts are "
                                  "settings of build(scenario, ...), already applied")
            built = scenario
        else:
            built = build(scenario, local_devices, quiet=quiet, attached_hosts=attached_hosts)
        self.built = built
        self.scenario = built.scenario
        self.device_names = list(built.device_names)
        self.n_devs = len(built.device_names)
        self.local = set(built.local)
        self._standalone = built.standalone
        self._attached_hosts = built.attached_hosts
        self.programs = list(built.programs)
        self.engine = built.engine
        self.st = built.st
        self.ec_order = built.ec_order
        self.port_of_link = built.port_of_link
        self.handlers = built.handlers
        self.schemes = built.schemes
        self.transport = built.transport
        self.hmem = built.hmem
        self.captured = CapturedFrames.empty(self.st.pool.shape[1])
        self._trace_parts: list[np.ndarray] = []
        self.queue_samples: list[np.ndarray] = []   # (time, global port, bytes, busy ps) rows
        self._started = False
        self._compiled, self._quiet = False, quiet

    # --- running ------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule every local host program at t=0 (idempotent)."""
        if self._started:
            return
        self._started = True
        from ..engine.heap import push_event, push_event_keyed
        st = self.st
        running = np.flatnonzero(st.dev[:self.scenario.n_hosts, S.D_HOST_STATE] == S.HOST_RUNNING)
        for node in running.tolist():    # a numpy read per host cost 40 ms at 8,192 hosts
            if node in self.local:
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
        self._ready()
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

    def _ready(self) -> None:
        """What precedes processing events: the engine compiled (or loaded), the host programs
        scheduled, the next queue sample scheduled. The scheduling helpers are compiled
        functions too, compiled on their first call after an engine recompile (about 1.3 s), so
        ``run`` does this before its wall clock starts."""
        self.compile()
        self.start()
        sc = self.st.sc
        if sc[S.SC_SAMPLE_PS] and not sc[S.SC_SAMPLE_PENDING] and sc[S.SC_HEAP_N] > 0:
            from ..engine.ports import schedule_sample
            schedule_sample(self.st, np.int64(sc[S.SC_NOW]))

    def run(self, pcap_dir: str | Path | None = None, quiet: bool = True,
            until_ps: int | None = None) -> RunResult:
        """Run to completion (or ``until_ps``); a progress bar over virtual time appears for runs
        longer than a couple of seconds unless ``quiet``."""
        from ..parallel.progress import Progress
        self._ready()   # compiles or loads from the cache: not part of the run's wall time
        t_end = int(S.INF_PS) if until_ps is None else int(until_ps)
        with Progress(until_ps, quiet=quiet) as progress:
            t0 = time.perf_counter()
            while self.run_until(t_end, max_events=PROGRESS_CHUNK_EVENTS) == S.STATUS_EVENT_LIMIT:
                progress.update(int(self.st.sc[S.SC_NOW]), int(self.st.sc[S.SC_EVENTS]))
            wall = time.perf_counter() - t0 - progress.setup_s   # the bar's start is not the run's
        self._drain_capture()
        if pcap_dir is not None:
            self.write_pcaps(pcap_dir)
        result = self.result()
        result.wall = {"seconds": wall, "events_per_s": result.events / wall if wall > 0 else 0.0}
        return result

    def _host_call(self) -> None:
        from ..describe.host_program import HostCall
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
        from ..caches import compile_lock
        i64 = numba.types.int64
        signature = (numba.typeof(self.st), numba.typeof(self.hmem), i64, i64)
        try:
            with compile_lock(engine_lock_path(self.scenario.engine.boundscheck), "the engine",
                              self._quiet), \
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
        if cur[S.CUR_LB_RUNNING] and self.schemes is not None:
            return self._describe_scheme_failure(exc)
        if cur[S.CUR_ACTIVE] and "not a sPIN return code" in str(exc):
            # no line of the handler failed: the engine checked what it returned
            return HandlerError(self.describe_running_handler(
                f"returned {int(cur[S.CUR_RETURNED])}, {str(exc).split(', ', 1)[1]}"))
        if cur[S.CUR_ACTIVE]:
            if self.scenario.engine.debug:
                hint = self._failing_line(exc)
                if isinstance(exc, FloatingPointError):
                    hint += (" (as plain Python, numpy keeps arithmetic on a uint8 or int32 value "
                             "in that type, where the compiled handler widens to int64: "
                             "convert with int(...))")
            else:
                hint = self._replayed_failing_line() or (
                    " (to see the failing line, run the handlers as plain Python: "
                    "EngineConfig(debug=True), spin run --debug or run(..., debug=True))")
            return HandlerError(self.describe_running_handler(
                f"failed with {type(exc).__name__}: {exc}{hint}"))
        if cur[S.CUR_TR_RUNNING] and self.transport is not None:
            return HandlerError(self.describe_running_transport(
                f"failed with {type(exc).__name__}: {exc}"))
        if isinstance(exc, MemoryError):
            return ConfigError(str(exc))
        return SpinError(f"engine failed at t={int(st.sc[S.SC_NOW])} ps: {type(exc).__name__}: {exc}")

    def _describe_scheme_failure(self, exc: Exception) -> SpinError:
        """A scheme compiled apart failed: named with its switch, time and frame, and the
        failing line of its file (from the traceback in debug mode, else found by replaying
        the run with the scheme as plain Python)."""
        cur = self.st.cur
        name = self.schemes.names[int(cur[S.CUR_LB_RUNNING]) - 1]
        now = int(self.st.sc[S.SC_NOW])
        if isinstance(exc, ValueError) and "view.ports" in str(exc):
            what = (f"returned local port {int(cur[S.CUR_LB_ANSWER])}, which is not one of "
                    f"view.ports")
            hint = ""      # the engine checks the answer: no line of the scheme failed
        else:
            what = f"failed with {type(exc).__name__}: {exc}"
            from switch_emulator.lb.registry import find_scheme
            select = find_scheme(name).select
            code = getattr(getattr(select, "py_func", select), "__code__", None)
            file = code.co_filename if code else None
            if self.scenario.engine.debug:
                hint = self._failing_line_in(exc, file)
            else:
                hint = self._replayed_failing_line(file, now) or (
                    " (to see the failing line, run it as plain Python: "
                    "EngineConfig(debug=True) or spin run --debug)")
        return HandlerError(self.describe_running_scheme(f"{what}{hint}"))

    def describe_running_scheme(self, reason: str) -> str:
        """The port-selection scheme being called now (from the engine's slots): its name, the
        switch, the time and the frame's destination, then ``reason``."""
        cur = self.st.cur
        name = self.schemes.names[int(cur[S.CUR_LB_RUNNING]) - 1]
        dev, slot = int(cur[S.CUR_LB_DEV]), int(cur[S.CUR_LB_SLOT])
        from ..wire.headers import IP_DST_OFF
        frame = self.st.pool[slot]
        dst = (int(frame[IP_DST_OFF + 1]) << 16) | (int(frame[IP_DST_OFF + 2]) << 8) \
            | int(frame[IP_DST_OFF + 3])
        return (f"port-selection scheme {name!r} on switch {self.device_names[dev]!r} at "
                f"t={int(self.st.sc[S.SC_NOW])} ps, routing a frame to node {dst}, {reason}")

    def describe_running_transport(self, reason: str) -> str:
        """The function of the transport compiled apart being called now: the transport, the
        function with its file and line, the NIC and the time, then ``reason``."""
        from ..assembly.transport_entries import FUNCTIONS
        cur, entries = self.st.cur, self.transport
        fn_name = FUNCTIONS[int(cur[S.CUR_TR_RUNNING]) - 1]
        fn = getattr(importlib.import_module(entries.transport_module), fn_name)
        code = getattr(getattr(fn, "py_func", fn), "__code__", None)
        where = f" ({code.co_filename}:{code.co_firstlineno})" if code else ""
        dev = int(cur[S.CUR_TR_DEV])
        on = f" on NIC {self.device_names[dev]!r}" if 0 <= dev < len(self.device_names) else ""
        return (f"transport {entries.kind!r}: {entries.transport_module}.{fn_name}{where}{on} "
                f"at t={int(self.st.sc[S.SC_NOW])} ps {reason}")

    def _replayed_failing_line(self, file: str | None = None, t_fail: int | None = None) -> str:
        """`` at FILE:LINE: `code` (values: ...)`` of a compiled handler's (or, given its
        ``file`` and time, a scheme's) failure, found by running the same fabric again with the
        handlers and schemes as plain Python up to the failure (virtual time is deterministic,
        and debug mode gives the same results, so the replay fails in the same invocation).
        Only for a run in one process without host callbacks (which the replay would call
        again), and up to REPLAY_MAX_EVENTS events, so a failure deep into a long run keeps the
        hint instead of replaying for minutes."""
        st = self.st
        if (not self._standalone or self.scenario.callbacks
                or int(st.sc[S.SC_EVENTS]) >= REPLAY_MAX_EVENTS):
            return ""
        if t_fail is None:
            t_fail = int(st.cur[S.CUR_TIME])
        try:
            replay = Simulation(self.scenario.with_debug_handlers(), quiet=True)
            replay.run_until(t_fail + 1)
        except HandlerError as err:
            cause = err.__cause__
            if cause is None:
                line = ""
            elif file is None:
                line = replay._failing_line(cause, with_values=True)
            else:
                line = replay._failing_line_in(cause, file, with_values=True)
            return f"{line} (found by replaying the run as plain Python)" if line else ""
        except Exception:   # the replay is a courtesy: the original error stands
            return ""
        return ""

    def _failing_line(self, exc: BaseException, with_values: bool = False) -> str:
        """Debug mode: `` at FILE:LINE: `code``` of the innermost frame of the traceback in the
        running handler's own file."""
        fn = self.ec_order[int(self.st.cur[S.CUR_EC])].program.handlers()[
            int(self.st.cur[S.CUR_KIND])]
        file = getattr(getattr(fn, "py_func", fn), "__code__", None)
        return self._failing_line_in(exc, file.co_filename if file else None, with_values)

    @staticmethod
    def _failing_line_in(exc: BaseException, file: str | None,
                         with_values: bool = False) -> str:
        """`` at FILE:LINE: `code``` of the innermost frame of ``exc``'s traceback in ``file``
        (a handler's or a scheme's, run as plain Python), else ''."""
        import linecache
        import traceback
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == file]
        if not frames:
            return ""
        f = frames[-1]
        code = linecache.getline(f.filename, f.lineno).strip()
        values = _frame_values(exc, file) if with_values else ""
        return (f" at {f.filename}:{f.lineno}" + (f": `{code}`" if code else "")
                + (f" (values: {values})" if values else ""))

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
    def device_counters(self, device: str) -> dict[str, int]:
        """The counters its kind declares (``DeviceKind.counters``) of device ``device`` (a
        host or switch name), by column name, as the run left them on this worker."""
        topo = self.scenario.topology
        names = topo.device_names()
        if device not in names:
            raise ConfigError(f"device = {device!r}: not a device of the topology; devices: "
                              f"{', '.join(names[:16])}{', ...' if len(names) > 16 else ''}")
        d = names.index(device)
        kind = topo.device_kinds()[d]
        return {c: int(self.st.dev[d, DEV_TABLE.index(c)]) for c in kind.counters}

    def host_memory(self, node: int) -> np.ndarray:
        if self.scenario.payload == "generated":
            raise ConfigError("payload = 'generated' keeps no host memory to read: use "
                              "payload = 'stored'")
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
        from ..results.builder import build_result
        result = build_result(self)
        if self.scenario.tracing is not None:
            from ..results.timeline import Trace
            self._drain_capture()
            rows, lost = self.trace_records()
            result.trace = Trace.build(self.scenario, rows, result.messages, lost)
        return result
