"""Every collective against its link bound (figures, not a test): all-gather, reduce-scatter,
all-to-all, broadcast and all-reduce on a star of network-preset hosts (no per-message host
overhead, lossless switches at 400 Gb/s), at each rank count and size, with the algorithm
spin picks for that size ("auto"). Virtual times; wall seconds per row for scale.

    python bench/bench_collective_bounds.py [--ranks 8,64,512] [--size 1MiB,64MiB]
        [--kinds all_gather,...] [--broadcast-algos auto,multicast]
        [--max-host-memory-gib 12] [--json FILE]

Rows whose hosts add the bytes (reduce-scatter, all-reduce) store them, and the all-reduce's
sums are checked, unless that would need more host memory than ``--max-host-memory-gib`` in
all: then they too run with generated payload, their reductions timed but not computed (the
same virtual time to the picosecond, ``tests/test_collective_bounds.py``). The others always
run with generated payload and allocate no host memory. The bound: one packet's latency plus
the busiest host link's bytes at the payload rate (``spin.training.collective_bounds``).
The broadcast runs once per ``--broadcast-algos``: "auto" is the hosts' algorithm a replay
picks with the switches' offload off, "multicast" the switches copying the root's packets.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from spin.collectives.allreduce_table import parse_size
    from spin.training.collective_bounds import KINDS, host_memory_bytes, measure_bound, stored
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,64,512", help="rank counts, comma-separated")
    ap.add_argument("--size", default="1MiB,64MiB", help="bytes per rank, comma-separated")
    ap.add_argument("--kinds", default=",".join(KINDS), help="collectives, comma-separated")
    ap.add_argument("--broadcast-algos", default="auto,multicast",
                    help="broadcast algorithms, comma-separated (a row each)")
    ap.add_argument("--max-host-memory-gib", type=float, default=12.0,
                    help="rows that would store more host memory in all (GiB) run with "
                         "generated payload")
    ap.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    a = ap.parse_args()
    kinds = a.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        ap.error(f"--kinds {','.join(unknown)}: valid: {', '.join(KINDS)}")
    print("| collective | algorithm | ranks | bytes per rank | payload | time (us) | bound (us) | "
          "time / bound | packet events (M) | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bcast = a.broadcast_algos.split(",")
    plan = [(k, algo) for k in kinds for algo in (bcast if k == "broadcast" else ("auto",))]
    rows = []
    for n in (int(x) for x in a.ranks.split(",")):
        for size_text in a.size.split(","):
            nbytes = parse_size(size_text)
            for kind, algo in plan:
                need = host_memory_bytes(kind, n, nbytes) * n
                payload = "stored" if stored(kind) else "generated"
                if need > a.max_host_memory_gib * 2**30:
                    payload = "generated"
                started = time.perf_counter()
                row = measure_bound(kind, n, nbytes, payload, algo)
                wall = time.perf_counter() - started
                rows.append({**row.to_dict(), "wall_s": wall})
                print(f"| {kind} | {row.algorithm} | {n} | {size_text} | {row.payload} | "
                      f"{row.time_us:,.2f} | "
                      f"{row.bound_us:,.2f} | {row.ratio:.3f} | {row.packet_events / 1e6:.2f} | "
                      f"{wall:.1f} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
