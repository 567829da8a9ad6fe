"""Wall-clock cost of the same run on 1 and 2 worker processes (figures, not a test).

* star: every host of an 8-host star streams RDMA writes to the next host through the one
  switch, so every frame crosses the worker boundary and the 100 ns links bound each round.
* racks: two racks of hosts on their own switch, joined by a longer inter-rack link; hosts
  stream to a rack neighbour, a few messages cross racks. This is the shape where splitting
  pays: little traffic crosses the cut, and the cut's latency is the lookahead.

* fat tree: a k-ary fat tree (k = 8: 128 hosts; --fat-tree-k 16: 1024 hosts), a random
  permutation of 2 MB per host at 100 Gb/s with a 4 KiB MTU, cut by the automatic (METIS)
  partition; "wall" includes starting the workers, building the scenario in each and merging.

Results are checked to be identical for both worker counts.

    python bench/bench_fabric.py [--messages N] [--bytes B] [--latency-ns L]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from spin.config import EngineConfig, HostConfig, LinkConfig  # noqa: E402
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


def two_racks(hosts_per_rack: int, messages: int, nbytes: int, rack_latency_ns: float) -> Scenario:
    topo = Topology()
    racks = [topo.add_switch("rack0"), topo.add_switch("rack1")]
    for r, sw in enumerate(racks):
        for _ in range(hosts_per_rack):
            topo.add_link(topo.add_host(), sw)
    topo.add_link(racks[0], racks[1], LinkConfig(latency_ns=rack_latency_ns))
    sc = Scenario(topo)
    n = 2 * hosts_per_rack
    for i in range(n):
        rack, k = divmod(i, hosts_per_rack)
        h = sc.host_program(i)
        neighbour = rack * hosts_per_rack + (k + 1) % hosts_per_rack
        for m in range(messages):
            dst = (i + hosts_per_rack) % n if m % 16 == 0 else neighbour
            h.send(dst, nbytes, qp=1)
    for i in range(n):
        sc.host_program(i).wait_recv(qp=1, count=messages).mark("done")
    return sc


def fat_tree_permutation(k: int, nbytes: int) -> Scenario:
    from spin.topologies import build_topology

    topo = build_topology("fat_tree", k=k, link=LinkConfig(rate_gbps=100))
    engine = EngineConfig(mtu_bytes=4096, buffer_slots=1 << 18, max_events_pending=1 << 20)
    sc = Scenario(topo, engine=engine, host=HostConfig(memory_bytes=max(1 << 20, 2 * nbytes)))
    n = len(topo.hosts)
    perm = np.random.default_rng(1).permutation(n)
    for i in range(n):
        if perm[i] != i:
            sc.host_program(i).send(int(perm[i]), nbytes, qp=1)
    return sc


def _compare(label: str, build) -> None:
    ref = None
    for workers in (1, 2):
        t0 = time.perf_counter()
        r = run_scenario(build(), workers=workers, timeout_s=600)
        wall = time.perf_counter() - t0
        digest = r.deterministic_digest()
        ref = ref or digest
        same = "identical" if digest == ref else "DIFFERENT"
        rounds = r.wall.get("rounds", 1)
        print(f"{label}  workers={workers}  wall {wall:7.3f} s  engine+sync "
              f"{r.wall['seconds']:7.3f} s  events {r.events:>9,d}  "
              f"{r.events / r.wall['seconds'] / 1e6:6.2f} M events/s  rounds {rounds:>7,d}  "
              f"virtual {r.end_time_ps / 1e6:9.3f} us  result {same}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--messages", type=int, default=400, help="messages per host")
    ap.add_argument("--bytes", type=int, default=16384, help="bytes per message")
    ap.add_argument("--latency-ns", type=float, nargs="+", default=[100.0, 1000.0])
    ap.add_argument("--rack-hosts", type=int, default=16, help="hosts per rack")
    ap.add_argument("--rack-latency-ns", type=float, default=1000.0)
    ap.add_argument("--fat-tree-k", type=int, nargs="*", default=[8], help="fat trees to run (0: none)")
    args = ap.parse_args()
    run_scenario(ring_stream(args.hosts, 2, 1024, 100.0))  # compile/load the engine once
    for lat in args.latency_ns:
        _compare(f"star {args.hosts} hosts, links {lat:6.0f} ns",
                 lambda: ring_stream(args.hosts, args.messages, args.bytes, lat))
    _compare(f"racks 2x{args.rack_hosts}, cut {args.rack_latency_ns:5.0f} ns",
             lambda: two_racks(args.rack_hosts, args.messages, args.bytes, args.rack_latency_ns))
    for k in (k for k in args.fat_tree_k if k):
        _compare(f"fat tree k={k:2d} permutation 2 MB", lambda: fat_tree_permutation(k, 2_000_000))


if __name__ == "__main__":
    main()
