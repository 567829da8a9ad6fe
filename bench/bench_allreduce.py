"""Allreduce benchmarks (figures, not a test): wall time of the engine, packet events/s and peak
memory of every registered algorithm, on the two scenarios of the in-network allreduce work:

* ``star``: 8 hosts on one switch, 64 MiB float32 per host (host ring, NIC ring and its int8 and
  sparse encodings, switch aggregation once registered);
* ``fattree``: 1024 hosts on the k = 16 fat tree, 4 MiB per host, host ring against
  hierarchical switch aggregation (``switch``, once registered).

Each case runs in its own process, so peak memory (RSS) is the case's own. Wall time is the
engine's event loop; engine compile or load and the scenario build are shown apart. The
virtual-time result (time, speedup over ring, bytes on the wire) and the check against numpy
are printed too.

    python bench/bench_allreduce.py [--scenario star|fattree|all] [--algo ring,nic,...]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCENARIOS = {"star": (8, 64 << 20, "ring,nic,nic-int8,nic-sparse,nic-sparse-hash,switch,switch-quantized"),
             "fattree": (1024, 4 << 20, "ring,switch")}


def _inputs_row(seed: int, count: int):
    """Rank ``seed``'s float32 vector, generated on its own: 1024 x 4 MiB of inputs never sit in
    memory at once (the emulated hosts already hold 8 GiB)."""
    import numpy as np
    row = np.random.default_rng(seed).random(count, dtype=np.float32)
    row -= np.float32(0.5)             # uniform in [-0.5, 0.5): both signs, as gradients
    return row


def run_case(scenario: str, name: str) -> dict:
    """One algorithm on one scenario, in this process."""
    import numpy as np

    from spin.collectives import algorithm
    from spin.collectives.measure import PAGE_BYTES, allreduce_scenario, evaluate
    from spin.config import EngineConfig, HostConfig
    from spin.simulation import Scenario
    from spin.testing import run
    from spin.topologies import build_topology
    hosts, nbytes, _ = SCENARIOS[scenario]
    count = nbytes // 4
    t0 = time.perf_counter()
    if scenario == "star":
        sc, plan, inputs = allreduce_scenario(name, hosts, count, "float32")
        reads = plan.reads()
    else:
        alg = algorithm(name)
        need = -(-alg.plan_memory(hosts, count, "float32") // PAGE_BYTES) * PAGE_BYTES
        configs = alg.configs(hosts, count * 4) if alg.configs is not None else {}
        # the ring's 2 x 1023 one-packet messages per rank need more room than the defaults
        own = configs.get("engine", EngineConfig())
        configs["engine"] = own.model_copy(update={
            "buffer_slots": max(own.buffer_slots, 1 << 17),
            "max_events_pending": max(own.max_events_pending, 1 << 18),
            "max_rx_messages": max(own.max_rx_messages, 1 << 15),
            "max_tx_messages": max(own.max_tx_messages, 1 << 15)})
        sc = Scenario(build_topology("fat_tree", k=16), host=HostConfig(memory_bytes=need),
                      **configs)
        plan = alg.build(sc, count, "float32", hosts=range(hosts))
        exact, mag = np.zeros(count), np.zeros(count)
        for h in range(hosts):
            row = _inputs_row(h, count)
            sc.write_host_memory(h, plan.input_addr, row)
            exact += row
            mag += np.abs(row)
        # check the first, middle and last rank (all 1024 results would not fit in memory)
        reads = [plan.reads()[i] for i in (0, hosts // 2, hosts - 1)]
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run(sc, 1, read=reads)
    t_total = time.perf_counter() - t0
    loop = result.wall["seconds"]
    if scenario == "star":
        m = evaluate(result, plan, inputs)
        t_ps, link_bytes, correct = m.time_ps, m.link_bytes, m.correct
    else:
        result.require_finished()
        t_ps = (max(result.mark(plan.end_mark, h) for h in plan.hosts)
                - min(result.mark(plan.start_mark, h) for h in plan.hosts))
        link_bytes = result.totals().link_bytes
        outs = [result.read(*r) for r in reads]
        bound = (hosts - 1) * 2.0 ** -24 * mag + hosts * 2.0 ** -149
        correct = (all(o.tobytes() == outs[0].tobytes() for o in outs)
                   and bool(np.all(np.abs(outs[0].astype(np.float64) - exact) <= bound)))
    return {"scenario": scenario, "algorithm": name, "hosts": hosts, "bytes": nbytes,
            "build_s": t_build, "load_and_run_s": t_total, "loop_s": loop,
            "packet_events": result.packet_events, "events": result.events,
            "time_us": t_ps / 1e6, "link_bytes": link_bytes, "correct": correct,
            "drops": dict(result.drops),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    ap.add_argument("--algo", help="algorithms (default: the scenario's list; unregistered "
                    "ones are skipped)")
    ap.add_argument("--case", nargs=2, metavar=("SCENARIO", "ALGO"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        print(json.dumps(run_case(*a.case)))
        return
    from spin.collectives import ALGORITHMS
    for scen in (SCENARIOS if a.scenario == "all" else (a.scenario,)):
        hosts, nbytes, default = SCENARIOS[scen]
        names = [x.strip() for x in (a.algo or default).split(",") if x.strip()]
        print(f"\n{scen}: {hosts} hosts, {nbytes:,} B float32 per host")
        print(f"{'algorithm':>16} {'virtual (µs)':>13} {'speedup':>8} {'wire (B)':>15} "
              f"{'wall loop (s)':>14} {'load+run (s)':>13} {'build (s)':>10} "
              f"{'pkt events':>12} {'Mpkt ev/s':>10} {'peak RSS (MiB)':>15}  correct")
        ring_us = None
        for name in names:
            if name not in ALGORITHMS:
                print(f"{name:>16}  skipped: not registered in this build")
                continue
            proc = subprocess.run([sys.executable, __file__, "--case", scen, name],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                why = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
                print(f"{name:>16}  failed: {why[0]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            ring_us = r["time_us"] if name == "ring" else ring_us
            speed = f"{ring_us / r['time_us']:.2f}x" if ring_us else "-"
            print(f"{name:>16} {r['time_us']:13.1f} {speed:>8} {r['link_bytes']:15,d} "
                  f"{r['loop_s']:14.2f} {r['load_and_run_s']:13.2f} {r['build_s']:10.2f} "
                  f"{r['packet_events']:12,d} {r['packet_events'] / r['loop_s'] / 1e6:10.2f} "
                  f"{r['peak_rss_mib']:15.0f}  {'yes' if r['correct'] else 'NO'}"
                  f"{'  drops ' + str(r['drops']) if r['drops'] else ''}")


if __name__ == "__main__":
    main()
