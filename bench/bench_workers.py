"""One run on 1 and 2 worker processes, alternated (figures, not a test): htsim's 1,024-host
scenario (k = 16 fat tree, 2 MB permutation, ``--preset htsim``: Ultra-Ethernet-style transport,
trimming, 4 KiB MTU) under packet spraying, with generated payload.

Per run: the engine loop's wall time, each worker's CPU time in its round loop, the sync rounds,
the frames and bytes that crossed between the workers and the loop's wall time per round; the
speedup is 1-worker loop / 2-worker loop of the same repetition. FCTs are checked identical.

    python bench/bench_workers.py [--repeats 2] [--scheme spray] [--hosts 1024|128]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = {1024: ("fat_tree_1024.topo", "perm_1024n_1024c_0u_2000000b.cm"),
             128: ("fat_tree_128_1os.topo", "perm_128n_128c_2MB.cm")}


def main() -> None:
    from spin.loadbalancing.htsim_run import htsim_scenario
    from spin.loadbalancing.schemes import with_scheme
    from spin.runtime.fabric import compile_engine, run_scenario
    from spin.workloads.metrics import flow_messages
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--scheme", default="spray")
    ap.add_argument("--hosts", type=int, default=1024, choices=sorted(SCENARIOS))
    a = ap.parse_args()
    topo, cm = (ROOT / "examples" / "htsim" / f for f in SCENARIOS[a.hosts])
    sc, workload, _ = htsim_scenario(topo, cm)
    sc = with_scheme(sc, a.scheme)
    compile_engine(sc)
    print(f"{topo.name} + {cm.name}, {a.scheme}, generated payload")
    print(f"{'run':>6} {'workers':>7} {'loop (s)':>9} {'worker loop CPU (s)':>20} {'rounds':>7} "
          f"{'frames crossed':>15} {'bytes crossed':>14} {'ms/round':>9} {'speedup':>8}")
    fcts = set()
    for rep in range(a.repeats):
        loops = {}
        for workers in (1, 2):
            r = run_scenario(sc, workers=workers)
            fcts.add(tuple(sorted(m.completion_ps for m in flow_messages(workload, r))))
            w = r.wall
            loops[workers] = w["seconds"]
            cpu = " / ".join(f"{c:.2f}" for c in w.get("worker_loop_cpu_s", [])) or "-"
            rounds = w.get("rounds", 0)
            per_round = f"{1000 * w['seconds'] / rounds:.2f}" if rounds else "-"
            speed = f"{loops[1] / loops[2]:.2f}x" if workers == 2 else ""
            print(f"{rep + 1:>6} {workers:>7} {w['seconds']:>9.2f} {cpu:>20} {rounds or '-':>7} "
                  f"{w.get('frames_exchanged', 0):>15,} {w.get('bytes_exchanged', 0):>14,} "
                  f"{per_round:>9} {speed:>8}", flush=True)
    print("FCTs identical on 1 and 2 workers:", "yes" if len(fcts) == 1 else "NO")
    if len(fcts) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
