"""Wall-clock cost of carrying a stream through a bump-in-the-wire device (figures, not a test).

h0 writes MB MiB (1 MiB messages) to h1 through one switch, h1 behind a bump (``Topology.add_bump``) or
not: the bump adds one frame event and one link hop per frame. Prints the virtual time each
run took, its wall time and the frames per wall second the engine forwarded.

    python bench/bench_bump.py [--mb MB] [--repeat N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spin.simulation import Scenario, Simulation  # noqa: E402
from spin.topology import Topology  # noqa: E402


def scenario(nbytes: int, bump: bool) -> Scenario:
    topo = Topology()
    topo.add_switch("s0")
    topo.add_host("h0")
    topo.add_host("h1")
    topo.add_link("h0", "s0")
    if bump:
        topo.add_bump("b0", latency_ns=250)
        topo.add_link("h1", "b0")
        topo.add_link("b0", "s0")
    else:
        topo.add_link("h1", "s0")
    sc = Scenario(topo)
    sender, mib = sc.host_program("h0"), max(1, nbytes >> 20)
    for _ in range(mib):                # messages of 1 MiB (the host memory's default size)
        sender.send("h1", min(nbytes, 1 << 20), qp=1)
    sc.host_program("h1").wait_recv(qp=1, count=mib).mark("received")
    return sc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64, help="MiB written (default 64)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, best kept (default 3)")
    args = ap.parse_args()
    Simulation(scenario(4096, True)).run()        # compile and warm up
    for bump in (False, True, False, True):
        best, frames, t_ps = float("inf"), 0, 0
        for _ in range(args.repeat):
            sim = Simulation(scenario(args.mb << 20, bump))
            t0 = time.perf_counter()
            result = sim.run()
            best = min(best, time.perf_counter() - t0)
            t_ps = result.mark("received", 1)
            frames = sum(sim.device_counters("b0").values()) if bump else 0
        label = "through bump" if bump else "direct      "
        rate = f", {frames / best / 1e6:.2f} M bump frames/s" if bump else ""
        print(f"{label}: {args.mb} MiB received at {t_ps / 1e6:.3f} us virtual, "
              f"wall {best * 1e3:.1f} ms{rate}")


if __name__ == "__main__":
    main()
