"""Wall-clock cost of the same 8-host run on 1 and 2 worker processes (figures, not a test).

Every host streams RDMA writes to the next host through one switch; results are checked to be
identical for both worker counts before any figure is printed.

    python bench/bench_fabric.py [--messages N] [--bytes B] [--latency-ns L]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spin.config import LinkConfig  # noqa: E402
from spin.fabric import run_scenario  # noqa: E402
from spin.simulation import Scenario  # noqa: E402
from spin.topology import Topology  # noqa: E402


def ring_stream(hosts: int, messages: int, nbytes: int, latency_ns: float) -> Scenario:
    sc = Scenario(Topology.star(hosts, LinkConfig(latency_ns=latency_ns)))
    for i in range(hosts):
        h = sc.host_program(i)
        for _ in range(messages):
            h.send((i + 1) % hosts, nbytes, qp=1)
    for i in range(hosts):
        sc.host_program(i).wait_recv(qp=1, count=messages).mark("done")
    return sc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--messages", type=int, default=400, help="messages per host")
    ap.add_argument("--bytes", type=int, default=16384, help="bytes per message")
    ap.add_argument("--latency-ns", type=float, nargs="+", default=[100.0, 1000.0])
    args = ap.parse_args()
    run_scenario(ring_stream(args.hosts, 2, 1024, 100.0))  # compile/load the engine once
    for lat in args.latency_ns:
        ref = None
        for workers in (1, 2):
            sc = ring_stream(args.hosts, args.messages, args.bytes, lat)
            t0 = time.perf_counter()
            r = run_scenario(sc, workers=workers, timeout_s=600)
            wall = time.perf_counter() - t0
            digest = r.deterministic_digest()
            ref = ref or digest
            same = "identical" if digest == ref else "DIFFERENT"
            rounds = r.wall.get("rounds", 1)
            print(f"link latency {lat:7.1f} ns  workers={workers}  wall {wall:7.3f} s  "
                  f"engine+sync {r.wall['seconds']:7.3f} s  events {r.events:>9,d}  "
                  f"{r.events / r.wall['seconds'] / 1e6:6.2f} M events/s  rounds {rounds:>7,d}  "
                  f"virtual {r.end_time_ps / 1e6:9.3f} us  result {same}")


if __name__ == "__main__":
    main()
