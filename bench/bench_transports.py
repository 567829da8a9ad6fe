"""Reliable transports and sender entropy on the 128-host k=8 fat-tree permutation (figures, not
a test): the scenario of ``bench_fattree.py`` (2 MB per host, 100 Gb/s, MTU 4 KiB) once per
scheme, with

- ``none+per_flow``: today's open-loop RDMA writes on lossless (PFC) switches (reference);
- ``rc+per_flow``: RoCEv2 RC (ACKs, go-back-N, DCQCN from ECN marks) on lossless switches;
- ``ue+spray``: the UE transport with oblivious per-packet EVs, trimming switches, no PFC;
- ``ue+reps``: the UE transport with REPS, trimming switches, no PFC.

Reports per scheme the best wall time of the run (engine compile and scenario build excluded),
packet events/s, and flow-completion times in virtual time. htsim takes 0.30-0.37 s per scheme
on this scenario on the reference machine (NSCC, trimming, no payload bytes); here every packet
carries its bytes through host memory and every ACK is a real frame.

    python bench/bench_transports.py [--k 8] [--mbytes 2] [--repeats 3] [--schemes ...]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_fattree import permutation_scenario  # noqa: E402
from spin.config import NicConfig, SwitchConfig, TransportConfig  # noqa: E402
from spin.simulation import Simulation  # noqa: E402

SCHEMES = {
    # name: (transport, entropy, lossless switches, trimming switches)
    "none+per_flow": ("none", "per_flow", True, False),
    "rc+per_flow": ("rc", "per_flow", True, False),
    "ue+spray": ("ue", "spray", False, True),
    "ue+reps": ("ue", "reps", False, True),
}


def scheme_scenario(name: str, k: int, nbytes: int, seed: int):
    kind, entropy, lossless, trim = SCHEMES[name]
    sc = permutation_scenario(k, nbytes, seed, lossless=lossless)
    return dataclasses.replace(
        sc, nic=NicConfig(transport=TransportConfig(kind=kind, entropy=entropy)),
        switch=SwitchConfig(pfc=lossless, trim=trim))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--mbytes", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    a = ap.parse_args()
    nbytes = int(a.mbytes * 1_000_000)
    rows = []
    for name in a.schemes:
        sc = scheme_scenario(name, a.k, nbytes, a.seed)
        best, result = None, None
        for _ in range(a.repeats):
            result = Simulation(sc, quiet=False).run()
            wall = result.wall["seconds"]
            best = wall if best is None else min(best, wall)
        n = sc.n_hosts
        fct = np.array([m.t_done_ps - m.t_post_ps for m in result.messages if m.t_post_ps]) / 1e6
        tot = {f: sum(getattr(x, f) for x in result.nics)
               for f in ("retransmissions", "timeouts", "naks_sent", "cnps_sent")}
        rows.append((name, best, result.packet_events, result.events, len(result.messages), n,
                     fct, tot, sum(link.trims for link in result.links),
                     max(x.reorder_degree for x in result.nics)))
        print(f"{name:14s} wall {best:7.3f} s  {result.packet_events / best / 1e6:5.2f} M packet "
              f"events/s  ({result.packet_events:,} packet events, {result.events:,} events)",
              flush=True)
    ideal_us = (nbytes + (nbytes // 4096 + 1) * 82) * 8 / 100e3
    print(f"\nfat tree k={a.k}, permutation of {nbytes:,} B per host, 100 Gb/s, MTU 4096 B; "
          f"FCT in virtual µs (serialisation alone {ideal_us:.1f} µs); wall excludes compile")
    print(f"{'scheme':14s} {'wall s':>7s} {'Mpkt-ev/s':>9s} {'done':>7s} {'mean':>8s} "
          f"{'p50':>8s} {'p99':>8s} {'max':>8s} {'retx':>7s} {'RTOs':>5s} {'NACKs':>6s} "
          f"{'CNPs':>6s} {'trims':>6s} {'reorder':>7s}")
    for name, wall, pev, _ev, done, n, fct, tot, trims, reorder in rows:
        print(f"{name:14s} {wall:7.3f} {pev / wall / 1e6:9.2f} {done:>3d}/{n:<3d} "
              f"{fct.mean():8.1f} {np.percentile(fct, 50):8.1f} {np.percentile(fct, 99):8.1f} "
              f"{fct.max():8.1f} {tot['retransmissions']:7d} {tot['timeouts']:5d} "
              f"{tot['naks_sent']:6d} {tot['cnps_sent']:6d} {trims:6d} {reorder:7d}")
    print("htsim (UEC fork, NSCC + trimming, no payload bytes): 0.30-0.37 s per scheme")


if __name__ == "__main__":
    main()
