"""Engine performance figures (wall clock). Reported, never asserted.

* handler dispatch cost: a jitted loop calling a trivial handler through the generated engine's
  static ``dispatch_handler`` vs the same body inlined, in ns per packet;
* engine speed: packet events/s and events/s of 2-host and 8-host star runs, 64 B messages,
  a trivial payload handler on every NIC;
* engine compile time, cold (fresh ``SPIN_CACHE_DIR``) and cached, in fresh subprocesses, and the
  wall time of a cached ``spin run`` of a small scenario.

The trivial handler lives in this module so the generated engine can import it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .api import SUCCESS
from .handler import HandlerProgram, handler

TARGET_PKT_EVENTS_PER_S = 2_000_000
TARGET_DISPATCH_NS = 10.0
TARGET_CACHED_START_S = 2.0
BENCH_QP = 1


@handler(cycles=10)
def trivial_payload(ctx, pkt, mem):
    mem[0] += pkt[0]
    return SUCCESS


def trivial_program() -> HandlerProgram:
    """A payload handler that adds the first payload byte to a counter."""
    return HandlerProgram("bench_trivial", payload=trivial_payload,
                          memory=np.zeros(1, np.int64))


def _figure(name: str, value: float | None, unit: str, target: str = "", met: bool | None = None,
            note: str = "") -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "target": target, "met": met, "note": note}


# --- (a) dispatch cost ----------------------------------------------------------------------------
def _dispatch_loops(dispatch):
    import numba as nb

    @nb.njit
    def via_dispatch(sel, st, ctx, hmems, frames, n):
        acc = 0
        for i in range(n):
            pkt = frames[i & 255, :64]
            acc += dispatch(sel[0], sel[1], sel[2], ctx, hmems, pkt)
        return acc

    @nb.njit
    def inlined(sel, st, ctx, hmems, frames, n):
        acc = 0
        mem = hmems[0][sel[2]]
        for i in range(n):
            pkt = frames[i & 255, :64]
            mem[0] += pkt[0]
            acc += SUCCESS
        return acc

    checked = nb.njit(boundscheck=True)(inlined.py_func)
    return via_dispatch, inlined, checked


def bench_dispatch(n: int = 20_000_000, repeats: int = 3) -> list[dict[str, Any]]:
    from .engine.codegen import load_engine
    from .engine.handler_context import sample_context
    from .simulation import Scenario, Simulation
    from .topology import Topology
    prog = trivial_program()
    engine = load_engine([prog])
    sim = Simulation(Scenario(Topology.pair(), engine_programs=[prog]))
    frames = np.random.default_rng(0).integers(0, 256, (256, 128), dtype=np.uint8)
    sel = np.array([1, 0, 0], np.int64)          # kind=payload, prog=0, instance=0 (runtime values)
    ctx = sample_context(sim.st)
    via, inl, chk = _dispatch_loops(engine.dispatch_handler)
    for fn in (via, inl, chk):
        fn(sel, sim.st, ctx, sim.hmems, frames, 10)
    best = {}
    for name, fn in (("dispatch", via), ("inline", inl), ("checked", chk)):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(sel, sim.st, ctx, sim.hmems, frames, n)
            times.append(time.perf_counter() - t0)
        best[name] = min(times) / n * 1e9
    over = best["dispatch"] - best["checked"]
    return [
        _figure("handler call via static dispatch", best["dispatch"], "ns/packet",
                note=f"{n:,} calls, best of {repeats}; handlers index with bounds checks"),
        _figure("same handler body inlined, unchecked", best["inline"], "ns/packet"),
        _figure("same handler body inlined, bounds-checked", best["checked"], "ns/packet"),
        _figure("cost of the handler's bounds checks", best["checked"] - best["inline"],
                "ns/packet"),
        _figure("dispatch overhead", over, "ns/packet", f"<= {TARGET_DISPATCH_NS:g} ns",
                over <= TARGET_DISPATCH_NS),
    ]


# --- (b) engine speed -----------------------------------------------------------------------------
def events_scenario(n_hosts: int, messages_per_host: int, nbytes: int = 64):
    """Each host sends ``messages_per_host`` messages of ``nbytes`` to the next host; a trivial
    payload handler consumes them on every NIC."""
    from .handler import ExecutionContext
    from .simulation import Scenario
    from .topology import Topology
    prog = trivial_program()
    sc = Scenario(Topology.star(n_hosts), engine_programs=[prog])
    for i in range(n_hosts):
        sc.install(ExecutionContext(i, prog, match_qp=BENCH_QP))
        hp = sc.host_program(i)
        dst = (i + 1) % n_hosts
        for _ in range(messages_per_host):
            hp.send(dst, nbytes, qp=BENCH_QP, local_addr=0, remote_addr=0)
    return sc


def _time_events(n_hosts: int, messages_per_host: int) -> tuple[int, int, float]:
    from .simulation import Simulation
    sim = Simulation(events_scenario(n_hosts, messages_per_host))
    t0 = time.perf_counter()
    sim.run_until(2 ** 62)
    wall = time.perf_counter() - t0
    from .engine import state as S
    return int(sim.st.sc[S.SC_PKT_EVENTS]), int(sim.st.sc[S.SC_EVENTS]), wall


def bench_events(n_hosts: int, target_s: float = 1.0) -> list[dict[str, Any]]:
    calib = 2000
    pk, ev, wall = _time_events(n_hosts, calib)     # also loads the engine
    pk, ev, wall = _time_events(n_hosts, calib)
    per_msg = wall / (calib * n_hosts)
    msgs = int(min(max(calib, target_s / max(per_msg, 1e-9) / n_hosts), 2_000_000))
    pk, ev, wall = _time_events(n_hosts, msgs)
    rate = pk / wall
    return [
        _figure(f"engine, {n_hosts}-host star, 64 B: packet events", rate, "events/s",
                f">= {TARGET_PKT_EVENTS_PER_S / 1e6:g} M/s", rate >= TARGET_PKT_EVENTS_PER_S,
                note=f"{pk:,} packet events in {wall:.2f} s"),
        _figure(f"engine, {n_hosts}-host star, 64 B: all events", ev / wall, "events/s",
                note=f"{ev:,} events"),
    ]


# --- (c) compile and start-up ---------------------------------------------------------------------
_PROBE = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    from spin.bench import events_scenario
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
    factory = "spin.bench:trivial_program"
    [[context]]
    node = 1
    program = "trivial"
    match_qp = 1
    [[host_program]]
    node = 0
    ops = [{ op = "repeat", times = 16, ops = [{ op = "send", dst = 1, nbytes = 64, qp = 1 }] }]
""")


