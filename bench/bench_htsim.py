"""Wall time of htsim's own scenario (figures, not a test): the 128-host k = 8 fat-tree
permutation of 2 MB per host shipped with ``uet-htsim`` (``examples/htsim``), per scheme, with
htsim's ``main_uec`` queue, ECN and window sizes.

Per run: ``loop`` is the engine loop, ``run`` adds the scheme's setup (engine state) and the
results; the engine is compiled or loaded before the first timed run. ``--fresh`` instead times
whole ``spin lb --preset htsim`` processes (imports, cache load, every scheme), and
``--preset`` times the runs of that preset in one process. Without ``--preset`` it uses only
configuration fields every recent spin has, so the same script measures two trees alternately:

    PYTHONPATH=/work/main python bench/bench_htsim.py --repeats 3
    PYTHONPATH=$PWD python bench/bench_htsim.py --repeats 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "examples" / "htsim"   # htsim's own files
TOPO = DATA / "fat_tree_128_1os.topo"
CM = DATA / "perm_128n_128c_2MB.cm"


def _scenario():
    from spin.config import EngineConfig, NicConfig, SwitchConfig, TransportConfig
    from spin.loadbalancing.compare import add_workload
    from spin.simulation import Scenario
    from spin.workloads import load_htsim_topo
    topo = load_htsim_topo(TOPO)
    n = len(topo.hosts)
    engine = EngineConfig(mtu_bytes=4096, buffer_slots=max(1 << 16, 256 * n),
                          max_events_pending=max(1 << 16, 64 * n), log_messages=max(1 << 16, 8 * n),
                          max_rx_messages=max(1 << 14, 4 * n), max_tx_messages=max(1 << 14, 4 * n))
    switch = {"port_buffer_bytes": 175_308, "ecn_threshold_bytes": 35_061, "trim": True, "pfc": False}
    if "header_priority" in SwitchConfig.model_fields:      # same work on both trees
        switch["header_priority"] = False
    transport = dict(kind="ue", window_bytes=263_358, max_window_factor=1, rto_us=100.0)
    if "congestion" in TransportConfig.model_fields:         # the window both trees have
        transport["congestion"] = "window"
    nic = NicConfig(transport=TransportConfig(**transport), pcie_latency_ns=0.0)
    sc = Scenario(topo, engine=engine, nic=nic, switch=SwitchConfig(**switch))
    sc.host = sc.host.model_copy(update={"send_overhead_ns": 0.0, "recv_overhead_ns": 0.0})
    add_workload(sc, "htsim_cm", file=str(CM), fill=False)
    return sc


def _preset_scenario():
    from spin.loadbalancing.htsim_run import htsim_scenario
    return htsim_scenario(TOPO, CM)[0]


def in_process(schemes: list[str], repeats: int, preset: bool) -> None:
    t0 = time.perf_counter()
    from spin.loadbalancing import with_scheme
    from spin.simulation import Simulation
    t_import = time.perf_counter() - t0
    sc = _preset_scenario() if preset else _scenario()
    Simulation(sc, quiet=True).compile()
    print(f"imports {t_import:.3f} s; scenario built and engine loaded "
          f"{time.perf_counter() - t0:.3f} s after start")
    runs: dict[str, list[tuple[float, float]]] = {s: [] for s in schemes}
    events = {}
    for _ in range(repeats):
        for s in schemes:
            t = time.perf_counter()
            r = Simulation(with_scheme(sc, s), quiet=True).run()
            runs[s].append((r.wall["seconds"], time.perf_counter() - t))
            events[s] = r.packet_events
    for s in schemes:
        loop = statistics.median(x for x, _ in runs[s])
        run = statistics.median(y for _, y in runs[s])
        print(f"{s:6s} loop median {loop:.3f} s  run median {run:.3f} s  "
              f"(runs: {', '.join(f'{y:.3f}' for _, y in runs[s])})  "
              f"packet events {events[s]:,}")


def fresh(schemes: list[str], repeats: int) -> None:
    cmd = [sys.executable, "-m", "spin.cli", "lb", "--topo-file", str(TOPO), "--cm", str(CM),
           "--preset", "htsim", "--schemes", ",".join(schemes)]
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ))
        times.append(time.perf_counter() - t)
    per = [t / len(schemes) for t in times]
    print(f"fresh 'spin lb --preset htsim' process, {len(schemes)} scheme(s): "
          f"{', '.join(f'{t:.2f}' for t in times)} s; per scheme median {statistics.median(per):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemes", default="ecmp,spray,reps")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--preset", action="store_true",
                    help="the full htsim preset (NSCC, coalesced ACKs, ...: trees that have it)")
    a = ap.parse_args()
    schemes = a.schemes.split(",")
    if a.fresh:
        fresh(schemes, a.repeats)
    else:
        in_process(schemes, a.repeats, a.preset)


if __name__ == "__main__":
    main()
