"""Run one workload once per load-balancing scheme on the same fabric and set the figures side by
side (``spin lb``, ``bench/bench_lb.py``).

The scenario and its host programs are built once; each scheme runs a copy with its switch and
NIC settings applied. Every scheme shares one compiled engine (schemes are data in the engine
state, not code), compiled before the first timed run, so wall times exclude compilation.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..config import EngineConfig, HostConfig, LinkConfig, NicConfig, SwitchConfig
from ..errors import ConfigError, HostMemoryError
from ..runtime.fabric import check_worker_count, compile_engine, run_scenario
from ..transports import find_transport
from ..units import parse_size
from ..results.report import table
from ..describe.limits import check_reordering, check_writable
from ..describe.scenario import Scenario
from ..topologies import build_topology
from ..units import US, ns
from ..workloads import build_workload
from ..workloads.metrics import flow_messages, workload_report
from .metrics import FabricFigures, fabric_figures, tier_loads
from .plots import DEFAULT_SAMPLE_NS, require_matplotlib, write_plots
from .schemes import (get_scheme, published_schemes, scheme_list, scheme_names, schemes,
                      with_scheme)


@dataclass
class SchemeRun:
    """One scheme's run of the workload."""

    scheme: str
    result: Any                     # RunResult
    report: Any                     # spin.workloads.metrics.WorkloadReport, None: no flow done
    figures: FabricFigures
    flows: int                      # flows of the workload
    completed: int                  # flows delivered
    wall_s: float                   # engine run, compile and scenario build excluded

    @property
    def packet_events_per_s(self) -> float:
        return self.result.packet_events / self.wall_s if self.wall_s > 0 else 0.0


def fabric_scenario(topology: str = "fat_tree", params: dict[str, Any] | None = None, *,
                    rate_gbps: int = 100, mtu_bytes: int = 4096, lossless: bool | None = None,
                    queue_sample_ns: float = 0.0, switch: dict[str, Any] | None = None,
                    transport: str = "none"):
    """An empty scenario on a registered topology, with engine tables sized for congested
    fabrics (every frame queued in a switch holds a buffer slot). ``transport``: the NICs'
    (``spin.config.TransportConfig.kind``); ``lossless`` (default: only without a transport,
    whose lost frames are never recovered): PFC on. With the Ultra-Ethernet-style transport the
    switches trim instead of dropping, as in htsim's Ultra Ethernet scenarios."""
    find_transport(transport)
    if lossless is None:
        lossless = transport == "none"
    nic = NicConfig.make(transport={"kind": transport})
    switch = {"pfc": lossless, **({"trim": True} if transport == "ue" and not lossless else {}),
              **(switch or {})}
    if not 0 < rate_gbps <= 1600:
        raise ConfigError(f"--rate-gbps {rate_gbps}: must be 1..1600 Gb/s")
    topo = build_topology(topology, **{"link": LinkConfig(rate_gbps=rate_gbps, latency_ns=500.0),
                                       **(params or {})})
    n = len(topo.hosts)
    engine = EngineConfig.for_fabric(n, mtu_bytes=mtu_bytes, queue_sample_ns=queue_sample_ns)
    return Scenario(topo, engine=engine, nic=nic, switch=SwitchConfig.make(**switch))


def add_workload(scenario, kind: str, **params: Any):
    """Build workload ``kind`` into ``scenario``, growing host memory to what it needs.

    It is built first on a copy of ``scenario`` without host programs, memory or marks, which
    says how much memory it needs. When ``scenario`` has none either, the copy is what a second
    build would make of it and is kept (the second build was half of the workload's set-up)."""
    probe = replace(scenario, host_programs={}, host_memory=[], mark_index={})
    try:
        workload = build_workload(probe, kind, **params)
    except HostMemoryError as exc:
        try:
            scenario.host = HostConfig.make(**{**scenario.host.model_dump(),
                                              "memory_bytes": exc.needed_bytes})
        except ConfigError:      # beyond what a host may have: the workload's size says why
            raise ConfigError(f"{exc}: no host may have that much memory (HostConfig."
                              f"memory_bytes); give the workload smaller messages") from None
    else:
        if not (scenario.host_programs or scenario.host_memory or scenario.mark_index):
            vars(scenario).update(vars(probe))
            return workload
    return build_workload(scenario, kind, **params)