def _probe(cache: str | None) -> tuple[float, float]:
    env = dict(os.environ)
    if cache is not None:
        env["SPIN_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                         timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        from .errors import SpinError
        raise SpinError(f"bench: engine compile probe failed: {out.stderr.strip().splitlines()[-1:]}")
    return float(out.stdout.strip().splitlines()[-1]), wall


def _spin_command() -> list[str]:
    exe = shutil.which("spin")
    return [exe] if exe else [sys.executable, "-m", "spin.cli"]


def bench_startup(cold: bool = True) -> list[dict[str, Any]]:
    figs = []
    with tempfile.TemporaryDirectory(prefix="spin-bench-") as tmp:
        cache = os.path.join(tmp, "cache")
        if cold:
            inner, wall = _probe(cache)
            figs.append(_figure("engine compile, cold (fresh SPIN_CACHE_DIR)", wall, "s",
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
        cmd = _spin_command() + ["run", str(toml), "--quiet"]
        env = dict(os.environ, SPIN_CACHE_DIR=cache)
        subprocess.run(cmd, env=env, capture_output=True, timeout=600)       # warm the cache
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            from .errors import SpinError
            raise SpinError(f"bench: `spin run` failed: {out.stderr.strip()}")
        figs.append(_figure("`spin run` small scenario, cached, end to end", wall, "s",
                            f"<= {TARGET_CACHED_START_S:g} s", wall <= TARGET_CACHED_START_S))
    return figs


def run_bench(quick: bool = False, progress: Callable[[str], None] | None = print
              ) -> list[dict[str, Any]]:
    """All figures as dicts {name, value, unit, target, met, note}."""
    say = progress or (lambda s: None)
    figs: list[dict[str, Any]] = []
    say("bench: handler dispatch (compiling the bench engine takes ~20 s the first time)...")
    figs += bench_dispatch(n=2_000_000 if quick else 20_000_000)
    for n_hosts in (2, 8):
        say(f"bench: engine events, {n_hosts}-host star...")
        figs += bench_events(n_hosts, target_s=0.2 if quick else 1.0)
    say("bench: compile and start-up (subprocesses)...")
    figs += bench_startup(cold=not quick)
    return figs
