"""The NIC-offloaded ring against its link bound (``theory.streaming_ring_bound``): time of the
``nic`` allreduce (float32, one-switch star, default configs) at 1 MiB and 16 MiB per rank for
n = 4, 8, 16, and how far above the bound it lands.

    PYTHONPATH=. python bench/bench_nic_ring.py [--sizes 1MiB,16MiB] [--hosts 4,8,16]
"""
from __future__ import annotations

import argparse

from spin.collectives.measure import allreduce_scenario, evaluate
from spin.collectives.allreduce_table import parse_size
from spin.collectives.theory import streaming_ring_bound
from spin.runs import run


def row(n: int, nbytes: int) -> dict:
    sc, plan, inputs = allreduce_scenario("nic", n, nbytes // 4, "float32")
    m = evaluate(run(sc, 1, read=plan.reads()), plan, inputs)
    bound = streaming_ring_bound(sc).time_ps(n, nbytes)
    return {"n": n, "bytes": nbytes, "time_us": m.time_ps / 1e6, "bound_us": bound / 1e6,
            "over": m.time_ps / bound - 1, "correct": m.correct}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1MiB,16MiB")
    ap.add_argument("--hosts", default="4,8,16")
    args = ap.parse_args()
    print(f"{'n':>3} {'size':>10} {'time (µs)':>10} {'bound (µs)':>11} {'over':>7} correct")
    for nbytes in (parse_size(s) for s in args.sizes.split(",")):
        for n in (int(h) for h in args.hosts.split(",")):
            r = row(n, nbytes)
            print(f"{n:>3} {nbytes:>10,} {r['time_us']:>10.2f} {r['bound_us']:>11.2f} "
                  f"{r['over']:>6.1%} {'yes' if r['correct'] else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