def run_schemes(scenario, workload, schemes: list[str], workers: int = 1,
                progress: Callable[[str], None] | None = None) -> list[SchemeRun]:
    """Run ``scenario`` (with ``workload`` built into it) once per scheme."""
    for name in schemes:
        get_scheme(name, "--schemes")
        check_reordering(with_scheme(scenario, name))     # refuse before any scheme runs
    # the engine and handlers, compiled (or loaded) on a stand-in: building the fabric's
    # whole state for it doubled the set-up of large fabrics
    compile_engine(scenario, quiet=progress is None)
    runs = []
    for name in schemes:
        sc = with_scheme(scenario, name)
        result = run_scenario(sc, workers=workers, quiet=progress is None)   # a bar past 2 s
        done = len(flow_messages(workload, result))
        try:
            report = workload_report(workload, sc, result)
        except ConfigError:
            report = None
        runs.append(SchemeRun(name, result, report, fabric_figures(result), len(workload.flows),
                              done, float(result.wall.get("seconds", 0.0))))
        if progress is not None:
            progress(f"  {name}: {result.wall.get('seconds', 0.0):.3f} s")
    return runs


def _us(ps) -> str:
    return f"{ps / US:,.1f}"


def _opt(v) -> str:
    return "-" if v is None else f"{v:,}"


HEADERS = ["scheme", "FCT mean", "p50", "p99", "max", "done", "max util", "imbal", "drops",
           "trims", "ECN", "retx", "reorder", "wall (s)", "Mpkt ev/s"]


def comparison_rows(runs: list[SchemeRun]) -> list[list[str]]:
    rows = []
    for r in runs:
        f, fig = (r.report.fct if r.report else None), r.figures
        fct = [_us(f.mean_ps), _us(f.p50_ps), _us(f.p99_ps), _us(f.max_ps)] if f else ["-"] * 4
        rows.append([r.scheme, *fct, f"{r.completed}/{r.flows}", f"{fig.max_utilisation:.2f}",
                     f"{fig.imbalance:.2f}", f"{fig.drops:,}", f"{fig.trims:,}",
                     f"{fig.ecn_marks:,}", _opt(fig.retransmissions), _opt(fig.reorder_degree),
                     f"{r.wall_s:.3f}", f"{r.packet_events_per_s / 1e6:.2f}"])
    ideal = next((r.report.ideal_fct for r in runs if r.report), None)
    if ideal is not None:
        rows.append(["ideal", _us(ideal.mean_ps), _us(ideal.p50_ps), _us(ideal.p99_ps),
                     _us(ideal.max_ps)] + [""] * (len(HEADERS) - 5))
    return rows


def comparison_table(runs: list[SchemeRun], title: str = "") -> str:
    """The side-by-side table, FCT in µs (virtual time), with notes on incomplete runs."""
    out = table(HEADERS, comparison_rows(runs), title or None)
    notes = [("FCT: post to delivery, µs of virtual time; done: flows delivered; max util: "
              "busiest link direction (busy time / time to the last delivery); imbal: max/mean bytes over the links of "
              "the most uneven tier between switches; ideal: serialisation plus base latency of "
              "each flow"),
             ("retx, reorder: counted by the NIC transport ('-': none in this build); wall: "
              "engine run without compilation")]
    for r in runs:
        if r.completed < r.flows:
            why = ", ".join(f"{k} {v:,}" for k, v in r.result.drops.items()) or "none dropped"
            hint = (" (a per-packet scheme: packets that overtake their message's first packet "
                    "are not placed by a receiver without out-of-order placement)"
                    if get_scheme(r.scheme).per_packet else "")
            if r.result.unlogged:
                notes.append(f"{r.scheme}: {r.flows - r.completed} of {r.flows} flows not in the "
                             f"results: {r.result.unlogged_note()}")
                continue
            notes.append(f"{r.scheme}: {r.flows - r.completed} of {r.flows} flows not delivered;"
                         f" drops: {why}{hint}")
    return out + "\n\n" + "\n".join(notes)


def comparison_dict(runs: list[SchemeRun]) -> list[dict[str, Any]]:
    """JSON-ready rows (times in ps)."""
    return [{"scheme": r.scheme, "flows": r.flows, "completed": r.completed,
             "fct": asdict(r.report.fct) if r.report else None,
             "ideal_fct": asdict(r.report.ideal_fct) if r.report else None,
             "figures": asdict(r.figures), "tiers": [asdict(t) for t in tier_loads(r.result)],
             "drops": r.result.drops, "wall_s": r.wall_s,
             "packet_events": r.result.packet_events,
             "packet_events_per_s": r.packet_events_per_s} for r in runs]


