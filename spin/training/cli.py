"""``spin train TRACE``: replay a training step from a Chakra trace set, PyTorch's execution
traces or a GOAL schedule and
print per rank step, compute and exposed communication, and per collective its time."""
from __future__ import annotations

import argparse
import sys
import time

from ..config import HOST_PRESETS
from ..describe.payload_mode import PAYLOAD_MODES
from ..errors import ConfigError
from ..topologies import build_topology
from ..topologies.inventory_tables import label, parse_spec
from ..trace_formats import read_trace
from .compute import CPU_OP_POLICIES, ComputeModel
from .plan import ALLREDUCE_CHOICES, FIXED_ALGORITHMS
from .replay import DEFAULT_MAX_MEMORY_BYTES, ReplayConfig, replay


def add_options(t: argparse.ArgumentParser) -> None:
    """Add ``spin train``'s options to its parser (``spin.cli`` names the command and says what
    it does, so that ``spin --help`` does not import this module)."""
    t.add_argument("trace", metavar="TRACE")
    t.add_argument("--topology", default="star", metavar="NAME[:k=v,...]",
                   help="registered topology (spin topo --list); default: a star of as many "
                   "hosts as ranks; ranks take the first hosts")
    t.add_argument("--algo", default="ring", metavar="ALGO|TYPE=ALGO|NODE=ALGO[,...]",
                   help=f"all-reduce algorithm ({', '.join(ALLREDUCE_CHOICES)}; default ring); "
                   f"TYPE=ALGO per collective type (all_reduce, "
                   f"{', '.join(f'{k} ({v})' for k, v in FIXED_ALGORITHMS.items())}); "
                   f"NODE=ALGO for one call, by its node id on its group's first rank")
    t.add_argument("--groups", metavar="FILE", help="process groups of a Chakra trace, JSON "
                   "{pg_name: [ranks]} (default TRACE.groups.json when it exists)")
    t.add_argument("--kineto", metavar="PREFIX",
                   help="Kineto (torch.profiler) traces of a PyTorch execution trace, files "
                   "PREFIX.<rank>.json, whose durations time the compute ops (default "
                   "TRACE.<rank>.kineto.json when they exist)")
    t.add_argument("--tflops", type=float, default=ComputeModel.peak_tflops,
                   help="compute peak per rank for nodes without a measured duration "
                   "(TFLOP/s, default %(default)s)")
    t.add_argument("--memory-gbps", type=float, default=ComputeModel.memory_gbytes_per_s,
                   help="memory bandwidth per rank for the roofline (GB/s, default "
                   "%(default)s)")
    t.add_argument("--rank-tflops", action="append", default=[], metavar="RANK=TFLOPS",
                   help="a rank's own compute peak, for nodes without a measured duration "
                   "(repeatable)")
    t.add_argument("--slow", action="append", default=[], metavar="RANK=FACTOR",
                   help="straggler: multiply RANK's compute times by FACTOR (repeatable)")
    t.add_argument("--delay", action="append", default=[], metavar="RANK=US",
                   help="straggler: RANK starts US µs late (repeatable)")
    t.add_argument("--cpu-ops", choices=CPU_OP_POLICIES, default="skip",
                   help="cost of CPU-side nodes (is_cpu_op) of converted PyTorch traces: skip "
                   "(default, as ASTRA-sim's separate CPU queue) or serial")
    t.add_argument("--host-preset", choices=tuple(HOST_PRESETS), default=None,
                   help="host model, as spin allreduce --host-preset: gpu (reduction at HBM "
                   "bandwidth, ring steps pipelined in 512 KiB chunks as NCCL does) or cpu (an "
                   "MPI rank on a server core: 5 GB/s reduction) or network (gpu without "
                   "per-message host overheads); default: gpu for accelerator "
                   "traces (Chakra, PyTorch with NCCL kernels), cpu for GOAL and CPU-only "
                   "PyTorch traces")
    t.add_argument("--payload", choices=PAYLOAD_MODES, default=None,
                   help="where payload bytes live: stored in host memory, or generated from "
                   "(host, address) with no host memory kept (results are the same); default: "
                   "generated unless a collective of the step reduces (all-reduce, "
                   "reduce-scatter), stored then")
    t.add_argument("--in-network", action="store_true",
                   help="the switches offload collectives (as InfiniBand SHARP, NVLink SHARP, "
                   "Spectrum-X): auto broadcasts by switch multicast (broadcast=multicast "
                   "picks it by name without this); default off")
    t.add_argument("--strict", action="store_true",
                   help="refuse to skip: a CPU-side c10d op of a converted PyTorch trace "
                   "(collective, send or recv) that would be replayed as a CPU op (its NCCL "
                   "kernel is the collective or transfer) is an error")
    t.add_argument("--max-memory-mb", type=float, default=DEFAULT_MAX_MEMORY_BYTES / 2**20,
                   help="host memory a rank may use (MiB, default %(default)g); larger "
                   "collectives are refused")
    t.add_argument("--workers", type=int, default=1, metavar="N",
                   help="worker processes (default 1; results are identical for any N)")
    t.add_argument("--json", metavar="OUT", help="write ranks and collectives as JSON")
    t.add_argument("--trace", dest="trace_out", metavar="OUT",
                   help="write a Perfetto (Chrome trace-event) timeline of every rank")
    t.add_argument("--quiet", action="store_true",
                   help="no compile or progress lines on stderr (the handlers of --algo nic "
                   "or switch compile once, for tens of seconds)")
    t.set_defaults(func=cmd_train)


