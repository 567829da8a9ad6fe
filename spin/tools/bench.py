"""Engine performance figures (wall clock). Reported, never asserted.

* handler call cost: a jitted loop calling a trivial handler through its entry's address (as
  the engine does, ``spin.engine.handler_abi``) vs the same body inlined, in ns per packet;
* engine speed: packet events/s and events/s of 2-host and 8-host star runs, 64 B messages,
  a trivial payload handler on every NIC;
* engine compile time, cold (fresh ``SPIN_CACHE_DIR``) and cached, in fresh subprocesses, and the
  wall time of a cached ``spin run`` of a small scenario, and where it goes (imports, Numba's
  start-up, build, engine load, run, results, each timed in a fresh process);
* the edit loop: a process running a new one-handler program on a ``pair`` with the engine
  cached, then the same after editing that handler (only the handler compiles).

The trivial handler lives in this module so its entry can import it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..api import SUCCESS
from ..handler import HandlerProgram, handler
from ..scenario_code import program_factory

TARGET_PKT_EVENTS_PER_S = 10_000_000
TARGET_CALL_NS = 5.0
TARGET_CACHED_START_S = 0.6
TARGET_NEW_HANDLER_S = 3.0
TARGET_ENGINE_COLD_S = 60.0
BENCH_QP = 1


@handler(cycles=10)
def trivial_payload(ctx, pkt, mem):
    mem[0] += pkt[0]
    return SUCCESS


@program_factory
def trivial_program() -> HandlerProgram:
    """A payload handler that adds the first payload byte to a counter."""
    return HandlerProgram("bench_trivial", payload=trivial_payload,
                          memory=np.zeros(1, np.int64))


def _figure(name: str, value: float | None, unit: str, target: str = "", met: bool | None = None,
            note: str = "") -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "target": target, "met": met, "note": note}


# --- (a) handler call cost -----------------------------------------------------------------------
def _call_loops():
    import numba as nb
    from ..engine.handler_abi import invoke_entry, prepare_call

    @nb.njit
    def via_entry(addr, st, hmem, frames, n):
        acc = 0
        for i in range(n):
            pkt = frames[i & 255, :64]
            block = prepare_call(st, 1, 1, 0, -1, i, 0, 0, i, 0, pkt, hmem, 0)
            acc += invoke_entry(addr, block)
        return acc

    @nb.njit
    def inlined(addr, st, hmem, frames, n):
        acc = 0
        words = hmem[:8].view(np.int64)
        for i in range(n):
            pkt = frames[i & 255, :64]
            words[0] += pkt[0]
            acc += SUCCESS
        return acc

    checked = nb.njit(boundscheck=True)(inlined.py_func)
    return via_entry, inlined, checked


def bench_dispatch(n: int = 20_000_000, repeats: int = 3) -> list[dict[str, Any]]:
    """The engine's whole cost of calling a handler (writing its call block, the indirect call,
    rebuilding its context) against the same body inlined."""
    from ..engine import state as S
    from ..handler import ExecutionContext
    from ..describe.scenario import Scenario
    from ..runtime.simulation import Simulation
    from ..topology import Topology
    prog = trivial_program()
    sc = Scenario(Topology.pair())
    sc.install(ExecutionContext(1, prog, match_qp=BENCH_QP))
    sim = Simulation(sc)
    addr = np.int64(sim.st.prog[0, S.PR_ENTRY + S.KIND_PAYLOAD])
    frames = np.random.default_rng(0).integers(0, 256, (256, 128), dtype=np.uint8)
    via, inl, chk = _call_loops()
    for fn in (via, inl, chk):
        fn(addr, sim.st, sim.hmem, frames, 10)
    best = {}
    for name, fn in (("entry", via), ("inline", inl), ("checked", chk)):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(addr, sim.st, sim.hmem, frames, n)
            times.append(time.perf_counter() - t0)
        best[name] = min(times) / n * 1e9
    over = best["entry"] - best["checked"]
    return [
        _figure("handler call through its entry address", best["entry"], "ns/packet",
                note=f"{n:,} calls, best of {repeats}; call block + indirect call + context"),
        _figure("same handler body inlined, unchecked", best["inline"], "ns/packet"),
        _figure("same handler body inlined, bounds-checked", best["checked"], "ns/packet"),
        _figure("cost of the handler's bounds checks", best["checked"] - best["inline"],
                "ns/packet"),
        _figure("handler call overhead", over, "ns/packet", f"<= {TARGET_CALL_NS:g} ns",
                over <= TARGET_CALL_NS),
    ]


# --- (b) engine speed -----------------------------------------------------------------------------
def events_scenario(n_hosts: int, messages_per_host: int, nbytes: int = 64):
    """Each host sends ``messages_per_host`` messages of ``nbytes`` to the next host; a trivial
    payload handler consumes them on every NIC."""
    from ..handler import ExecutionContext
    from ..describe.scenario import Scenario
    from ..topology import Topology
    prog = trivial_program()
    sc = Scenario(Topology.star(n_hosts), engine_programs=[prog])
    for i in range(n_hosts):
        sc.install(ExecutionContext(i, prog, match_qp=BENCH_QP))
        hp = sc.host_program(i)
        dst = (i + 1) % n_hosts
        for _ in range(messages_per_host):
            hp.send(dst, nbytes, qp=BENCH_QP, local_addr=0, remote_addr=0)
    return sc


def _time_events(n_hosts: int, messages_per_host: int,
                 nbytes: int = 64) -> tuple[int, int, float]:
    from ..runtime.simulation import Simulation
    sim = Simulation(events_scenario(n_hosts, messages_per_host, nbytes))
    t0 = time.perf_counter()
    sim.run_until(2 ** 62)
    wall = time.perf_counter() - t0
    from ..engine import state as S
    return int(sim.st.sc[S.SC_PKT_EVENTS]), int(sim.st.sc[S.SC_EVENTS]), wall


def bench_events(n_hosts: int, target_s: float = 1.0, nbytes: int = 64) -> list[dict[str, Any]]:
    calib = 2000
    pk, ev, wall = _time_events(n_hosts, calib, nbytes)     # also loads the engine
    pk, ev, wall = _time_events(n_hosts, calib, nbytes)
    per_msg = wall / (calib * n_hosts)
    msgs = int(min(max(calib, target_s / max(per_msg, 1e-9) / n_hosts), 2_000_000))
    pk, ev, wall = _time_events(n_hosts, msgs, nbytes)
    rate = pk / wall
    target = TARGET_PKT_EVENTS_PER_S if nbytes <= 64 else TARGET_PKT_EVENTS_PER_S // 2
    return [
        _figure(f"engine, {n_hosts}-host star, {nbytes} B: packet events", rate, "events/s",
                f">= {target / 1e6:g} M/s", rate >= target,
                note=f"{pk:,} packet events in {wall:.2f} s"),
        _figure(f"engine, {n_hosts}-host star, {nbytes} B: all events", ev / wall, "events/s",
                note=f"{ev:,} events"),
    ]


# --- (c) compile and start-up ---------------------------------------------------------------------
_PROBE = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    from spin.tools.bench import events_scenario
    from spin.simulation import Simulation
    Simulation(events_scenario(2, 2)).run()
    print(time.perf_counter() - t0)
""")