# Packet events per data packet in the fabrics spin lb builds (each hop's enqueue, transmission
# and arrival, ACKs included): 17.8 on htsim's 1,024-host fat tree, 14-18 on its others
EVENTS_PER_PACKET = 16
ESTIMATE_RATE_PER_S = 2e6      # packet events per second of loop at thousands of hosts here


def _announce_long_runs(workload, mtu_bytes: int, schemes: int) -> None:
    """Say up front (stderr) when the runs will take minutes: an estimate from the workload's
    packets, so a 100 GB per host run is not minutes of silence."""
    packets = sum(-(-f.nbytes // mtu_bytes) for f in workload.flows)
    events = packets * EVENTS_PER_PACKET
    seconds = events / ESTIMATE_RATE_PER_S
    if seconds * schemes > 60:
        print(f"spin lb: about {packets:,} packets, {events / 1e6:,.0f} M packet events per "
              f"scheme: roughly {seconds / 60:,.0f} min of engine loop each at "
              f"{ESTIMATE_RATE_PER_S / 1e6:.0f} M packet events/s (an estimate; Ctrl-C stops)",
              file=sys.stderr, flush=True)


def run_lb_cli(args) -> int:
    """``spin lb``: build the fabric and workload, run every scheme, print the table."""
    if args.list:
        for s in schemes():
            print(f"{s.name:<14} {s.summary}")
        shipped = set(scheme_names())
        for name, where in published_schemes().items():    # installed packages' own schemes
            if name in shipped:
                print(f"{name:<14} (shadowed by the shipped scheme {name!r}: run it as "
                      f"--schemes {where}) [{where}]")
                continue
            try:
                summary = get_scheme(name, "entry point").summary
            except ConfigError as exc:
                summary = f"(does not load: {exc})"
            print(f"{name:<14} {summary} [{where}]")
        return 0
    names = scheme_list(args.schemes, scheme_names())
    if args.json:
        check_writable(args.json, "--json", directory=False)   # before running, not after
    if args.plots:
        require_matplotlib()                                    # fail before running, not after
        check_writable(args.plots, "--plots", directory=True)
    # the --topology and --param parsers (TOML values, the topologies' cost tables) serve this
    # command only, not an htsim run, which imports this module for add_workload
    from ..topologies.inventory_tables import parse_params, parse_spec
    topo_name, topo_params = parse_spec(args.topology)
    size = parse_size(args.size)
    plots_ns = 0.0
    if args.plots:
        plots_ns = DEFAULT_SAMPLE_NS
    lossless = False if args.lossy else (args.transport == "none")
    sc = fabric_scenario(topo_name, topo_params, rate_gbps=args.rate_gbps, mtu_bytes=args.mtu,
                         lossless=lossless, queue_sample_ns=plots_ns, transport=args.transport)
    extra = parse_params(args.param or [], "--param")
    for name, flag in (("message_bytes", "--size"), ("seed", "--seed"), ("payload", "--payload")):
        if name in extra:     # two ways of giving one value: the header would show the other
            raise ConfigError(f"--param {name}={extra[name]}: give it as {flag} instead")
    params = {"message_bytes": size, "seed": args.seed, "fill": False,
              "payload": getattr(args, "payload", "stored"), **extra}
    check_worker_count(args.workers, len(sc.topology.device_names()), "--workers")
    workload = add_workload(sc, args.workload, **params)
    n = len(sc.topology.hosts)
    title = (f"{args.workload} of {size:,} B per host on {topo_name} "
             f"({', '.join(f'{k}={v}' for k, v in topo_params.items()) or 'defaults'}): {n} hosts, "
             f"{args.rate_gbps} Gb/s, MTU {args.mtu} B, transport {args.transport}, "
             f"{'lossless (PFC)' if lossless else 'lossy' + (' (trimming)' if sc.switch.trim else '')}"
             f", {args.workers} worker{'s' if args.workers > 1 else ''}, payload {sc.payload}")
    print(title, flush=True)
    _announce_long_runs(workload, args.mtu, len(names))
    runs = run_schemes(sc, workload, names, args.workers, progress=print)
    print()
    print(comparison_table(runs))
    if args.plots:
        paths = write_plots(args.plots, {r.scheme: (r.result, [m.completion_ps for m in
                                                               flow_messages(workload, r.result)])
                                         for r in runs}, ns(plots_ns))
        print(f"\npictures in {args.plots}: {', '.join(p.name for p in paths)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"title": title, "runs": comparison_dict(runs)},
                                              indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0
