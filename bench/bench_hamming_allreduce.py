"""In-switch allreduce on a HammingMesh (figures, not a test): the host ring against the switch
allreduce as one tree through the accelerators' routers (``tree``), as row reductions then
column reductions (``row-column``) and with the halves in opposite orders
(``row-column-split``), in virtual time, on 2 x 2 boards of 2 x 2 accelerators (16 hosts) by
default.

    python bench/bench_hamming_allreduce.py [--size 1MiB,16MiB] [--dtype float32]
        [--boards 2x2] [--board 2x2] [--share-networks] [--window 128] [--line-rate] [--pcie GB/s]

``--line-rate`` gives every switch enough units to aggregate at line rate
(``SwitchConfig(hpus=256)``, as a Tofino pipeline) and the NICs a 32-frame transmit window, as
the second switch table of docs/guides/collectives.md; the default is the default cost model.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCHEMES = ("tree", "row-column", "row-column-split")


def measure_schemes(topo, nbytes: int, dtype: str, configs: dict, window: int) -> list:
    """Ring, then the switch allreduce with each scheme, on the same inputs."""
    from spin.collectives import switch as SWC
    from spin.collectives.measure import allreduce_scenario, evaluate
    from spin.runs import run
    from spin.simulation import Scenario
    n = len(topo.hosts)
    count = nbytes // 4
    programs = SWC.programs()                   # one engine for every row
    sc, plan, inputs = allreduce_scenario("ring", n, count, dtype, topology=topo,
                                          engine_programs=programs, **configs)
    rows = [evaluate(run(sc, 1, read=plan.reads()), plan, inputs)]
    for scheme in SCHEMES:
        sc = Scenario(topo, host=sc.host, engine_programs=programs, **configs)
        plan = SWC.build(sc, count, dtype, inputs=inputs, scheme=scheme, window=window)
        m = evaluate(run(sc, 1, read=plan.reads()), plan, inputs)
        rows.append(dataclasses.replace(m, algorithm=f"switch {scheme}"))
    return rows


def main() -> None:
    from spin.collectives.measure import with_speedup
    from spin.collectives.allreduce_table import allreduce_table, parse_size
    from spin.config import NicConfig, SwitchConfig
    from spin.topologies import build_topology
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1MiB,16MiB", help="bytes per rank, comma-separated")
    ap.add_argument("--dtype", default="float32", choices=("float32", "int32"))
    ap.add_argument("--boards", default="2x2", help="rows x cols of boards")
    ap.add_argument("--board", default="2x2", help="accelerator rows x columns on a board")
    ap.add_argument("--share-networks", action="store_true")
    ap.add_argument("--window", type=int, default=128,
                    help="SwitchML slots per job (the split scheme runs two jobs per rank at once)")
    ap.add_argument("--line-rate", action="store_true",
                    help="switches aggregate at line rate, NICs keep 32 frames in flight")
    ap.add_argument("--pcie", type=float, default=0.0, metavar="GB/s",
                    help="NIC-host bandwidth (default: NicConfig's 50 GB/s); an accelerator's "
                         "on-package NIC reaches its memory far faster")
    a = ap.parse_args()
    rows_, cols = (int(x) for x in a.boards.split("x"))
    br, bc = (int(x) for x in a.board.split("x"))
    topo = build_topology("hamming_mesh", board_rows=br, board_cols=bc, rows=rows_, cols=cols,
                          share_networks=a.share_networks)
    configs = {}
    if a.line_rate:
        configs = dict(switch=SwitchConfig(hpus=256), nic=NicConfig(tx_window_frames=32))
    if a.pcie:
        nic = configs.get("nic", NicConfig())
        configs["nic"] = NicConfig.make(**{**nic.model_dump(), "pcie_rate_gbytes_per_s": a.pcie})
    out = []
    for size in a.size.split(","):
        out += measure_schemes(topo, parse_size(size), a.dtype, configs, a.window)
    what = (f"hamming_mesh {a.boards} boards of {a.board}"
            f"{', shared networks' if a.share_networks else ''}"
            f"{', line-rate switches' if a.line_rate else ''}"
            f"{f', PCIe {a.pcie:g} GB/s' if a.pcie else ''}, window {a.window}")
    print(allreduce_table(with_speedup(out), len(topo.hosts), what))


if __name__ == "__main__":
    main()
