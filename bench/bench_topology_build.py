"""What it costs to build an AI-cluster topology at its real size (figures, not a test): per
topology at 8,192 and 65,536 hosts (HammingMesh at 4,096 and 16,384 accelerators), each in a
fresh process so that its peak memory is its own:

- ``topology``: ``build_topology`` (the description: devices, links, roles);
- ``routing``: the routing tables alone (``switch_emulator.route_tables``, the compiled search
  loaded from Numba's cache), and their size;
- ``state``: the whole engine state (``spin.assembly.state_builder.build_state``: ports, devices,
  the routing tables again, every engine array);
- peak resident memory after the topology and its routing tables, and after the engine state
  (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), beside spin's own estimate of both
  (``spin.describe.limits``), which refuses a fabric too large before building it.

The engine's big tables are sized small and explicitly (``ENGINE``: frame pool, events,
messages, logs, queues, 4 KiB of host memory per host), so that the figures are the fabric's:
those tables grow with the workload, not with the topology.

    python bench/bench_topology_build.py [--sizes 8192,65536] [--only rail_optimized]
                                         [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (kind, parameters) by host count; 64-port switches throughout
CASES: dict[int, list[tuple[str, dict]]] = {
    8192: [
        ("fat_tree", {"k": 32}),
        ("leaf_spine_superspine", {"pods": 8, "leaves_per_pod": 32, "hosts_per_leaf": 32}),
        ("rail_optimized", {"servers": 1024, "servers_per_su": 32, "sus_per_pod": 4}),
        ("rail_optimized", {"servers": 1024, "servers_per_su": 32, "sus_per_pod": 4,
                            "scale_up": False}),
        ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 32, "cols": 32}),
    ],
    65536: [
        ("fat_tree", {"k": 64}),
        ("leaf_spine_superspine", {"pods": 64, "leaves_per_pod": 32, "hosts_per_leaf": 32}),
        ("rail_optimized", {"servers": 8192, "servers_per_su": 32, "sus_per_pod": 4}),
        ("rail_optimized", {"servers": 8192, "servers_per_su": 32, "sus_per_pod": 4,
                            "scale_up": False}),
        ("hamming_mesh", {"board_rows": 4, "board_cols": 4, "rows": 32, "cols": 32}),
    ],
}
ENGINE = {"buffer_slots": 4096, "max_events_pending": 4096, "max_rx_messages": 1024,
          "max_tx_messages": 64, "log_messages": 0, "queue_frames": 16, "capture_frames": 16}
HOST_MEMORY_BYTES = 4096


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6   # KiB on Linux


def measure(kind: str, params: dict) -> dict:
    """Build ``kind`` in this process, every phase timed."""
    import numpy as np

    from spin.assembly.state_builder import build_state
    from spin.config import EngineConfig, HostConfig
    from spin.describe.limits import fabric_bytes, state_bytes
    from spin.describe.scenario import Scenario
    from spin.topologies import build_topology
    from switch_emulator.route_tables import RouteTables
    base = _peak_gb()
    t0 = time.perf_counter()
    topo = build_topology(kind, **params)
    t1 = time.perf_counter()
    wiring = topo.port_arrays()
    tables = RouteTables(len(topo.switches), len(topo.hosts))
    tables.add_epoch(wiring.port_dev, wiring.port_local, wiring.peer,
                     np.ones(len(wiring.peer), bool), wiring.transit)
    t2 = time.perf_counter()
    fabric_peak = _peak_gb()
    routing_mb, blocks, groups = tables.nbytes() / 1e6, tables.n_blocks, tables.n_groups
    del tables, wiring
    sc = Scenario(topo, engine=EngineConfig(**ENGINE),
                  host=HostConfig(memory_bytes=HOST_MEMORY_BYTES))
    t3 = time.perf_counter()
    built = build_state(sc, [], set(range(len(topo.hosts) + len(topo.switches))))
    t4 = time.perf_counter()
    state_gb = sum(a.nbytes for a in built.st) / 1e9
    return {"kind": kind, "params": params, "hosts": len(topo.hosts),
            "switches": len(topo.switches), "links": len(topo.links),
            "topology_s": t1 - t0, "routing_s": t2 - t1, "state_s": t4 - t3,
            "routing_mb": routing_mb, "blocks": blocks, "groups": groups,
            "state_arrays_gb": state_gb, "python_gb": base,
            "fabric_peak_gb": fabric_peak, "peak_gb": _peak_gb(),
            "fabric_estimate_gb": sum(fabric_bytes(len(topo.hosts), len(topo.switches),
                                                   len(topo.links)).values()) / 1e9,
            "estimate_gb": sum(state_bytes(sc).values()) / 1e9}


def _label(kind: str, params: dict) -> str:
    short = {"servers_per_su": "su", "sus_per_pod": "pod", "leaves_per_pod": "leaves",
             "hosts_per_leaf": "hosts", "board_rows": "a", "board_cols": "b"}
    return kind + " " + ",".join(f"{short.get(k, k)}={v}" for k, v in params.items())


def _row(r: dict) -> str:
    return (f"{_label(r['kind'], r['params']):<52} {r['hosts']:>7,} {r['switches']:>7,} "
            f"{r['links']:>8,}  {r['topology_s']:6.1f} {r['routing_s']:6.1f} {r['state_s']:6.1f}"
            f"  {r['routing_mb']:7.1f}  {r['fabric_peak_gb']:5.2f} "
            f"({r['fabric_estimate_gb'] + r['python_gb']:4.2f})  {r['peak_gb']:5.2f} "
            f"({r['estimate_gb'] + r['python_gb']:4.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8192,65536")
    ap.add_argument("--only", default=None, help="one topology kind")
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        kind, params = json.loads(args.one)
        print(json.dumps(measure(kind, params)))
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # compile (or load) the routing search once, outside the timed processes
    subprocess.run([sys.executable, __file__, "--one", json.dumps(["fat_tree", {"k": 4}])],
                   env=env, capture_output=True, check=True)
    print(f"{'topology':<52} {'hosts':>7} {'switch':>7} {'links':>8}  {'topo':>6} {'route':>6} "
          f"{'state':>6}  {'tables':>7}  {'fabric GB (est.)':>16}  {'peak GB (est.)':>14}")
    out = []
    for size in (int(s) for s in args.sizes.split(",")):
        for kind, params in CASES[size]:
            if args.only and kind != args.only:
                continue
            proc = subprocess.run([sys.executable, __file__, "--one",
                                   json.dumps([kind, params])],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(f"{_label(kind, params)}: failed\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            out.append(r)
            print(_row(r), flush=True)
    print("\ntopo, route, state: seconds of wall clock (state: the whole engine state, its "
          "routing tables included); tables: MB of routing tables; fabric GB: peak resident "
          "memory after the topology and its routing tables; peak GB: after the engine state "
          f"(engine tables sized small: {ENGINE}, host memory {HOST_MEMORY_BYTES} B); est.: "
          "spin's estimate (spin.describe.limits) plus the interpreter's own memory before "
          "the build. The estimate counts every array allocated; pages of zeros never "
          "written (most of the per-device HPU table) are not resident, so peak is lower")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
