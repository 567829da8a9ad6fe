"""The multi-worker speedup model (``spin.assembly.cut_cost``), calibrated, checked, extrapolated
(figures, not a test).

1. Calibrate on htsim's 1,024-host spray scenario: the 1-worker loop prices a handled frame;
   the 2-worker run's per-worker CPU prices a frame crossing the cut, and its wall time beyond
   the busiest worker's CPU prices a round.
2. Check: predict the 2-worker loop of htsim's 128-host scenario from its own 1-worker loop and
   the calibrated cut and round costs, and run it.
3. Predict 8, 32 and 128 workers (a core each, the round cost of two local workers) on the
   8,192-host three-tier fat tree of htsim (2 MB permutation) and, with ``--hosts-65536``, a
   k = 64 fat tree (65,536 hosts, a 2 MB permutation), from their METIS cuts; a frame is priced
   as in the 8,192-host 1-worker loop of docs/guides/scale.md unless ``--work-us-per-frame``.

    python bench/bench_worker_model.py [--workers 8,32,128] [--hosts-65536]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HTSIM = Path(__file__).resolve().parents[1] / "examples" / "htsim"
# A round's message to one more peer, on a cluster network (a small ZeroMQ message over
# 100 Gb/s Ethernet or InfiniBand: about 10 us of latency and software); local runs measure
# the round with one peer only.
PEER_S = 10e-6


def _measure(sc, workers: int):
    """Loop wall (s), each worker's loop CPU (s), rounds and the virtual end (ps) of a run."""
    from spin.runtime.fabric import run_scenario
    r = run_scenario(sc, workers=workers)
    cpu = r.wall.get("worker_loop_cpu_s") or [r.wall["seconds"]]
    last = max(m.completion_ps for m in r.messages)
    return r.wall["seconds"], cpu, r.wall.get("rounds", 0), last


def _scenario(topo: str, cm: str):
    from spin.loadbalancing.htsim_run import htsim_scenario
    from spin.loadbalancing.schemes import with_scheme
    from spin.runtime.fabric import compile_engine
    sc, _, _ = htsim_scenario(HTSIM / topo, HTSIM / cm)
    sc = with_scheme(sc, "spray")
    compile_engine(sc)
    return sc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="8,32,128")
    ap.add_argument("--hosts-65536", action="store_true")
    ap.add_argument("--work-us-per-frame", type=float, default=0.0)
    ap.add_argument("--calibrated", metavar="WORK_US,CUT_US,ROUND_US,DURATION_US",
                    help="skip the calibration and the check: the constants a previous run printed")
    ap.add_argument("--skip-8192", action="store_true", help="predict only --hosts-65536")
    a = ap.parse_args()
    if a.calibrated:
        work, cut, round_s, duration_s = (float(x) * 1e-6 for x in a.calibrated.split(","))
        duration = int(duration_s * 1e12)           # ps
    else:
        work, cut, round_s, duration = _calibrate_and_check()
    _predict(a, work, cut, round_s, duration)


def _calibrate_and_check() -> tuple[float, float, float, int]:
    """The constants from htsim's 1,024-host scenario, checked at 128 hosts."""
    from spin.assembly.cut_cost import CutCosts, cut_figures

    sc = _scenario("fat_tree_1024.topo", "perm_1024n_1024c_0u_2000000b.cm")
    one, two = cut_figures(sc, 1), cut_figures(sc, 2)
    t1, _, _, duration = _measure(sc, 1)
    t2, cpu2, rounds2, _ = _measure(sc, 2)
    work = t1 / sum(one.frames_handled)
    raw_cut = sum(c - work * h for c, h in zip(cpu2, two.frames_handled)) / sum(two.frames_crossing)
    cut = max(0.0, raw_cut)    # below 0 when halving the state per worker saves more than crossing costs
    round_s = max(0.0, (t2 - max(cpu2)) / rounds2) if rounds2 else 0.0
    print(f"calibration, 1,024 hosts: 1 worker {t1:.2f} s; 2 workers {t2:.2f} s (CPU "
          f"{' / '.join(f'{c:.2f}' for c in cpu2)} s, {rounds2} rounds), speedup {t1 / t2:.2f}x; "
          f"a handled frame {work * 1e6:.3f} us, a crossing frame {raw_cut * 1e6:.3f} us "
          f"(taken as {cut * 1e6:.3f}), a round "
          f"{round_s * 1e6:.0f} us; virtual duration {duration / 1e6:.1f} us", flush=True)

    small = _scenario("fat_tree_128_1os.topo", "perm_128n_128c_2MB.cm")
    s1, _, _, s_duration = _measure(small, 1)
    s2, _, _, _ = _measure(small, 2)
    check = CutCosts(s1 / sum(cut_figures(small, 1).frames_handled), cut, round_s)
    predicted = cut_figures(small, 2).time_s(check, s_duration)
    print(f"check, 128 hosts on 2 workers: predicted {predicted:.2f} s, measured {s2:.2f} s "
          f"(1 worker {s1:.2f} s)", flush=True)
    return work, cut, round_s, duration


def _predict(a, work: float, cut: float, round_s: float, duration: int) -> None:
    """Speedups at a.workers workers on the large fabrics."""
    from spin.assembly.cut_cost import CutCosts, cut_figures
    from spin.assembly.partition import link_traffic
    targets = [("8,192 hosts (htsim three-tier fat tree)",
                lambda: _scenario("fat_tree_8192_1os.topo", "perm_8192n_8192c_2MB.cm"))]
    if a.skip_8192:
        targets = []
    if a.hosts_65536:
        targets.append(("65,536 hosts (fat_tree k=64)", _big_scenario))
    for name, build in targets:
        started = time.perf_counter()
        big = build()
        traffic = link_traffic(big)
        total = sum(cut_figures(big, 1, traffic=traffic).frames_handled)
        per_frame = a.work_us_per_frame * 1e-6 or work
        t_one = total * per_frame
        row = []
        for w in (int(x) for x in a.workers.split(",")):
            fig = cut_figures(big, w, traffic=traffic)
            ideal = fig.time_s(CutCosts(per_frame, cut, round_s), duration)
            # each further peer a round exchanges with: one more message, PEER_S on a cluster
            peers = fig.time_s(CutCosts(per_frame, cut, round_s, PEER_S), duration)
            row.append(f"{w} workers {t_one / ideal:.1f}x, {t_one / peers:.1f}x at "
                       f"{PEER_S * 1e6:.0f} us per peer and round (lookahead "
                       f"{fig.lookahead_ps / 1e6:.2f} us, busiest {max(fig.frames_handled) / 1e6:.2f}"
                       f" M frames handled, {max(fig.frames_crossing) / 1e6:.2f} M crossing)")
        print(f"predicted, {name}: 1 worker {t_one:.1f} s; " + "; ".join(row)
              + f"  [{time.perf_counter() - started:.0f} s to cut]", flush=True)


def _big_scenario():
    from spin.loadbalancing.compare import add_workload, fabric_scenario
    sc = fabric_scenario("fat_tree", {"k": 64}, transport="ue")
    add_workload(sc, "permutation", message_bytes=2_000_000, seed=0, fill=False,
                 payload="generated")
    return sc


if __name__ == "__main__":
    main()
