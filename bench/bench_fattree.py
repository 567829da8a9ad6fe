"""Permutation traffic on a k-ary fat tree with per-flow ECMP (figures, not a test).

The scenario of the Ultra Ethernet load-balancing studies: every host sends 2 MB to one other
host (a random derangement), 100 Gb/s links, 4 KiB MTU. Reports wall time of the run (engine
compile and scenario build excluded, shown apart), packet events/s, peak memory, and the
flow-completion times in virtual time. htsim, the C++ simulator those studies use, takes
0.30-0.37 s for the k=8 (128-host) case on this machine with its transport and without payload
bytes; here every packet carries its bytes through host memory.

    python bench/bench_fattree.py [--k 8] [--mbytes 2] [--workers 1] [--seed 1]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spin.config import EngineConfig, HostConfig, LinkConfig, SwitchConfig  # noqa: E402
from spin.simulation import Scenario, Simulation  # noqa: E402
from spin.topologies import build_topology  # noqa: E402


def derangement(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    while True:
        p = rng.permutation(n)
        if (p != np.arange(n)).all():
            return p


def permutation_scenario(k: int, nbytes: int, seed: int, rate_gbps: int = 100,
                         lossless: bool = True) -> Scenario:
    topo = build_topology("fat_tree", k=k, link=LinkConfig(rate_gbps=rate_gbps, latency_ns=500.0))
    n = len(topo.hosts)
    # every frame queued in a switch holds a slot: size the pool for congested ECMP collisions
    engine = EngineConfig(mtu_bytes=4096, buffer_slots=max(1 << 16, 256 * n),
                          max_events_pending=max(1 << 16, 64 * n), log_messages=4 * n,
                          max_rx_messages=max(1 << 14, 4 * n), max_tx_messages=max(1 << 14, 4 * n))
    # lossless Ethernet (PFC), as RoCE is deployed: without a transport (no retransmission yet),
    # a lossy fabric would simply lose the colliding flows' bytes
    switch = SwitchConfig(pfc=lossless)
    sc = Scenario(topo, engine=engine, host=HostConfig(memory_bytes=nbytes), switch=switch)
    dst = derangement(n, seed)
    for h in range(n):
        sc.host_program(h).send(int(dst[h]), nbytes, qp=1, local_addr=0, remote_addr=0)
    return sc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--mbytes", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lossy", action="store_true", help="no PFC: queues tail-drop")
    a = ap.parse_args()
    nbytes = int(a.mbytes * 1_000_000)
    t0 = time.perf_counter()
    sc = permutation_scenario(a.k, nbytes, a.seed, lossless=not a.lossy)
    t_build = time.perf_counter() - t0
    n = len(sc.topology.hosts)
    print(f"fat tree k={a.k}: {n} hosts, {len(sc.topology.switches)} switches, "
          f"permutation of {nbytes:,} B per host, 100 Gb/s, MTU 4096 B, per-flow ECMP, "
          f"{'lossy (tail drop)' if a.lossy else 'lossless (PFC)'}")
    print(f"scenario build                      {t_build:8.3f} s")
    best = None
    for r in range(a.repeats):
        if a.workers == 1:
            t0 = time.perf_counter()
            sim = Simulation(sc)
            t_setup = time.perf_counter() - t0
            result = sim.run()
            wall = result.wall["seconds"]
        else:
            from spin.fabric import run_scenario
            t_setup = 0.0
            result = run_scenario(sc, workers=a.workers)
            wall = result.wall["total_seconds"]
        if r == 0:
            print(f"engine load + state build (first)   {t_setup:8.3f} s")
        best = wall if best is None else min(best, wall)
        print(f"run {r + 1}: wall {wall:8.3f} s   packet events {result.packet_events:,}   "
              f"{result.packet_events / wall / 1e6:6.2f} M packet events/s   "
              f"all events {result.events / wall / 1e6:6.2f} M/s")
    fct = np.array([m.t_done_ps - m.t_post_ps for m in result.messages if m.t_post_ps]) / 1e6
    ideal_us = (nbytes + (nbytes // 4096 + 1) * 82) * 8 / 100e3
    print(f"best wall                           {best:8.3f} s   (htsim: 0.30-0.37 s for k=8)")
    print(f"messages delivered                  {len(result.messages):8d} of {n}")
    print(f"FCT (virtual)   mean {fct.mean():9.1f} µs   p50 {np.percentile(fct, 50):9.1f} µs   "
          f"p99 {np.percentile(fct, 99):9.1f} µs   max {fct.max():9.1f} µs   "
          f"(serialisation alone {ideal_us:.1f} µs)")
    up = [l for l in result.links if l.tx_bytes]
    util = np.array([l.utilisation(result.end_time_ps) for l in up])
    print(f"link utilisation   mean {util.mean():.3f}   max {util.max():.3f}   "
          f"imbalance (max/mean bytes, switch uplinks) "
          f"{max(l.tx_bytes for l in up) / np.mean([l.tx_bytes for l in up]):.2f}")
    print(f"drops {result.drops or 'none'}")
    print(f"peak memory (RSS)                   {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MiB")


if __name__ == "__main__":
    main()