_SMALL_TOML = textwrap.dedent("""
    name = "bench-small"
    [topology]
    kind = "star"
    hosts = 2
    [[program]]
    name = "trivial"
    factory = "spin.tools.bench:trivial_program"
    [[context]]
    node = 1
    program = "trivial"
    match_qp = 1
    [[host_program]]
    node = 0
    ops = [{ op = "repeat", times = 16, ops = [{ op = "send", dst = 1, nbytes = 64, qp = 1 }] }]
""")


def _python_child(code: str, *args: str, env: dict[str, str], cwd: str | Path | None = None,
                  ) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that imports this same spin: ``-P`` keeps the current
    folder off ``sys.path`` (a clone named ``spin`` there would shadow the installed package)
    and ``PYTHONPATH`` names the folder this spin was imported from (a checkout run with
    ``python -m spin`` measures itself, not another install)."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p))
    return subprocess.run([sys.executable, "-P", "-c", code, *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _probe(cache: str | None) -> tuple[float, float]:
    env = dict(os.environ)
    if cache is not None:
        env["SPIN_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    out = _python_child(_PROBE, env=env)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        from ..errors import SpinError
        raise SpinError(f"bench: engine compile probe failed: {out.stderr.strip().splitlines()[-1:]}")
    return float(out.stdout.strip().splitlines()[-1]), wall


def _spin_command() -> list[str]:
    """``spin`` as installed with this interpreter (the one a virtual environment's ``spin``
    runs), else ``python -m spin``."""
    script = Path(sysconfig.get_path("scripts")) / "spin"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "spin"]


def _start_up_notes() -> str:
    """What on this machine, outside spin, adds to a start: scipy (Numba imports scipy.linalg
    when it loads its array functions, which cached code of spin refers to) and bytecode
    caching turned off (every module of spin compiled from source at each start)."""
    import importlib.util
    notes = []
    if importlib.util.find_spec("scipy") is not None:
        notes.append("scipy installed: Numba imports scipy.linalg with its array functions "
                     "(in build)")
    if sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        notes.append("PYTHONDONTWRITEBYTECODE set: modules compiled from source at each start")
    return "; ".join(notes)


def bench_startup(cold: bool = True) -> list[dict[str, Any]]:
    """Cold: a fresh ``SPIN_CACHE_DIR`` compiles everything. Quick (not cold): this process's
    cache, which the figures before it warmed, so nothing but the new handler compiles."""
    from ..caches import cache_root
    figs = []
    with tempfile.TemporaryDirectory(prefix="spin-bench-") as tmp:
        cache = os.path.join(tmp, "cache") if cold else str(cache_root())
        if cold:
            inner, wall = _probe(cache)
            figs.append(_figure("engine compile, cold (fresh SPIN_CACHE_DIR)", wall, "s",
                                f"<= {TARGET_ENGINE_COLD_S:g} s", wall <= TARGET_ENGINE_COLD_S,
                                note=f"build + first run {inner:.2f} s of a {wall:.2f} s process"))
        else:
            _probe(cache)
            figs.append(_figure("engine compile, cold (fresh SPIN_CACHE_DIR)", None, "s",
                                note="skipped with --quick"))
        inner, wall = _probe(cache)
        figs.append(_figure("engine load, cached (same SPIN_CACHE_DIR)", wall, "s",
                            note=f"build + first run {inner:.2f} s"))
        toml = Path(tmp) / "small.toml"
        toml.write_text(_SMALL_TOML)
        command = _spin_command()
        env = dict(os.environ, SPIN_CACHE_DIR=cache)
        _time_command(command + ["run", str(toml), "--quiet"], env)          # warm the cache
        wall = _time_command(command + ["run", str(toml), "--quiet"], env)
        figs.append(_figure("`spin run` small scenario, cached, end to end", wall, "s",
                            f"<= {TARGET_CACHED_START_S:g} s", wall <= TARGET_CACHED_START_S,
                            note=f"{' '.join(Path(c).name for c in command[:3])}; "
                                 f"{_start_up_notes() or 'no scipy, bytecode cached'}"))
        figs += _run_phases(toml, env, wall)
        figs += _edit_loop(Path(tmp), env)
    return figs


def _time_command(command: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        from ..errors import SpinError
        raise SpinError(f"bench: `{' '.join(command)}` failed: {out.stderr.strip()}")
    return wall


# The steps of `spin run FILE --quiet` one by one, each timed, in a fresh process. Numba's
# start-up (its runtime, which loading cached machine code needs; its compiler's registries
# load only when something compiles) is a step of its own so that "build" and "engine load"
# measure spin's work.
_RUN_PHASES_DRIVER = textwrap.dedent("""
    import json, sys, time
    t = [time.perf_counter()]
    import spin.cli, spin.results.report
    from spin.tools.scenario_file import load_scenario
    from spin.runtime.simulation import Simulation
    t.append(time.perf_counter())
    from spin.caches import start_numba_runtime
    start_numba_runtime()
    t.append(time.perf_counter())
    scenario, options = load_scenario(sys.argv[1])
    sim = Simulation(scenario, quiet=True)
    t.append(time.perf_counter())
    sim.compile()
    t.append(time.perf_counter())
    result = sim.run(quiet=True)
    t.append(time.perf_counter())
    spin.results.report.run_summary(result, options.name)
    result.require_finished()
    t.append(time.perf_counter())
    print(json.dumps([b - a for a, b in zip(t, t[1:])]))
    spin.cli.exit_now(0)   # as `spin run` ends
""")
RUN_PHASES = ("imports", "Numba start-up", "build (scenario, state, handlers)", "engine load",
              "run", "results")


def _run_phases(toml: Path, env: dict[str, str], end_to_end_s: float) -> list[dict[str, Any]]:
    """Where the cached small `spin run` goes: one figure per step, plus the interpreter's own
    start-up (the end-to-end wall time not spent in any step)."""
    t0 = time.perf_counter()
    out = _python_child(_RUN_PHASES_DRIVER, str(toml), env=env)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        from ..errors import SpinError
        raise SpinError(f"bench: start-up breakdown failed: {out.stderr.strip()[-500:]}")
    import json
    phases = json.loads(out.stdout.strip().splitlines()[-1])
    figs = [_figure(f"  of which {name}", value, "s") for name, value in zip(RUN_PHASES, phases)]
    figs.append(_figure("  of which the interpreter and the rest", max(wall - sum(phases), 0.0),
                        "s", note=f"the steps timed in a {wall:.2f} s process, "
                                  f"{end_to_end_s:.2f} s for `spin run`"))
    return figs


_EDITED_HANDLER = textwrap.dedent("""
    import numpy as np
    from spin.api import SUCCESS
    from spin.handler import HandlerProgram

    STEP = {step}

    def count(ctx, pkt, mem):
        mem[0] += STEP
        mem[1] += pkt.shape[0]
        return SUCCESS

    def program():
        return HandlerProgram("count", payload=count, memory=np.zeros(2, np.int64))
""")

_EDIT_DRIVER = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    from spin.handler import ExecutionContext
    from spin.simulation import Scenario, Simulation
    from spin.topology import Topology
    import bench_edited_handler as h
    sc = Scenario(Topology.pair())
    ctx = sc.install(ExecutionContext(1, h.program(), match_qp=1))
    sc.host_program(0).send(1, 3000, qp=1)
    sim = Simulation(sc)
    sim.run()
    assert int(sim.handler_memory(ctx)[0]) == 3 * h.STEP
    print(time.perf_counter() - t0)
""")


def _edit_loop(tmp: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """A new handler, then the same handler edited, each run end to end in a fresh process
    with the engine cached (the handler's entry is compiled, nothing else)."""
    module = tmp / "bench_edited_handler.py"
    env = dict(env, PYTHONPATH=os.pathsep.join([str(tmp), env.get("PYTHONPATH", "")]))
    stamp = time.time_ns() % 1_000_003 + 2   # a handler no cache has seen
    figs = []
    for label, step in (("new one-handler program on a pair", stamp),
                        ("same handler edited, rerun", stamp + 1)):
        module.write_text(_EDITED_HANDLER.format(step=step))
        t0 = time.perf_counter()
        out = _python_child(_EDIT_DRIVER, env=env, cwd=tmp)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            from ..errors import SpinError
            raise SpinError(f"bench: edit-loop probe failed: {out.stderr.strip()[-500:]}")
        figs.append(_figure(f"{label}, engine cached, end to end", wall, "s",
                            f"<= {TARGET_NEW_HANDLER_S:g} s", wall <= TARGET_NEW_HANDLER_S,
                            note=f"imports + build + handler compile + run "
                                 f"{float(out.stdout.split()[-1]):.2f} s"))
    return figs


def run_bench(quick: bool = False, progress: Callable[[str], None] | None = print
              ) -> list[dict[str, Any]]:
    """All figures as dicts {name, value, unit, target, met, note}."""
    say = progress or (lambda s: None)
    figs: list[dict[str, Any]] = []
    say("bench: handler call cost (the engine compiles once per spin version, cached)...")
    figs += bench_dispatch(n=2_000_000 if quick else 20_000_000)
    for n_hosts, nbytes in ((2, 64), (8, 64), (8, 1024)):
        say(f"bench: engine events, {n_hosts}-host star, {nbytes} B...")
        figs += bench_events(n_hosts, target_s=0.2 if quick else 1.0, nbytes=nbytes)
    say("bench: compile and start-up (subprocesses)...")
    figs += bench_startup(cold=not quick)
    return figs
