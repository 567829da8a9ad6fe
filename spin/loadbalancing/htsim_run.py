"""Run an htsim scenario (``.topo`` + ``.cm``) once per load-balancing scheme with htsim's
``main_uec`` defaults (``spin lb --topo-file T --cm C --preset htsim``), and report per scheme
what htsim prints: FCT mean, p50, p99 (nearest rank) and max, flows completed, plus the wall
times of the run and its packet-event count.

Each scheme's run is timed twice: ``wall_s`` is the engine loop alone; ``run_s`` covers the
scheme's setup (configs, engine state), the loop and building the results. The engine is
compiled (or loaded from the cache) before the first timed run, so neither includes it.

One run is one draw: which flows ECMP hashes onto the same link depends on the switches' hash
seeds (htsim draws a salt per switch from ``-seed``; spin derives them from
``SwitchConfig.ecmp_seed``), and ECMP's tail moves by a third between draws. ``switch_seeds``
repeats every scheme with the switches' seeds 1..N and reports each figure's average and range
over them (``SeedSummary``), the like-for-like comparison with htsim run with ``-seed`` 1..N.
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..runtime.fabric import check_worker_count, compile_engine, run_scenario
from ..describe.scenario import Scenario
from ..runtime.simulation import Simulation
from ..units import US
from ..describe.limits import check_frame_pool
from ..workloads import load_htsim_topo
from ..workloads.htsim_topo import htsim_host_count
from ..workloads.metrics import FctStats, flow_messages
from .compare import add_workload
from .htsim_preset import FCT_DEFINITION, HtsimPreset, engine_for, htsim_preset
from .schemes import get_scheme, scheme_list, with_scheme

PRESETS = ("htsim",)


@dataclass
class HtsimSchemeRun:
    """One scheme's run of an htsim scenario."""

    scheme: str
    fct: FctStats | None          # None: no flow completed
    flows: int
    completed: int
    wall_s: float                 # engine loop
    run_s: float                  # setup + loop + results
    events: int
    packet_events: int
    data_packets: int             # data frames the NICs sent, retransmissions included
    trims: int
    ecn_marks: int
    drops: dict[str, int]
    retransmissions: int
    timeouts: int
    acks_sent: int

    def as_dict(self) -> dict[str, Any]:
        us = lambda ps: round(ps / US, 3)
        f = self.fct
        return {"scheme": self.scheme,
                "fct_us": None if f is None else {"mean": us(f.mean_ps), "p50": us(f.p50_ps),
                                                  "p99": us(f.p99_ps), "max": us(f.max_ps)},
                "flows": self.flows, "completed": self.completed,
                "wall_s": round(self.wall_s, 4), "run_s": round(self.run_s, 4),
                "events": self.events, "packet_events": self.packet_events,
                "data_packets": self.data_packets,
                "packet_events_per_data_packet": (round(self.packet_events / self.data_packets, 2)
                                                  if self.data_packets else None),
                "trims": self.trims, "ecn_marks": self.ecn_marks, "drops": self.drops,
                "retransmissions": self.retransmissions, "timeouts": self.timeouts,
                "acks_sent": self.acks_sent}


@dataclass(frozen=True)
class SeedSummary:
    """A scheme's FCT figures over the switches' seeds 1..N: average, lowest and highest of each
    run's mean, p99 and max (µs)."""

    scheme: str
    seeds: int
    runs: tuple[HtsimSchemeRun, ...]

    def figure_us(self, name: str) -> list[float]:
        """Each seed's ``name`` (mean, p99 or max) in µs; runs where no flow completed are
        left out."""
        return [getattr(r.fct, f"{name}_ps") / US for r in self.runs if r.fct is not None]

    def average_us(self, name: str) -> float:
        return statistics.fmean(self.figure_us(name))

    def as_dict(self) -> dict[str, Any]:
        figs = {n: {"average": round(self.average_us(n), 3),
                    "min": round(min(self.figure_us(n)), 3),
                    "max": round(max(self.figure_us(n)), 3)} for n in ("mean", "p99", "max")}
        return {"scheme": self.scheme, "switch_seeds": list(range(1, self.seeds + 1)),
                "fct_us": figs, "completed": [r.completed for r in self.runs],
                "run_s": [round(r.run_s, 4) for r in self.runs]}


def with_switch_seed(sc: Scenario, seed: int) -> Scenario:
    """``sc`` with the switches' seed (hash salts, ECN and load-balancing draws) set to
    ``seed``."""
    return replace(sc, switch=sc.switch.make(**{**sc.switch.model_dump(), "ecmp_seed": seed}))


# Seeds one command may run: each is a whole run of the scenario (about a second at 128 hosts),
# so a million seeds would run for days without a useful result.
MAX_SWITCH_SEEDS = 1000


