"""A thousand-rank training step replayed (figures, not a test): a data- and pipeline-parallel
step written by ``tools/make_training_step.py`` (default 8 stages x 128 replicas = 1,024 ranks,
8 micro-batches, 1F1B) replayed as ``spin train STEP.goal --topology fat_tree:k=16`` does it,
every phase timed:

- ``generate``: writing the GOAL schedule;
- ``read + validate``: ``spin.trace_formats.read_trace`` (parse, then every check of a bad trace);
- ``build``: the fat tree, then the replay's plan (QPs, memory) and its host programs;
- ``engine setup + results``: the engine state before the loop and the run's results after it
  (the cached engine's load included: run the bench twice after editing engine sources);
- ``engine loop``: the simulation itself;
- ``report``: per rank and per collective figures from the marks.

``replay total`` is what ``spin train`` spends (read, build, run, report). Then the virtual
step time, packet events per second of loop and the process's peak resident memory, and how
long three corrupted copies of the schedule take to fail, with their one-line errors: a
receive whose send went out under another tag, a send to rank 4096, and stage 0 waiting for
micro-batch 0's backward before sending its forward (a deadlock across ranks, found by the
run).

    python bench/bench_train_scale.py [--stages 8] [--replicas 128] [--micro-batches 8]
        [--schedule 1f1b|gpipe] [--topology fat_tree:k=16] [--payload generated|stored]
        [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(args: argparse.Namespace, workdir: Path) -> dict:
    """Generate, read, build, run and report one step; every phase timed."""
    from spin.topologies import build_topology
    from spin.topologies.inventory_tables import parse_spec
    from spin.trace_formats import read_trace
    from spin.training import ReplayConfig, replay
    from tools.make_training_step import TrainingStep
    step = TrainingStep(stages=args.stages, replicas=args.replicas,
                        micro_batches=args.micro_batches, schedule=args.schedule)
    t0 = time.perf_counter()
    path = step.write(workdir / "step.goal")
    t1 = time.perf_counter()
    trace = read_trace(path)
    t2 = time.perf_counter()
    name, params = parse_spec(args.topology)
    topo = build_topology(name, **params)
    t3 = time.perf_counter()
    report = replay(trace, topo, ReplayConfig(payload=args.payload))
    t4 = time.perf_counter()
    wall = report.wall
    loop = wall["loop_s"]
    return {
        "ranks": step.ranks, "operations": step.ops, "goal_bytes": path.stat().st_size,
        "hosts": len(topo.hosts), "topology": args.topology, "payload": report.payload,
        "generate_s": t1 - t0, "read_validate_s": t2 - t1,
        "build_s": (t3 - t2) + wall["plan_s"] + wall["build_s"],
        "setup_results_s": wall["run_s"] - loop, "loop_s": loop, "report_s": wall["report_s"],
        "replay_total_s": t4 - t1, "step_us": report.step_us,
        "packet_events": report.packet_events,
        "packet_events_per_s": report.packet_events / loop if loop > 0 else 0.0,
        "sent_bytes": sum(r.sent_bytes for r in report.ranks),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "bad_traces": bad_traces(step, path, topo) if args.bad_traces else [],
        "step": {"stages": step.stages, "replicas": step.replicas,
                 "micro_batches": step.micro_batches, "schedule": step.schedule,
                 "activation_bytes": step.stage_activation_bytes,
                 "gradient_bytes": step.stage_gradient_bytes(0),
                 "forward_ns": step.forward_ns(0), "backward_ns": step.backward_ns(0)},
    }


# rank 0's block -> its corrupted copy: the first two fail validation, the last the run
CORRUPTIONS = {
    "recv without its send": lambda block, act, peer: block.replace(
        f"fs0: send {act}b to {peer} tag 0", f"fs0: send {act}b to {peer} tag 99"),
    "peer out of range": lambda block, act, peer: block.replace(
        f"fs0: send {act}b to {peer} tag 0", f"fs0: send {act}b to 4096 tag 0"),
    "deadlock": lambda block, act, peer: block + "\nfs0 requires b0",
}


def bad_traces(step, path: Path, topology) -> list[dict]:
    """Each corruption of rank 0's block: seconds until the error, and its line."""
    from spin.errors import SpinError
    from spin.trace_formats import read_trace
    from spin.training import replay
    text = path.read_text()
    end = text.index("\n}\n")                      # rank 0's block ends here
    out = []
    for name, corrupt in CORRUPTIONS.items():
        block = corrupt(text[:end], step.stage_activation_bytes, step.rank(1, 0))
        assert block != text[:end], name
        bad = path.with_name(f"bad_{name.replace(' ', '_')}.goal")
        bad.write_text(block + text[end:])
        t0 = time.perf_counter()
        try:
            replay(read_trace(bad), topology)
            line = "(no error)"
        except SpinError as exc:
            line = str(exc)
        out.append({"corruption": name, "seconds": time.perf_counter() - t0, "error": line})
    return out


def text(r: dict) -> str:
    """The figures as a table."""
    s = r["step"]
    rows = [("generate", r["generate_s"]), ("read + validate", r["read_validate_s"]),
            ("build", r["build_s"]), ("engine setup + results", r["setup_results_s"]),
            ("engine loop", r["loop_s"]), ("report", r["report_s"]),
            ("replay total (spin train)", r["replay_total_s"])]
    return "\n".join(
        [f"{r['ranks']:,}-rank DP x PP step: {s['stages']} stages x {s['replicas']} replicas, "
         f"{s['micro_batches']} micro-batches ({s['schedule']}), {r['operations']:,} GOAL ops "
         f"({r['goal_bytes'] / 1e6:.1f} MB); activation {s['activation_bytes']:,} B, gradient "
         f"{s['gradient_bytes']:,} B per stage; forward {s['forward_ns']:,} ns, backward "
         f"{s['backward_ns']:,} ns per micro-batch and stage",
         f"on {r['topology']} ({r['hosts']:,} hosts), payload {r['payload']}",
         f"{'phase':<27} {'wall_s':>7}"]
        + [f"{name:<27} {sec:>7.2f}" for name, sec in rows]
        + [f"virtual step time {r['step_us']:,.3f} us; {r['sent_bytes'] / 1e9:.2f} GB sent; "
           f"{r['packet_events'] / 1e6:.1f} M packet events, "
           f"{r['packet_events_per_s'] / 1e6:.2f} M/s of loop; peak memory "
           f"{r['peak_gb']:.2f} GB"]
        + [f"bad trace ({b['corruption']}): {b['seconds']:.1f} s to: {b['error']}"
           for b in r["bad_traces"]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=8)
    ap.add_argument("--replicas", type=int, default=128)
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--schedule", default="1f1b", choices=("1f1b", "gpipe"))
    ap.add_argument("--topology", default="fat_tree:k=16")
    ap.add_argument("--payload", default=None, choices=("generated", "stored"),
                    help="default: what spin train chooses (generated: the step reduces "
                    "nothing in host memory)")
    ap.add_argument("--no-bad-traces", dest="bad_traces", action="store_false",
                    help="skip the corrupted schedules")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = measure(args, Path(tmp))
    print(text(r))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1) + "\n")


if __name__ == "__main__":
    main()