def pairs(items: list[str], what: str) -> dict[int, float]:
    """``["3=1.5", ...]`` as {3: 1.5, ...}; a ConfigError naming the option otherwise."""
    out = {}
    for item in items:
        rank, sep, value = item.partition("=")
        try:
            out[int(rank)] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ConfigError(f"--{what} {item!r}: expected RANK=NUMBER, e.g. 3=1.5")
    return out


def algorithms(spec: str) -> tuple[str, dict[str, str], dict[int, str]]:
    """(all-reduce default, per-type, per-node choices) from ``ring``,
    ``all_reduce=switch,...`` or ``5=switch`` (node 5)."""
    default, per_kind, per_node = "ring", {}, {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        key, sep, name = (x.strip() for x in part.partition("="))
        if sep and key.isdigit():
            per_node[int(key)] = name
        elif sep:
            per_kind[key] = name
        else:
            default = part
    from .plan import check_algorithm_choices
    check_algorithm_choices(per_kind)
    return default, per_kind, per_node


def host_line(trace, chosen: str | None) -> str:
    """Which host preset the replay uses, and why."""
    if chosen:
        return f"host preset: {chosen} (--host-preset)"
    why = "an accelerator trace" if trace.device == "gpu" else "a CPU trace"
    return f"host preset: {trace.device} (default for {why}; --host-preset cpu|gpu|network to change)"


def offload_line(in_network: bool) -> str:
    """Whether the switches offload collectives, and what that changes."""
    if in_network:
        return ("in-network collectives: on (--in-network): auto broadcasts by switch "
                "multicast")
    return "in-network collectives: off (--in-network lets auto broadcast by switch multicast)"


# Traces above this many bytes get a line before they are read (a 16 MB GOAL schedule of a
# million operations reads in about 7 s and plans in about 14 s on a 2-core VM).
BIG_TRACE_BYTES = 8_000_000


def trace_bytes(path: str) -> int:
    """Bytes of the trace ``path`` names: the file, or the rank files of a prefix."""
    from pathlib import Path
    given = Path(path)
    files = [given] if given.is_file() else list(given.parent.glob(given.name + ".*"))
    return sum(f.stat().st_size for f in files if f.is_file())

def cmd_train(args: argparse.Namespace) -> int:
    """Read, replay, print; exit 1 if a checked all-reduce came out wrong."""
    from ..describe.limits import check_writable
    for path, flag in ((args.json, "--json"), (args.trace_out, "--trace")):
        if path:   # written after the replay: fail now, not then
            check_writable(path, flag, directory=False)
    started = time.perf_counter()
    size = trace_bytes(args.trace)
    if not args.quiet and size > BIG_TRACE_BYTES:
        print(f"spin train: reading {args.trace} ({size / 1e6:,.0f} MB; a trace this large takes "
              f"seconds to read and plan, each step is named when done)", file=sys.stderr,
              flush=True)
    trace = read_trace(args.trace, args.groups, args.strict, args.kineto)
    if not args.quiet and time.perf_counter() - started > 1.0:
        print(f"spin train: read {trace.name}: {trace.n_ranks:,} ranks in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    name, params = parse_spec(args.topology)
    if name == "star":
        params.setdefault("hosts", max(trace.n_ranks, 2))
    topo = build_topology(name, **params)
    algo, per_kind, per_node = algorithms(args.algo)
    compute = ComputeModel(peak_tflops=args.tflops, memory_gbytes_per_s=args.memory_gbps,
                           rank_tflops=pairs(args.rank_tflops, "rank-tflops"),
                           slowdown=pairs(args.slow, "slow"), delay_us=pairs(args.delay, "delay"),
                           cpu_ops=args.cpu_ops)
    if not args.max_memory_mb > 0:
        raise ConfigError(f"--max-memory-mb {args.max_memory_mb}: must be > 0")
    config = ReplayConfig(algo, per_kind, per_node, compute, int(args.max_memory_mb * 2**20),
                          args.workers, args.host_preset, args.payload, args.in_network)
    print(f"topology: {label(name, params)}")      # the run's basis first, then the run
    print(host_line(trace, args.host_preset))
    print(offload_line(args.in_network), flush=True)
    for note in trace.notes:
        print(f"note: {note}", flush=True)
    report = replay(trace, topo, config, quiet=args.quiet)
    if trace.skipped:
        print(f"skipped {len(trace.skipped)} CPU-side c10d launch(es), replayed as CPU ops "
              f"(their NCCL kernels are the collectives and transfers; --strict refuses), "
              f"first: {trace.skipped[0]}")
    print(report.text())
    for path, flag, write in ((args.json, "--json", report.write_json),
                              (args.trace_out, "--trace", report.write_trace)):
        if path:
            try:
                write(path)
            except OSError as exc:   # a full disk: one line, not a traceback
                raise ConfigError(f"{flag} {path}: cannot write there: "
                                  f"{exc.strerror or exc}") from None
    return 1 if report.allreduce_correct is False else 0