def check_seed_count(seeds: int) -> None:
    """One line for a seed count outside 1..MAX_SWITCH_SEEDS."""
    if not 1 <= seeds <= MAX_SWITCH_SEEDS:
        raise ConfigError(f"--switch-seeds {seeds}: must be 1..{MAX_SWITCH_SEEDS:,} (runs use "
                          f"seeds 1..N, one whole run each)")


def run_over_seeds(sc: Scenario, workload, name: str, seeds: int,
                   progress=None, workers: int = 1) -> SeedSummary:
    """Run scheme ``name`` once per switch seed 1..``seeds``."""
    check_seed_count(seeds)
    runs = []
    for seed in range(1, seeds + 1):
        runs.append(run_scheme(with_switch_seed(sc, seed), workload, name, workers=workers))
        if progress is not None:
            f = runs[-1].fct
            progress(f"  {name} seed {seed}: "
                     + ("no flow completed" if f is None else
                        f"FCT mean {f.mean_ps / US:.1f} p99 {f.p99_ps / US:.1f} "
                        f"max {f.max_ps / US:.1f} us"))
    return SeedSummary(name, seeds, tuple(runs))


def seeds_table(summaries: list[SeedSummary]) -> str:
    from ..results.report import table
    rows = []
    for s in summaries:
        cells = []
        for n in ("mean", "p99", "max"):
            v = s.figure_us(n)
            cells.append(f"{statistics.fmean(v):,.1f} [{min(v):,.0f}-{max(v):,.0f}]" if v
                         else "-")
        done = sum(r.completed for r in s.runs)
        flows = sum(r.flows for r in s.runs)
        rows.append([s.scheme, str(s.seeds), *cells, f"{done}/{flows}"])
    return table(["scheme", "seeds", "FCT mean (µs): average [range]", "p99", "max", "done"],
                 rows)


def htsim_scenario(topo_file: str | Path, cm_file: str | Path, preset: str = "htsim",
                   mtu_bytes: int = 4096, payload: str = "generated"):
    """The scenario of ``topo_file`` and ``cm_file`` under ``preset``: (scenario, workload,
    preset figures)."""
    if preset not in PRESETS:
        raise ConfigError(f"--preset {preset!r}: valid presets: {', '.join(PRESETS)}")
    n_hosts = htsim_host_count(topo_file)
    engine = engine_for(n_hosts, mtu_bytes)
    check_frame_pool(engine, f"{topo_file}: {n_hosts:,} hosts")
    topo = load_htsim_topo(topo_file)
    p = htsim_preset(topo, mtu_bytes)
    sc = Scenario(topo, engine=engine, nic=p.nic_config(),
                  switch=p.switch_config())
    sc.host = sc.host.make(**{**sc.host.model_dump(), "send_overhead_ns": 0.0,
                              "recv_overhead_ns": 0.0})    # htsim models no host software
    sc.nic = sc.nic.make(**{**sc.nic.model_dump(), "pcie_latency_ns": 0.0})   # nor PCIe
    workload = add_workload(sc, "htsim_cm", file=str(cm_file), fill=False, payload=payload)
    return sc, workload, p


def _fct_ps(m) -> int:
    """To the sender's last ACK, as htsim counts (the receiver's completion when the transport
    does not acknowledge)."""
    t = m.sender_completion_ps
    return m.completion_ps if t is None else t


def run_scheme(sc: Scenario, workload, name: str, quiet: bool = True,
               workers: int = 1) -> HtsimSchemeRun:
    """Run ``sc`` under scheme ``name`` on ``workers`` processes (1: in this one), timed
    (``quiet=False``: a progress bar over virtual time for runs longer than a couple of
    seconds)."""
    t0 = time.perf_counter()
    result = run_scenario(with_scheme(sc, name), workers=workers, quiet=quiet)
    run_s = time.perf_counter() - t0
    msgs = flow_messages(workload, result)
    fct = FctStats.of([_fct_ps(m) for m in msgs]) if msgs else None
    nic = lambda k: sum(getattr(n, k) or 0 for n in result.nics)
    hosts = set(sc.topology.hosts)      # a set: the list was searched once per link direction
    data_packets = sum(l.tx_frames for l in result.links if l.tier == "host"
                       and l.from_device in hosts) - nic("acks_sent") - nic("naks_sent")
    return HtsimSchemeRun(
        scheme=name, fct=fct, flows=len(workload.flows), completed=len(msgs),
        wall_s=float(result.wall.get("seconds", 0.0)), run_s=run_s, events=result.events,
        packet_events=result.packet_events, data_packets=data_packets,
        trims=sum(l.trims for l in result.links), ecn_marks=sum(l.ecn_marks for l in result.links),
        drops=dict(result.drops), retransmissions=nic("retransmissions"),
        timeouts=nic("timeouts"), acks_sent=nic("acks_sent"))


