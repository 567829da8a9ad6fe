"""How spin's cost grows with the fabric (figures, not a test): one load-balancing run per size,
each in a fresh process so that its peak memory is its own.

Sizes (``--sizes``, default ``128,1024,8192``):

- ``128``: htsim's own 128-host scenario (``examples/htsim``: k = 8 fat tree, 2 MB permutation)
  with ``--preset htsim``, spray.
- ``1024``: htsim's 1,024-host scenario (``examples/htsim``: k = 16 fat tree
  ``fat_tree_1024.topo``, ``perm_1024n_1024c_0u_2000000b.cm``), same preset, spray.
- ``8192``: ``spin lb --topology leaf_spine:leaves=128,hosts_per_leaf=64,spines=64 --size 256KiB
  --schemes spray`` (Ultra-Ethernet-style transport, trimming).
- ``8193``: htsim's 8,192-host scenario (``examples/htsim``: three-tier fat tree of radix-32
  switches ``fat_tree_8192_1os.topo``, 2 MB permutation ``perm_8192n_8192c_2MB.cm``), same
  preset, spray; htsim runs it too.
- ``65536``: ``fat_tree:k=64`` built with its routing tables and a 64 KiB permutation of
  generated payload, engine state included, nothing run (build time and memory only).

Per size: ``build`` (topology, scenario, workload), ``setup`` (engine state, engine loaded from
the cache), ``loop`` (the engine loop), ``results`` (the run's result objects), ``report`` (ideal
FCTs and the fabric's figures, as ``spin lb`` prints them), ``outside`` (everything but the loop,
compile excluded), packet events per second of loop, the process's peak resident memory, and
the whole process's wall time against its loop (``process/loop``: what start-up, imports and the
engine's load from the cache add on top of ``outside``); each size's process starts as the
``spin`` command does (``spin.startup``) and ends as it does (no interpreter teardown).
``--htsim PATH`` runs ``htsim_uec`` beside the sizes whose htsim files exist, in the same hour.

    python bench/bench_scale.py [--sizes 128,1024,8192] [--payload generated|stored]
                                [--htsim /path/to/htsim_uec] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HTSIM_DIR = ROOT / "examples" / "htsim"
HTSIM_FILES = {
    128: ("fat_tree_128_1os.topo", "perm_128n_128c_2MB.cm"),
    1024: ("fat_tree_1024.topo", "perm_1024n_1024c_0u_2000000b.cm"),
    8193: ("fat_tree_8192_1os.topo", "perm_8192n_8192c_2MB.cm"),   # htsim's 8,192-host files
}
LEAF_SPINE_8192 = {"leaves": 128, "hosts_per_leaf": 64, "spines": 64}


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6   # KiB on Linux


def _build(size: int, payload: str):
    """(scenario, workload) of one size, the scheme applied."""
    from spin.loadbalancing import with_scheme
    if size in HTSIM_FILES:
        from spin.loadbalancing.htsim_run import htsim_scenario
        topo, cm = (HTSIM_DIR / f for f in HTSIM_FILES[size])
        sc, workload, _ = htsim_scenario(topo, cm, payload=payload)
    elif size == 8192:
        from spin.loadbalancing.compare import add_workload, fabric_scenario
        sc = fabric_scenario("leaf_spine", dict(LEAF_SPINE_8192), transport="ue")
        workload = add_workload(sc, "permutation", message_bytes=256 * 1024, seed=0, fill=False,
                                payload=payload)
    else:
        raise SystemExit(f"--sizes: {size} is not one of 128, 1024, 8192, 8193, 65536")
    return with_scheme(sc, "spray"), workload


def measure_one(size: int, payload: str) -> dict:
    """Build and run one size in this process; every phase timed."""
    if size == 65536:
        return measure_build_only("fat_tree", {"k": 64})
    ti = time.perf_counter()
    from spin.startup import imports_paused, single_blas_thread
    single_blas_thread()                           # as the spin command starts
    with imports_paused():
        from spin.loadbalancing.metrics import fabric_figures
        from spin.runtime.simulation import Simulation
        from spin.workloads.metrics import workload_report
    t0 = time.perf_counter()
    sc, workload = _build(size, payload)
    t1 = time.perf_counter()
    sim = Simulation(sc, quiet=True)
    t2 = time.perf_counter()
    sim.compile()                                  # loads the cached engine: not timed below
    t3 = time.perf_counter()
    result = sim.run(quiet=True)
    t4 = time.perf_counter()
    loop = float(result.wall["seconds"])
    report = workload_report(workload, sc, result)
    figures = fabric_figures(result)
    t5 = time.perf_counter()
    return {
        "hosts": len(sc.topology.hosts), "imports_s": t0 - ti, "build_s": t1 - t0,
        "setup_s": t2 - t1, "engine_load_s": t3 - t2, "loop_s": loop, "results_s": (t4 - t3) - loop,
        "report_s": t5 - t4, "outside_s": (t5 - t0) - loop - (t3 - t2),
        "packet_events": int(result.packet_events),
        "packet_events_per_s": result.packet_events / loop if loop > 0 else 0.0,
        "peak_gb": _peak_rss_gb(), "fct_mean_us": report.fct.mean_ps / 1e6,
        "fct_max_us": report.fct.max_ps / 1e6, "flows": report.fct.count,
        "busiest_link_util": figures.max_utilisation,
    }


def measure_build_only(topology: str, params: dict) -> dict:
    """Topology with its routing tables, a permutation of 64 KiB per host with generated
    payload (as ``spin lb --topology fat_tree:k=64 --size 64KiB`` builds it) and the engine
    state sized for it, nothing run. Without a workload the state is sized by the defaults
    (every byte stored, the largest frame pool), which no machine of this kind holds at
    65,536 hosts: the estimate refuses it before allocating."""
    from spin.loadbalancing.compare import add_workload, fabric_scenario
    from spin.runtime.simulation import Simulation
    t0 = time.perf_counter()
    sc = fabric_scenario(topology, params, transport="ue")
    add_workload(sc, "permutation", message_bytes=64 * 1024, seed=0, fill=False,
                 payload="generated")
    t1 = time.perf_counter()
    Simulation(sc, quiet=True)
    t2 = time.perf_counter()
    return {"hosts": len(sc.topology.hosts), "build_s": t1 - t0, "setup_s": t2 - t1,
            "outside_s": t2 - t0, "peak_gb": _peak_rss_gb()}


def htsim_run(binary: str, size: int) -> dict | None:
    """htsim_uec on its own files for ``size`` (None when it has none): wall and peak memory."""
    if size not in HTSIM_FILES:
        return None
    topo, cm = (HTSIM_DIR / f for f in HTSIM_FILES[size])
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "-topo", str(topo), "-tm", str(cm),
                           "-sender_cc_only"], capture_output=True, text=True, cwd="/tmp")
    wall = time.perf_counter() - t0
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    return {"wall_s": wall, "peak_gb": peak_kib / 1e6, "rc": proc.returncode}


def _row(size: int, r: dict, h: dict | None) -> str:
    if "loop_s" not in r:
        return (f"{r['hosts']:>7,}  {r['build_s']:7.1f}  {r['setup_s']:7.1f}  {'-':>7}  "
                f"{r['outside_s']:8.1f}  {'-':>9}  {r['peak_gb']:6.2f}  {r['process_s']:7.1f}  "
                f"{'-':>7}  -")
    hs = f"{h['wall_s']:.1f} s, {h['peak_gb']:.2f} GB" if h else "-"
    return (f"{r['hosts']:>7,}  {r['build_s']:7.1f}  {r['setup_s']:7.1f}  {r['loop_s']:7.1f}  "
            f"{r['outside_s']:8.1f}  {r['packet_events_per_s'] / 1e6:9.2f}  {r['peak_gb']:6.2f}  "
            f"{r['process_s']:7.2f}  {r['process_s'] / r['loop_s']:6.2f}x  {hs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="128,1024,8192")
    ap.add_argument("--payload", default="generated", choices=("generated", "stored"),
                    help="generated (spin lb's default) or stored: every byte in host memory")
    ap.add_argument("--htsim", default=None, help="path of htsim_uec to run beside")
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.payload)), flush=True)
        os._exit(0)   # as the spin command ends (spin.cli.exit_now): no interpreter teardown
    rows, out = [], {}
    print(f"{'hosts':>7}  {'build':>7}  {'setup':>7}  {'loop':>7}  {'outside':>8}  "
          f"{'M pkt-ev/s':>9}  {'peak GB':>6}  {'process':>7}  {'/loop':>7}  htsim (wall, peak)")
    for size in (int(s) for s in args.sizes.split(",")):
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--one", str(size), "--payload",
                               args.payload], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        if proc.returncode != 0:
            print(f"{size}: failed\n{proc.stderr[-3000:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["process_s"] = time.perf_counter() - started   # interpreter start to exit
        h = htsim_run(args.htsim, size) if args.htsim else None
        out[size] = {"spin": r, "htsim": h}
        print(_row(size, r, h), flush=True)
        rows.append(r)
    print("\nseconds of wall clock; loop: the engine loop; outside: build + setup + results + "
          "report (the cached engine's load excluded); packet events/s of loop; peak: the "
          "process's resident memory; process: the whole process, interpreter start to exit "
          "(imports and the engine's load from the cache included)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
