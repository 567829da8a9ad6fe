"""The two-dimensional rings against their bound (figures, not a test): time, algbw, and the
ratio to the injection bound 2(n-1)/n S / (ports x R x framing) on HammingMesh with 2 x 2 and
4 x 4 boards, NIC-offloaded with one and four streams and host-driven with four, in virtual
time, with the accelerator NIC of the topology comparison (``ACCELERATOR_NIC``).

    python bench/bench_ring2d.py [--cases 2x2:2x2:1MiB,...] [--streams 4,1] [--host]

A case is ``board:boards:size`` (accelerators per board side x side, boards rows x cols, bytes
per accelerator). The default cases take about 2 minutes on an idle 2-core VM.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_CASES = "2x2:2x2:1MiB,2x2:2x2:4MiB,2x2:2x2:16MiB,2x2:2x2:64MiB,4x4:2x2:16MiB"


def run_case(board: str, boards: str, nbytes: int, algo: str, streams: int) -> dict:
    from spin.collectives import nic_ring2d, ring2d
    from spin.collectives.fabric_bandwidth import accelerator_nic
    from spin.collectives.measure import allreduce_scenario, evaluate
    from spin.collectives.theory import injection_bound_ps
    from spin.config import HostConfig
    from spin.runs import run
    from spin.describe.scenario import Scenario
    from spin.topologies import build_topology
    a, b = (int(x) for x in board.split("x"))
    rows, cols = (int(x) for x in boards.split("x"))
    topo = build_topology("hamming_mesh", board_rows=a, board_cols=b, rows=rows, cols=cols)
    n, count = len(topo.hosts), nbytes // 4
    configs = {"nic": accelerator_nic(n, nbytes)}
    if algo == "ring2d":         # the host model of a GPU: reductions at HBM speed, chunks
        configs["host"] = HostConfig.preset("gpu")
    sc, _, inputs = allreduce_scenario(algo, n, count, "int32", topology=topo, **configs)
    sc = Scenario(topo, host=sc.host, nic=sc.nic, switch=sc.switch, engine=sc.engine,
                  engine_programs=sc.engine_programs)
    build = nic_ring2d.build if algo == "nic-ring2d" else ring2d.build
    plan = build(sc, count, "int32", inputs=inputs, streams=streams)
    start = time.perf_counter()
    m = evaluate(run(sc, 1, read=plan.reads()), plan, inputs)
    bound = injection_bound_ps(topo, plan.hosts, nbytes, mtu_bytes=sc.engine.mtu_bytes,
                               pcie_gbytes_per_s=sc.nic.pcie_rate_gbytes_per_s)
    return {"hosts": n, "board": board, "bytes": nbytes, "algorithm": algo, "streams": streams,
            "time_us": m.time_ps / 1e6, "bound_us": bound / 1e6, "ratio": m.time_ps / bound,
            "algbw": m.algbw_gbytes_per_s, "correct": m.correct,
            "wall_s": time.perf_counter() - start}


def main() -> None:
    from spin.collectives.allreduce_table import parse_size
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--streams", default="4,1")
    ap.add_argument("--host", action="store_true",
                    help="also the host-driven ring2d with four streams (GPU host preset)")
    a = ap.parse_args()
    print(f"{'hosts':>5}  {'board':>5}  {'size':>9}  {'algorithm':>10}  {'streams':>7}  "
          f"{'time':>11}  {'bound':>11}  {'x bound':>7}  {'algbw':>11}  correct  {'wall':>6}")
    for case in a.cases.split(","):
        board, boards, size = case.split(":")
        runs = [("nic-ring2d", int(s)) for s in a.streams.split(",")]
        runs += [("ring2d", 4)] if a.host else []
        for algo, streams in runs:
            r = run_case(board, boards, parse_size(size), algo, streams)
            print(f"{r['hosts']:>5}  {r['board']:>5}  {size:>9}  {algo:>10}  {streams:>7}  "
                  f"{r['time_us']:>8,.1f} us  {r['bound_us']:>8,.1f} us  {r['ratio']:>7.2f}  "
                  f"{r['algbw']:>6.1f} GB/s  {'yes' if r['correct'] else 'NO':>7}  "
                  f"{r['wall_s']:>4.0f} s", flush=True)


if __name__ == "__main__":
    main()
