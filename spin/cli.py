"""The ``spin`` command: ``demo``, ``run``, ``bench``, ``topo``, ``allreduce``, ``train``,
``lb`` and ``worker`` subcommands.

Errors raised on purpose (``spin.errors.SpinError``) print one line, ``spin: error: ...``, and
exit with status 2; no traceback.
"""
from __future__ import annotations

import argparse
import errno
import json
import sys
from dataclasses import replace
from pathlib import Path

from .errors import SpinError
from .startup import imports_paused, single_blas_thread

EXIT_ERROR = 2


def _write_json(path: str, data) -> None:
    p = Path(path)
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    except OSError as exc:   # a folder, a read-only place: one line, not a traceback
        raise SpinError(f"--json {path}: cannot write there: {exc.strerror or exc}") from None


def cmd_demo(args: argparse.Namespace) -> int:
    from .tools.demo import demo_table, run_demo
    _check_json_first(args.json)
    if not args.quiet:
        print("spin demo: host-based baseline vs NIC offload (virtual time)", flush=True)
    else:  # compile (or load) the engine silently first: the runs then find it ready
        from .tools.demo import demo_programs
        from .describe.scenario import Scenario
        from .runtime.simulation import Simulation
        from .topology import Topology
        Simulation(Scenario(Topology.pair(), engine_programs=demo_programs(
            args.reduce_bytes // 4, args.hosts - 1)), quiet=True).compile()
    demo = run_demo(rounds=args.rounds, ping_bytes=args.ping_bytes, hosts=args.hosts,
                    reduce_bytes=args.reduce_bytes, allreduce_bytes=args.allreduce_bytes)
    print(demo_table(demo))
    if args.json:
        _write_json(args.json, demo)
        print(f"\nresults written to {args.json}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.launcher:  # a rank of a Slurm, MPI or host-file job: rank 0 runs _run
        from .tools.launched_run import run_rank
        return run_rank(args, _run)
    for flag in ("hosts", "ssh", "job_id", "rendezvous_dir", "advertise", "join_timeout_s"):
        if getattr(args, flag) is not None:
            raise SpinError(f"--{flag.replace('_', '-')} applies to a launched job: give "
                            f"--launcher slurm, mpi or hosts too")
    return _run(args, None)


def _run(args: argparse.Namespace, cluster) -> int:
    """``spin run``'s body; ``cluster`` (spin.tools.launched_run.Cluster) when this process is
    rank 0 of a launched job."""
    from .results.report import run_summary
    from .tools.scenario_file import load_scenario, run_loaded
    from .describe.limits import check_writable
    scenario, options = load_scenario(args.scenario)
    if args.json:  # outputs are written after the run: fail now, not then
        check_writable(args.json, "--json", directory=False)
    if args.pcap:
        check_writable(args.pcap, "--pcap", directory=True)
    if args.plots:
        scenario = _prepare_plots(scenario, args.plots)
    if args.trace_links and not args.trace:
        raise SpinError("--trace-links adds link transmissions to a trace: give --trace FILE too")
    if args.trace:
        check_writable(args.trace, "--trace", directory=False)
        scenario.trace(links=args.trace_links)
    if args.debug:
        scenario = scenario.with_debug_handlers()
    if args.digests:
        scenario = replace(scenario, engine=scenario.engine.model_copy(
            update={"host_memory_digests": True}))
    if args.workers is not None:
        options = options.with_workers(args.workers)
    if args.until_us is not None:
        options = options.with_until_us(args.until_us)
    transport = {}
    if not 0 <= args.port <= 65535:
        raise SpinError(f"--port {args.port}: must be 0..65535 (0: a random free port)")
    if args.remote_workers < 0:
        raise SpinError(f"--remote-workers {args.remote_workers}: must be >= 0")
    bind = args.bind or "127.0.0.1"
    if cluster is not None:
        options, transport = cluster.apply(args, options, len(scenario.topology.device_names()))
    elif args.remote_workers:
        if not args.key_file:
            raise SpinError(f"--remote-workers {args.remote_workers} needs --key-file: workers that "
                            f"join over tcp (loopback included) must hold the run's key, or any "
                            f"local process could take their slot; create one with `spin keys DIR`")
        transport = dict(remote_workers=args.remote_workers, bind=bind, port=args.port,
                         key_file=args.key_file)
        if options.workers <= args.remote_workers:
            options = options.with_workers(args.remote_workers + 1)
        if not args.quiet:
            print(f"waiting for {args.remote_workers} worker(s) to join: spin worker --join "
                  f"tcp://{bind}:{args.port or '<port>'}"
                  + (f" --key-file {args.key_file}" if args.key_file else ""), flush=True)
    elif bind != "127.0.0.1" or args.key_file:
        transport = dict(bind=bind, port=args.port, key_file=args.key_file)
    if args.silence_timeout_s is not None:
        from .bounds import check_wait_s
        check_wait_s("--silence-timeout-s", args.silence_timeout_s)
        transport["silence_timeout_s"] = args.silence_timeout_s
    if args.endpoint:
        from .endpoint.spec import parse_endpoint_arg
        options = options.with_endpoints(
            [parse_endpoint_arg(e, args.endpoint_mode, args.key_file) for e in args.endpoint])
    elif args.endpoint_mode:
        raise SpinError("--endpoint-mode applies to --endpoint HOST=URL: give one too "
                        "(endpoints of the scenario file set their mode in [[endpoint]])")
    if options.endpoints:
        from .endpoint.spec import attach_endpoints
        attach_endpoints(scenario, options.endpoints)   # clear errors before anything starts
        if not args.quiet:
            for e in options.endpoints:
                print(f"endpoint {e.host} ({e.mode}): waiting for a program at {e.url} "
                      f"(spin.endpoint.Endpoint({e.url!r}), or examples/endpoint/"
                      f"scapy_rdma_write.py --url {e.url})", flush=True)
    from .describe.checks import parse_dump
    dumps = tuple(parse_dump(d, scenario.topology.hosts, scenario.host.memory_bytes)
                  for d in args.dump or ())
    for d in dumps:   # written after the run: fail now, not then
        from .describe.limits import check_writable
        check_writable(str(d.path), "--dump", directory=False)
    from .describe.limits import check_distinct_outputs
    check_distinct_outputs({"the scenario file": args.scenario},
                           [(f, p) for f, p in (("--json", args.json), ("--trace", args.trace))
                            if p] + [("--dump", str(d.path)) for d in dumps])
    run = run_loaded(scenario, options, pcap_dir=args.pcap, quiet=args.quiet, dumps=dumps,
                     **transport)
    if not args.quiet:
        print(run_summary(run.result, options.name))
        if not scenario.engine.host_memory_digests:
            print("skipped: SHA-256 of host memory (per-byte work, on request: --digests or "
                  "[engine] host_memory_digests = true)")
        for e in run.result.endpoints:
            print(f"endpoint {e.host} ({e.mode}): {e.frames_to_endpoint} frames "
                  f"({e.bytes_to_endpoint} B) to the program, {e.frames_from_endpoint} frames "
                  f"({e.bytes_from_endpoint} B) from it; refused: {e.dropped or 'none'}")
        if options.workload is not None:
            from .workloads.metrics import report_text
            print("\n" + report_text(options.workload, scenario, run.result))
        for line in run.check_lines:
            print(line)
        if args.pcap:
            print(f"\npcap files in {args.pcap}: {', '.join(p.name for p in run.pcaps) or 'none'}")
        for d, path in zip(dumps, run.dumped):
            print(f"dumped host {d.label} addr {d.addr}: {d.count} {d.dtype} elements to {path}")
    if args.trace:
        _write_trace(run.result.trace, args.trace, args.quiet)
    if args.plots:
        _write_run_plots(run.result, scenario, options, args.plots, args.quiet)
    if args.json:
        data = run.result.to_dict()
        data["checks"] = run.check_lines
        if options.workload is not None:
            from .workloads.metrics import report_dict
            data["workload"] = report_dict(options.workload, scenario, run.result)
        data["scenario"] = {"name": options.name, "file": str(options.source),
                            "workers": options.workers}
        _write_json(args.json, data)
        if not args.quiet:
            print(f"results written to {args.json}")
    failed = _unfinished(run.result, options.until_ps is not None)
    if not run.checks_passed:
        if args.quiet:
            for line in run.check_lines:
                if "FAILED" in line:
                    print(line, file=sys.stderr)
        print("spin: error: data check failed", file=sys.stderr)
        failed = True
    return 1 if failed else 0


def _prepare_plots(scenario, directory: str):
    """Fail now if pictures cannot be made; sample links when the scenario does not."""
    from dataclasses import replace

    from .config import EngineConfig
    from .loadbalancing.plots import DEFAULT_SAMPLE_NS, require_matplotlib
    from .describe.limits import check_writable
    require_matplotlib()
    check_writable(directory, "--plots", directory=True)
    if scenario.engine.queue_sample_ns > 0:
        return scenario
    return replace(scenario, engine=EngineConfig.make(**{**scenario.engine.model_dump(),
                                                         "queue_sample_ns": DEFAULT_SAMPLE_NS}))


def _write_run_plots(result, scenario, options, directory: str, quiet: bool) -> None:
    from .loadbalancing.plots import write_plots
    from .units import ns
    if options.workload is not None:
        from .workloads.metrics import flow_messages
        msgs = flow_messages(options.workload, result)
    else:
        msgs = [m for m in result.messages if m.completion_ps is not None]
    label = options.name or "run"
    paths = write_plots(directory, {label: (result, [m.completion_ps for m in msgs])},
                        ns(scenario.engine.queue_sample_ns))
    if not quiet:
        print(f"pictures in {directory}: {', '.join(p.name for p in paths)}")


def _write_trace(trace, path: str, quiet: bool) -> None:
    try:
        trace.write(path)
    except OSError as exc:   # a full disk: one line, not a traceback
        raise SpinError(f"--trace {path}: cannot write there: {exc.strerror or exc}") from None
    if trace.lost:
        print(f"spin: warning: {trace.lost} trace records were lost (the engine's trace table "
              f"was full); the trace in {path} is incomplete", file=sys.stderr)
    if not quiet:
        print(f"trace ({trace.records.shape[0]} records, {len(trace.messages)} messages) written "
              f"to {path}: open it in ui.perfetto.dev")


def _unfinished(result, stopped_early: bool) -> bool:
    """A run whose host programs still wait at the end is not a success (unless the user
    stopped it with --until-us): say who waits for what, even with --quiet."""
    from .errors import RunIncompleteError
    if stopped_early:
        return False
    try:
        result.require_finished()
    except RunIncompleteError as exc:
        print(f"spin: error: {one_line(exc)}", file=sys.stderr)
        return True
    return False


def _check_json_first(path: str | None) -> None:
    """A --json written after minutes of running: refuse an unwritable one before them."""
    if path:
        from .describe.limits import check_writable
        check_writable(path, "--json", directory=False)


def cmd_bench(args: argparse.Namespace) -> int:
    from .tools.bench import run_bench
    from .results.report import bench_lines
    _check_json_first(args.json)
    figures = run_bench(quick=args.quick, progress=None if args.json_only else print)
    print(bench_lines(figures))
    if args.json:
        _write_json(args.json, figures)
    return 0


def cmd_topo(args: argparse.Namespace) -> int:
    from .topologies import TOPOLOGIES, build_topology, topology_inventory
    from .units import parse_size
    from .topologies.inventory_tables import (COMPARE_SETS, available, compare_table,
                                              inventory_table, kinds_text, label, parse_params,
                                              parse_spec)
    if args.list:
        if args.json:
            raise SpinError("--json writes inventories or a comparison; --list only prints the "
                            "topology kinds")
        print(kinds_text())
        return 0
    if args.param and len(args.specs) != 1:
        raise SpinError(f"--param applies to one topology; got {len(args.specs)} (write "
                        f"NAME:k=v,k=v for each of several)")
    specs = [parse_spec(s) for s in args.specs]
    if not specs and args.compare:
        specs, lacking = available(COMPARE_SETS[args.compare_hosts])
        if lacking:
            print(f"left out (no such topology kind in this build): {', '.join(lacking)}",
                  file=sys.stderr)
    if not specs:
        raise SpinError("name a topology (spin topo fat_tree --param k=8), several, --compare "
                        "or --list")
    if args.param:
        extra = parse_params(args.param)
        twice = sorted(specs[0][1].keys() & extra.keys())     # two values for one parameter
        if twice:
            raise SpinError(f"--param {twice[0]}={extra[twice[0]]}: {twice[0]} is given in "
                            f"{args.specs[0]} too; give it once")
        specs[0] = (specs[0][0], {**specs[0][1], **extra})
        if specs[0][0] in TOPOLOGIES:
            TOPOLOGIES.get(specs[0][0], "topology.kind").refuse_reserved(specs[0][1])
    if args.json:
        from .describe.limits import check_writable
        check_writable(args.json, "--json", directory=False)   # before building, not after
    if not args.compare:
        only_compared = [flag for flag, given in (("--cost", args.cost),
                                                  ("--sensitivity", args.sensitivity),
                                                  ("--no-measure", args.no_measure),
                                                  ("--all-to-all-bytes", args.all_to_all_bytes))
                         if given]
        if only_compared:   # the inventory prices and measures nothing: they would do nothing
            raise SpinError(f"{only_compared[0]} applies to spin topo --compare; add --compare")
        named = [(label(n, p), topology_inventory(build_topology(n, **p))) for n, p in specs]
        print(inventory_table(named))
        if args.json:
            _write_json(args.json, [{"topology": t, **inv.to_dict()} for t, inv in named])
        return 0
    from .collectives.fabric_compare import compare_rows, sensitivity_section
    from .topologies.cost import load_cost_model
    model = load_cost_model(args.cost)
    nbytes = None if args.no_measure else parse_size(args.measure_bytes)
    a2a_bytes = parse_size(args.all_to_all_bytes) if args.all_to_all_bytes else None
    rows, bounds = compare_rows(specs, model, nbytes, a2a_bytes=a2a_bytes)
    print(compare_table(rows, bounds))
    if args.sensitivity and len(rows) > 1:
        print("\n" + sensitivity_section(rows, bounds, model))
    if args.json:
        _write_json(args.json, [{"topology": t, **inv.to_dict(), "cost": c.to_dict(),
                                 "allreduce_bound_gbytes_per_s": bounds[t],
                                 "bandwidth": None if b is None else b.to_dict()}
                                for t, inv, c, b in rows])
    return 0


def cmd_allreduce(args: argparse.Namespace) -> int:
    from .collectives.allreduce_table import run_allreduce_cli
    return run_allreduce_cli(args)


def cmd_lb(args: argparse.Namespace) -> int:
    if args.preset or args.topo_file or args.cm:
        if not (args.preset and args.topo_file and args.cm):
            raise SpinError("spin lb --topo-file T.topo --cm C.cm --preset htsim: the three go "
                            "together (the only preset is htsim)")
        from .loadbalancing.htsim_run import run_preset_cli
        return run_preset_cli(args)
    if args.switch_seeds is not None:
        raise SpinError("spin lb --switch-seeds N repeats an htsim scenario per switch seed: "
                        "give it with --topo-file T.topo --cm C.cm --preset htsim")
    from .loadbalancing.compare import run_lb_cli
    return run_lb_cli(args)


def cmd_keys(args: argparse.Namespace) -> int:
    from .errors import ConfigError
    from .parallel.auth import existing_keys, generate_keys
    existing = existing_keys(args.directory)
    if existing and not args.force:     # replacing them locks out the workers holding them
        raise ConfigError(f"spin keys {args.directory}: {' and '.join(map(str, existing))} "
                        f"already exist{'s' if len(existing) == 1 else ''}; workers holding that "
                        f"key could no longer join: --force replaces it")
    try:
        secret = generate_keys(args.directory, force=args.force)
    except OSError as exc:
        raise SpinError(f"spin keys {args.directory}: cannot write the key files there: "
                        f"{exc.strerror or exc}") from None
    if existing:
        print(f"replaced {' and '.join(map(str, existing))}: workers holding the old key can no "
              f"longer join")
    print(f"secret key: {secret}  (give it to the coordinator and every worker with --key-file;"
          f" anyone holding it can join a run)")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from .parallel.worker_main import endpoint_host, main as worker_main
    from .tools.launched_run import check_join_timeout
    check_join_timeout(args.join_timeout_s)
    endpoint_host(args.join)      # a bad address: refused now, not after the join timeout
    argv = ["--join", args.join]
    if args.key_file:
        argv += ["--key-file", args.key_file]
    if args.join_timeout_s is not None:
        argv += ["--join-timeout-s", str(args.join_timeout_s)]
    return int(worker_main(argv) or 0)


class _VersionAction(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (importlib.metadata costs
    a fifth of ``spin --help``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"spin {_version()}"
        super().__call__(parser, namespace, values, option_string)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("spin-emulator")
    except PackageNotFoundError:
        return "unknown"


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser that adds its options on first use (parsing, help, usage).

    Options name the choices of registries (topologies, workloads, collectives, transports);
    reading those imports Numba and most of spin. ``spin --help`` and ``spin run ...`` then
    pay only for the command they invoke."""

    def __init__(self, *args, add_options=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._pending_options = add_options

    def add_options(self) -> CommandParser:
        """Add this command's options now (once); returns the parser."""
        add, self._pending_options = self._pending_options, None
        if add is not None:
            add(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        self.add_options()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.add_options()
        return super().format_usage()

    def format_help(self) -> str:
        self.add_options()
        return super().format_help()


def build_parser(complete: bool = False) -> argparse.ArgumentParser:
    """The ``spin`` parser: subcommands by name and one-line help; each adds its options when it
    is invoked or asked for its usage. ``complete``: add every subcommand's options now (for
    what reads them all, such as the CLI reference page)."""
    p = argparse.ArgumentParser(
        prog="spin", description="sPIN-style network-offload emulator: handlers in emulated NICs "
        "and switches, real RoCEv2 frames, deterministic virtual time (ps).")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True,
                           parser_class=CommandParser)
    sub.add_parser("demo", help="ping-pong, reduce and allreduce, host baseline vs offload, "
                   "side by side",
                   description="Run ping-pong and an 8-host reduce, each host-based and "
                   "offloaded to NIC handlers, check the data and print completion time (µs), "
                   "host CPU time (µs), PCIe bytes (B), link bytes (B), HPU busy time (µs) and "
                   "speedup (x); then an allreduce, host ring against the registered "
                   "in-network algorithms (NIC ring; switch aggregation when registered).",
                   add_options=_demo_options)
    sub.add_parser("run", help="run a TOML scenario and print a summary",
                   description="Run a scenario file (schema: spin.scenario_file) and print "
                   "per-flow completion times (µs), bytes per link (B), DMA bytes (B), HPU busy "
                   "(µs), host CPU (µs) and drops by reason (frames).",
                   add_options=_run_options)
    sub.add_parser("topo", help="inventory and bisection bandwidth of topologies",
                   description="Build topologies from the registry and print hosts, switches, "
                   "ports, cables, capacity (Tb/s), bisection bandwidth (Tb/s, max-flow and "
                   "the builder's formula) and ports per Tb/s of bisection.",
                   add_options=_topo_options)
    sub.add_parser("allreduce", help="allreduce algorithms side by side (nccl-tests table)",
                   description="Run allreduce algorithms on a topology (default: a star of "
                   "HOSTS hosts) and print, per size and algorithm: time (µs), algbw and "
                   "busbw (GB/s, nccl-tests definitions), host CPU per rank (µs), link bytes "
                   "(B), speedup over ring (x) and whether every rank's result equals "
                   "numpy's. Exit 1 if one does not.",
                   add_options=_allreduce_options)
    sub.add_parser("train", help="replay a training step from a Chakra, PyTorch or GOAL trace",
                   description="Replay a training step on the fabric: TRACE is the prefix of a "
                   "Chakra trace set (files TRACE.<rank>.et, gzip allowed), of PyTorch "
                   "execution traces (files TRACE.<rank>.json as ExecutionTraceObserver writes "
                   "them, gzip allowed) or a GOAL schedule. Rank i runs on host i. Prints per rank the step time split into compute and "
                   "exposed communication (µs, virtual time) and per collective its time (µs) "
                   "and algorithm.",
                   add_options=_train_options)
    sub.add_parser("lb", help="load-balancing schemes side by side on one workload",
                   description="Run one workload once per load-balancing scheme on the same "
                   "fabric and print FCT mean/p50/p99/max (µs, virtual), flows delivered, "
                   "busiest link utilisation, imbalance (max/mean bytes over a tier's links),"
                   " drops, trims, ECN marks (frames), retransmissions, reorder degree, wall "
                   "time (s, compile excluded) and packet events/s, with the ideal "
                   "(serialisation plus base latency) as a reference row.",
                   add_options=_lb_options)
    sub.add_parser("keys", help="create the CurveZMQ key that authenticates workers of a run",
                   description="Write a CurveZMQ key pair (spin.key, spin.key_secret) into "
                   "DIRECTORY. A run that listens beyond loopback (spin run --bind, spin "
                   "worker --join) needs it on every machine: workers prove they hold the "
                   "secret, and frames between machines are encrypted. Keep spin.key_secret "
                   "private (it is written readable by its owner only). An existing pair is "
                   "kept (workers holding it would be locked out): --force replaces it.",
                   add_options=_keys_options)
    sub.add_parser("bench", help="engine performance figures (wall clock)",
                   description="Measure the handler call cost (ns/packet), engine speed "
                   "(packet events/s, events/s), engine compile time cold and cached (s), "
                   "the wall time of a cached `spin run` (s) and the edit loop: a new and an "
                   "edited handler run end to end with the engine cached (s). Figures only; "
                   "nothing asserts on wall-clock time.",
                   add_options=_bench_options)
    sub.add_parser("worker", help="join a multi-process run as a worker",
                   description="Join a coordinator as a worker process of a multi-process "
                   "(possibly multi-machine) run.",
                   add_options=_worker_options)
    if complete:
        for command in sub.choices.values():
            command.add_options()
    return p


def _demo_options(d: argparse.ArgumentParser) -> None:
    d.add_argument("--rounds", type=int, default=8, help="ping-pong rounds (default 8)")
    d.add_argument("--ping-bytes", type=int, default=512, help="ping size in bytes (default 512 B)")
    d.add_argument("--hosts", type=int, default=8,
                   help="hosts in the reduce, root included (default 8)")
    d.add_argument("--reduce-bytes", type=int, default=65536,
                   help="int32 vector size per host in bytes, <= 65536 (default 65536 B = 64 KiB)")
    d.add_argument("--allreduce-bytes", type=int, default=262144,
                   help="float32 vector size per host in the allreduce, in bytes (default "
                   "262144 B = 256 KiB)")
    d.add_argument("--json", metavar="FILE", help="write the structured results as JSON")
    d.add_argument("--quiet", action="store_true", help="print only the table")
    d.set_defaults(func=cmd_demo)


# spin.endpoint.MODES, spelled out: importing spin.endpoint starts ZeroMQ and Numba, which a run
# without endpoints does not need (tests/test_cli_parser.py checks that the two agree).
ENDPOINT_MODES = ("lockstep", "realtime")


def _run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("scenario", help="scenario file (.toml)")
    r.add_argument("--workers", type=int, metavar="N",
                   help="worker processes (overrides [workers] count; default 1)")
    r.add_argument("--pcap", metavar="DIR",
                   help="write captured links as DIR/link<i>_<a>-<b>.pcap (links from [capture], "
                   "all links if the file has no [capture])")
    r.add_argument("--json", metavar="FILE", help="write the RunResult as JSON (times in ps)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    r.add_argument("--digests", action="store_true",
                   help="put a SHA-256 of every host's memory in the result (skipped by "
                   "default: it reads every byte of every host)")
    r.add_argument("--debug", action="store_true",
                   help="run handlers as plain Python: print, pdb and tracebacks with the "
                   "failing line work; same results, microseconds per handler call")
    r.add_argument("--dump", action="append", metavar="HOST:ADDR:LEN:DTYPE=FILE.npy",
                   help="after the run, write LEN DTYPE elements of HOST's memory at ADDR "
                   "(bytes, 0x.. allowed) to FILE.npy; repeatable; HOST is a node id or name")
    r.add_argument("--trace", metavar="FILE",
                   help="write a Chrome trace-event JSON timeline in virtual time (open it in "
                   "ui.perfetto.dev): handler runs per HPU, DMA, host steps, messages")
    r.add_argument("--trace-links", action="store_true",
                   help="with --trace: also every frame's serialisation on every link")
    r.add_argument("--until-us", type=float, metavar="T",
                   help="stop at virtual time T microseconds (µs) instead of at completion")
    r.add_argument("--plots", metavar="DIR",
                   help="write PNG pictures to DIR: the CDF of flow completion times and link "
                   "utilisation over time per tier (needs matplotlib; samples links every 1 µs "
                   "unless [engine] queue_sample_ns is set)")
    r.set_defaults(func=cmd_run)

    r.add_argument("--remote-workers", type=int, default=0, metavar="K",
                   help="of the workers, K are started elsewhere with 'spin worker --join' "
                   "(needs --key-file, on loopback too: see docs/security.md)")
    r.add_argument("--bind", default=None, metavar="ADDR",
                   help="address the coordinator listens on (default 127.0.0.1; with --launcher "
                   "0.0.0.0, or the host file's first host; beyond loopback needs --key-file)")
    r.add_argument("--port", type=int, default=0, help="coordinator port (default: random)")
    r.add_argument("--key-file", metavar="F", help="CurveZMQ secret key file from 'spin keys'")
    r.add_argument("--silence-timeout-s", type=float, metavar="S",
                   help="with several workers: end the run when a worker sends no heartbeat for S "
                   "seconds (stopped, wedged or lost; default 15)")
    r.add_argument("--endpoint", action="append", metavar="HOST=tcp://ADDR:PORT",
                   help="serve HOST to an external program that attaches at that address "
                   "(spin.endpoint.Endpoint, or a scapy script); repeatable")
    r.add_argument("--launcher", choices=("slurm", "mpi", "hosts"),
                   help="run as one rank of a launched job (every rank runs the same command): "
                   "rank 0 coordinates, ranks 1..N-1 are the N-1 workers. slurm: srun -n N (rank, "
                   "size and job from SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_ID, SLURM_STEP_ID); "
                   "mpi: mpirun -n N (OMPI_COMM_WORLD_RANK/_SIZE, or PMI_RANK/PMI_SIZE); hosts: "
                   "this process is rank 0 and starts one worker per further line of --hosts "
                   "through --ssh. Needs --key-file (mode 0600, on a directory every rank "
                   "shares); see docs/tutorials/cluster.md")
    r.add_argument("--hosts", metavar="FILE",
                   help="with --launcher hosts: one host per line, in rank order; line 1 is this "
                   "machine (rank 0, the coordinator)")
    r.add_argument("--ssh", metavar="CMD",
                   help="with --launcher hosts: the command that runs a worker on a host, "
                   "{host} and {rank} filled in (default: ssh -o BatchMode=yes {host})")
    r.add_argument("--rendezvous-dir", metavar="DIR",
                   help="with --launcher slurm or mpi: the shared directory where rank 0 "
                   "publishes its address for the other ranks (default: the key file's)")
    r.add_argument("--job-id", metavar="ID",
                   help="with --launcher mpi: names this launch's rendezvous file when the "
                   "launcher exports no job id (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid); the "
                   "same on every rank, new for every launch")
    r.add_argument("--advertise", metavar="HOST",
                   help="with --launcher slurm or mpi: the name or address of rank 0's host the "
                   "workers join (default SLURMD_NODENAME under Slurm, the host name under "
                   "MPI); the workers' data sockets use the interface that routes to it")
    r.add_argument("--join-timeout-s", type=float, metavar="S",
                   help="with --launcher: how long the workers wait for rank 0 to listen and "
                   "accept them (default 300 s: rank 0 may compile the engine first), and rank "
                   "0 for every worker to join once it listens (default 60 s)")
    r.add_argument("--endpoint-mode", choices=ENDPOINT_MODES,
                   help="for --endpoint: lockstep (deterministic, the default) or realtime "
                   "(virtual time paced to the wall clock)")


def _topo_options(t: argparse.ArgumentParser) -> None:
    from .topologies import TOPOLOGIES
    t.add_argument("specs", nargs="*", metavar="NAME[:k=v,...]",
                   help=f"topology kind ({', '.join(TOPOLOGIES.names())}), optionally with "
                   "parameters; several are set side by side")
    t.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of the one topology named (repeatable), e.g. k=8")
    t.add_argument("--compare", action="store_true",
                   help="set a built-in selection of fat tree, leaf-spine, HammingMesh and "
                   "supernode at equal host counts side by side (or the topologies named): cost,"
                   " power, cost per Gb/s of bisection, and allreduce and all-to-all bandwidth "
                   "per host measured from short runs")
    t.add_argument("--compare-hosts", type=int, choices=(16, 128, 4096), default=128,
                   help="host count of the built-in selection (default 128; 16 runs in seconds, "
                   "4096 in about an hour with --measure-bytes 256KiB)")
    t.add_argument("--sensitivity", action="store_true",
                   help="with --compare: how far each price (switch port, NIC port, cables, "
                   "optics) must move to halve or double each topology's cost advantage per "
                   "GB/s of allreduce over the first one")
    t.add_argument("--measure-bytes", default="1MiB", metavar="S",
                   help="bytes per host of the measured runs (default 1MiB)")
    t.add_argument("--all-to-all-bytes", metavar="S",
                   help="bytes per host of the measured all-to-all (default: --measure-bytes; "
                   "from 1,024 hosts its payload is generated, not stored, so it can be larger)")
    t.add_argument("--no-measure", action="store_true",
                   help="--compare without the measured runs (cost and bisection only)")
    t.add_argument("--cost", metavar="FILE",
                   help="TOML file of CostModel fields overriding the default prices and powers")
    t.add_argument("--list", action="store_true", help="list kinds, parameters and valid ranges")
    t.add_argument("--json", metavar="FILE", help="write the inventories as JSON")
    t.set_defaults(func=cmd_topo)


def _allreduce_options(a: argparse.ArgumentParser) -> None:
    from .collectives import ALGORITHMS
    from .collectives.common import DTYPES
    from .config import HOST_PRESETS
    a.add_argument("--hosts", type=int, default=None,
                   help="ranks, one per host: the first HOSTS hosts of the topology (default 8 "
                   "on the star, every host on other topologies)")
    a.add_argument("--topology", default="star", metavar="NAME[:k=v,...]",
                   help="registered topology (spin topo --list), e.g. fat_tree:k=4, "
                   "leaf_spine:leaves=4,spines=2 or hamming_mesh; default star")
    a.add_argument("--loss", type=float, default=0.0, metavar="RATE",
                   help="drop this fraction of the frames on every link at random (e.g. 0.01) "
                   "and run each algorithm with its loss recovery: host algorithms over the RC "
                   "transport, the NIC ring with per-hop NACKs on a handler timer, switch "
                   "aggregation with its timeouts")
    a.add_argument("--loss-seed", type=int, default=1, metavar="N",
                   help="seed of the loss generators (default 1)")
    a.add_argument("--size", default="1MiB", metavar="S[,S...]",
                   help="bytes per rank, e.g. 4KiB,1MiB,64MiB (default 1MiB)")
    a.add_argument("--algo", default=None, metavar="A[,A...]",
                   help=f"algorithms of spin.collectives.ALGORITHMS: "
                   f"{', '.join(ALGORITHMS.names())}; an unknown name is skipped with a message "
                   "(default ring,rd,rabenseifner,nic, and switch when the topology has "
                   "switches)")
    a.add_argument("--dtype", default="float32", choices=tuple(DTYPES),
                   help="element type (default float32; bfloat16 is stored as uint16)")
    a.add_argument("--host-preset", default="cpu", choices=tuple(HOST_PRESETS),
                   help="host model: cpu (an MPI rank on a server core: 5 GB/s reduction, one "
                   "message per ring step; the default), gpu (reduction at HBM bandwidth, "
                   "ring steps pipelined in 512 KiB chunks as NCCL does) or network (gpu "
                   "without per-message host overheads: only the algorithm and the fabric set "
                   "the time)")
    a.add_argument("--workers", type=int, default=1, metavar="N",
                   help="worker processes (default 1; results are identical for any N)")
    a.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    a.add_argument("--plot", metavar="FILE", help="write a plot of time, algbw and bytes on the "
                   "wire per size (needs matplotlib: pip install 'spin-emulator[plots]')")
    a.set_defaults(func=cmd_allreduce)


def _train_options(t: argparse.ArgumentParser) -> None:
    from .training.cli import add_options
    add_options(t)


def _transport_kind(value: str) -> str:
    """``--transport``: a registered transport's name, or an import path that loads one."""
    from .errors import ConfigError
    from .transports import find_transport
    try:
        find_transport(value, "--transport")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--transport = {value!r}: "))
    return value


def _lb_options(lb: argparse.ArgumentParser) -> None:
    from typing import get_args

    from .config import TRANSPORTS, EngineConfig
    from .workloads import WORKLOADS
    mtus = get_args(EngineConfig.model_fields["mtu_bytes"].annotation)
    lb.add_argument("--topology", default="fat_tree:k=8", metavar="NAME[:k=v,...]",
                    help="topology and its parameters (default fat_tree:k=8, 128 hosts)")
    lb.add_argument("--workload", default="permutation", choices=WORKLOADS.names(),
                    metavar="KIND", help=f"workload kind: {', '.join(WORKLOADS.names())} "
                    "(default permutation)")
    lb.add_argument("--size", default="2MB", metavar="S",
                    help="message bytes per host (per destination for all_to_all), e.g. 2MB, "
                    "256KiB (default 2MB)")
    lb.add_argument("--param", action="append", metavar="NAME=VALUE",
                    help="another workload parameter (repeatable), e.g. iterations=2")
    lb.add_argument("--seed", type=int, default=0,
                    help="workload seed (the permutation drawn; default 0)")
    lb.add_argument("--schemes", metavar="S[,S...]",
                    help="schemes to compare (default: every scheme, in the order of --list); "
                    "a scheme of your own by import path, e.g. my_lb.two_choices")
    lb.add_argument("--list", action="store_true",
                    help="print every scheme (the switches' port-selection schemes of "
                    "switch_emulator.lb, then the senders', then those installed packages "
                    "publish as entry points of group spin.schemes) with a summary, and exit")
    lb.add_argument("--rate-gbps", type=int, default=100, help="link rate in Gb/s (default 100)")
    lb.add_argument("--mtu", type=int, default=4096, choices=mtus,
                    help="MTU in bytes (default 4096)")
    lb.add_argument("--transport", default="ue", type=_transport_kind, metavar="KIND",
                    help="the NICs' transport for every scheme: "
                    f"{', '.join(TRANSPORTS.names())}, or one of your own by import path "
                    "(package.module:TRANSPORT); "
                    f"{'; '.join(f'{t.name}: {t.summary}' for t in TRANSPORTS)} (default ue, "
                    "with trimming switches; none runs over lossless PFC switches)")
    lb.add_argument("--lossy", action="store_true",
                    help="no PFC, also with --transport none (lost frames are then not "
                    "recovered)")
    lb.add_argument("--workers", type=int, default=1, metavar="N",
                    help="worker processes per run (default 1; results are identical for any N)")
    lb.add_argument("--payload", default="generated", choices=("generated", "stored"),
                    help="generated (default): frames carry bytes generated from (host, "
                    "address) and hosts keep no memory, since load balancing never reads the "
                    "data; stored: every byte through host memory (the same results, more "
                    "memory and time)")
    lb.add_argument("--plots", metavar="DIR",
                    help="write fct_cdf.png and link_utilisation_<scheme>.png to DIR "
                    "(needs matplotlib)")
    lb.add_argument("--json", metavar="FILE", help="write the rows as JSON (times in ps; with "
                    "--preset: per scheme fct_us mean/p50/p99/max, completed, wall_s, run_s, "
                    "packet events)")
    lb.add_argument("--topo-file", metavar="T.topo",
                    help="an htsim topology file (tiered fat tree or leaf-spine) instead of "
                    "--topology; needs --cm and --preset")
    lb.add_argument("--cm", metavar="C.cm",
                    help="an htsim connection matrix (flows, starts, triggers) instead of "
                    "--workload; needs --topo-file and --preset")
    lb.add_argument("--preset", choices=("htsim",),
                    help="htsim: htsim main_uec's defaults for the --topo-file topology: base "
                    "RTT of the longest path (link latency both ways plus a data packet and a "
                    "64 B ACK per hop), queues of one BDP per switch port with trimming, ECN "
                    "RED-like between 20%% and 80%% of it at dequeue, Ultra-Ethernet-style "
                    "transport with NSCC (window 1.5 x BDP), an ACK per 16 KiB and per "
                    "ECN-marked packet, RTO from the measured RTT (at least 100 us), 64 EVs "
                    "per sprayed flow, header-only packets prioritised, MTU 4096 B payload, "
                    "no host or PCIe latency (it replaces --topology, --workload, --size, "
                    "--transport and --mtu); FCT to the sender's last ACK, as htsim; default "
                    "schemes ecmp,spray,reps")
    lb.add_argument("--switch-seeds", type=int, metavar="N",
                    help="with --preset: run every scheme once per switch seed 1..N (hash "
                    "salts, ECN and load-balancing draws; htsim's -seed) and report each FCT "
                    "figure's average and range over them; one run is one draw of which flows "
                    "ECMP hashes together")
    lb.set_defaults(func=cmd_lb)


def _keys_options(k: argparse.ArgumentParser) -> None:
    k.add_argument("directory", help="folder to write spin.key / spin.key_secret into")
    k.add_argument("--force", action="store_true",
                   help="replace a key pair already in DIRECTORY; workers holding the old key "
                        "can no longer join until they get the new one")
    k.set_defaults(func=cmd_keys)


def _bench_options(b: argparse.ArgumentParser) -> None:
    b.add_argument("--quick", action="store_true",
                   help="short measurements (~0.2 s each), skip the cold compile (about 75 s on a 2-core VM)")
    b.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    b.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    b.set_defaults(func=cmd_bench)


def _worker_options(w: argparse.ArgumentParser) -> None:
    w.add_argument("--join", required=True, metavar="tcp://HOST:PORT",
                   help="coordinator endpoint")
    w.add_argument("--key-file", metavar="F", help="the run's CurveZMQ secret key file")
    w.add_argument("--join-timeout-s", type=float, metavar="S",
                   help="give up joining after S seconds (default 120 s)")
    w.set_defaults(func=cmd_worker)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def _subcommand_parser(parser: argparse.ArgumentParser, command: str | None
                       ) -> argparse.ArgumentParser:
    """The parser of subcommand ``command`` (``parser`` itself when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command, parser)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, except that a mistyped command or option names the close match:
    ``spin alreduce`` says "did you mean 'allreduce'?", and an unknown option is reported by
    its subcommand (with that subcommand's usage) and with the closest option it has:
    ``spin allreduce --sizes 4KiB`` says "did you mean --size?" instead of printing the
    top-level usage."""
    from .suggest import close_match
    words = sys.argv[1:] if argv is None else list(argv)
    commands = [name for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                for name in a.choices]
    if commands and words and not words[0].startswith("-") and words[0] not in commands:
        match = close_match(words[0], commands)
        if match is not None:
            parser.error(f"unknown command {words[0]!r} (did you mean {match!r}?); commands: "
                         f"{', '.join(commands)}")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        sub = _subcommand_parser(parser, getattr(args, "command", None))
        options = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
        hints = []
        for word in unknown:
            match = close_match(word.split("=", 1)[0], options) if word.startswith("-") else None
            if match is not None:
                hints.append(f"{word.split('=', 1)[0]}: did you mean {match}?")
        sub.error(f"unrecognized arguments: {' '.join(unknown)}"
                  + (f" ({'; '.join(hints)})" if hints else ""))
    return args


def main(argv: list[str] | None = None) -> int:
    """The ``spin`` command. ``argv`` None: this process's command line, and the process is
    the command's (``spin``, ``python -m spin``), so it starts as one (``spin.startup``: the
    parser imports what the command runs) and ends here (``exit_now``)."""
    if argv is None:
        single_blas_thread()
        with imports_paused():
            args = parse_args(build_parser(), argv)
    else:
        args = parse_args(build_parser(), argv)
    status = _run_command(args)
    if argv is None:
        exit_now(status)
    return status


def exit_now(status: int | None) -> None:
    """End the process with ``status`` once its output is flushed and its exit handlers have
    run, without the interpreter's teardown: freeing every module and Numba's compiled code
    one object at a time takes 0.3-1 s after a run and changes nothing the user sees. Not
    while a (non-daemon) thread still runs, which the normal exit would wait for, or while a
    profiler or debugger is attached (they write or stop at the normal exit)."""
    import atexit
    import os
    import threading
    waited_for = [t for t in threading.enumerate()
                  if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if waited_for or sys.getprofile() is not None or sys.gettrace() is not None \
            or sys.flags.inspect:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: nothing more to say
            pass
    atexit._run_exitfuncs()
    os._exit(0 if status is None else int(status))


EXIT_BROKEN_PIPE = 141   # what a shell reports for a writer killed by SIGPIPE (128 + 13)


def _run_command(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):   # µs and names on an ASCII terminal: escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return args.func(args)
    except BrokenPipeError:   # the reader went away (`spin ... | head`): stop without a word
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
        return EXIT_BROKEN_PIPE
    except SpinError as exc:
        print(f"spin: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:   # an output that could not be written (a full disk, a lost folder)
        if exc.filename is None and exc.errno != errno.ENOSPC:
            raise
        print(f"spin: error: cannot write {exc.filename or 'the output'}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # only pydantic's (a config built from options), re-raised otherwise
        from pydantic import ValidationError

        from .config import config_error
        if not isinstance(exc, ValidationError):
            raise
        print(f"spin: error: {one_line(config_error(exc.title, exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("spin: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