def run_htsim_schemes(topo_file, cm_file, schemes: list[str], preset: str = "htsim",
                      progress=None, built=None,
                      workers: int = 1) -> tuple[HtsimPreset, list[HtsimSchemeRun]]:
    """Run the scenario once per scheme (``built``: what ``htsim_scenario`` returned for these
    files, to skip building it again)."""
    for s in schemes:
        get_scheme(s, "--schemes")
    sc, workload, p = built or htsim_scenario(topo_file, cm_file, preset)
    compile_engine(sc, quiet=progress is None)   # not part of any timed run; on a stand-in,
                                                 # not the whole fabric's state
    runs = []
    for name in schemes:
        runs.append(run_scheme(sc, workload, name, quiet=progress is None, workers=workers))
        if progress is not None:
            r = runs[-1]
            progress(f"  {name}: loop {r.wall_s:.3f} s, run {r.run_s:.3f} s")
    return p, runs


def htsim_table(runs: list[HtsimSchemeRun]) -> str:
    from ..results.report import table
    rows = []
    for r in runs:
        f = r.fct
        fct = ([f"{f.mean_ps / US:,.1f}", f"{f.p50_ps / US:,.1f}", f"{f.p99_ps / US:,.1f}",
                f"{f.max_ps / US:,.1f}"] if f else ["-"] * 4)
        rows.append([r.scheme, *fct, f"{r.completed}/{r.flows}", f"{r.trims:,}",
                     f"{r.ecn_marks:,}", f"{r.retransmissions:,}", f"{r.timeouts:,}",
                     f"{r.acks_sent:,}", f"{r.packet_events:,}", f"{r.wall_s:.3f}",
                     f"{r.run_s:.3f}"])
    return table(["scheme", "FCT mean (µs)", "p50", "p99", "max", "done", "trims", "ECN",
                  "retx", "RTOs", "ACKs", "packet events", "loop (s)", "run (s)"], rows)


def run_preset_cli(args) -> int:
    """``spin lb --topo-file T --cm C --preset htsim``."""
    if not (args.topo_file and args.cm):
        raise ConfigError("--preset htsim runs an htsim scenario: give --topo-file T.topo and "
                          "--cm C.cm")
    names = scheme_list(args.schemes, ["ecmp", "spray", "reps"])
    if args.json:
        from ..describe.limits import check_writable
        check_writable(args.json, "--json", directory=False)
    for s in names:
        get_scheme(s, "--schemes")
    seeds = getattr(args, "switch_seeds", None)
    if seeds is not None:
        check_seed_count(seeds)
    built = htsim_scenario(args.topo_file, args.cm, args.preset,
                           payload=getattr(args, "payload", "generated"))
    sc, _, p = built
    workers = getattr(args, "workers", 1)
    check_worker_count(workers, len(sc.topology.device_names()), "--workers")
    print(f"{args.topo_file} + {args.cm}: {len(sc.topology.hosts)} hosts; {p.describe()}; "
          f"{workers} worker{'s' if workers > 1 else ''}", flush=True)
    if seeds is not None:
        return _seeds_cli(args, names, built, seeds, workers)
    p, runs = run_htsim_schemes(args.topo_file, args.cm, names, args.preset, progress=print,
                                built=built, workers=workers)
    print()
    print(htsim_table(runs))
    print(f"\n{FCT_DEFINITION}; µs of virtual time. loop: engine loop; run: setup + loop + "
          "results (wall clock, compile excluded)")
    _write_json(args, p, {r.scheme: r.as_dict() for r in runs})
    return 0


def _write_json(args, p: HtsimPreset, schemes: dict[str, Any]) -> None:
    """``--json``: the scenario, the preset's parameters and each scheme's figures."""
    if not args.json:
        return
    Path(args.json).write_text(json.dumps({
        "topo_file": str(args.topo_file), "cm": str(args.cm), "preset": args.preset,
        "fct_definition": FCT_DEFINITION, "percentiles": "nearest rank",
        "parameters": dict(p.__dict__), "schemes": schemes}, indent=2) + "\n")
    print(f"results written to {args.json}")


def _seeds_cli(args, names: list[str], built, seeds: int, workers: int = 1) -> int:
    """``--switch-seeds N``: every scheme once per switch seed 1..N, averages and ranges."""
    sc, workload, p = built
    Simulation(sc, quiet=True).compile()
    summaries = [run_over_seeds(sc, workload, name, seeds, progress=print, workers=workers)
                 for name in names]
    print()
    print(seeds_table(summaries))
    print(f"\n{FCT_DEFINITION}; µs of virtual time; each figure averaged over the switches' "
          f"seeds 1..{seeds} (as htsim run with -seed 1..{seeds}), its range in brackets")
    _write_json(args, p, {s.scheme: s.as_dict() for s in summaries})
    return 0


__all__ = [
    "PRESETS",
    "HtsimSchemeRun",
    "SeedSummary",
    "htsim_scenario",
    "htsim_table",
    "run_htsim_schemes",
    "run_preset_cli",
    "run_over_seeds",
    "run_scheme",
    "seeds_table",
    "with_switch_seed",
]
