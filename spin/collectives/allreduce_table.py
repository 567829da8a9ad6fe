"""``spin allreduce``: sizes parsed as people write them, and the nccl-tests-style table (one
row per size and algorithm, speedup and bytes on the wire relative to ring at the same size)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..config import HostConfig, LinkConfig
from ..errors import ConfigError
from ..units import parse_size  # noqa: F401  (re-exported: the CLI and benchmarks import it here)
from ..runtime.fabric import check_worker_count
from ..handler import same_program
from ..results.report import count, table, us
from ..describe.limits import check_writable
from ..topologies import build_topology
from ..topologies.inventory_tables import label, parse_spec
from . import ALGORITHMS, algorithm
from .measure import measure, with_speedup
from .plot import plot_allreduce, require_matplotlib

HEADERS = ("size (B)", "algorithm", "dtype", "time (µs)", "algbw (GB/s)", "busbw (GB/s)",
           "host CPU/rank (µs)", "link bytes (B)", "wire vs ring", "speedup vs ring", "correct")


def allreduce_table(rows: list[dict], hosts: int, topology: str) -> str:
    """Rows from ``measure.with_speedup``."""
    def cell(r: dict) -> list:
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        wire = r.get("wire_vs_baseline")
        return [count(r["nbytes"]), r["algorithm"], r["dtype"], us(r["time_ps"]),
                f"{r['algbw_gbytes_per_s']:.3f}", f"{r['busbw_gbytes_per_s']:.3f}",
                us(r["host_cpu_ps_per_rank"]), count(r["link_bytes"]),
                "-" if wire is None else f"{wire:.3f}", speed, "yes" if r["correct"] else "NO"]
    title = (f"allreduce on {hosts} hosts ({topology}), virtual time; algbw = S/t, busbw = "
             f"algbw x 2(n-1)/n (nccl-tests), S = bytes per rank")
    return table(HEADERS, [cell(r) for r in rows], title)


def selected_algorithms(spec: str, dtype: str) -> list:
    """The registered algorithms named in ``spec`` (comma-separated), in order. A name nobody
    registered (e.g. an in-network variant not installed in this build) or one that does not
    take ``dtype`` is skipped with a line on stderr; none left is an error."""
    chosen = []
    for name in (a.strip() for a in spec.split(",")):
        if not name:
            continue
        try:
            alg = algorithm(name)
        except ConfigError:
            print(f"spin allreduce: skipping {name!r}: no such algorithm is registered "
                  f"(registered: {', '.join(ALGORITHMS.names())})", file=sys.stderr)
            continue
        if dtype not in alg.dtypes:
            print(f"spin allreduce: skipping {alg.name!r}: it takes dtype "
                  f"{', '.join(alg.dtypes)}, not {dtype}", file=sys.stderr)
            continue
        if alg not in chosen:
            chosen.append(alg)
    if not chosen:
        raise ConfigError(f"--algo {spec!r}: no registered algorithm to run for dtype {dtype}; "
                          f"registered: {', '.join(ALGORITHMS.names())}")
    return chosen


# what ``spin allreduce`` runs without --algo: the host baselines and the NIC ring everywhere,
# and switch aggregation wherever the topology has switches to aggregate in
DEFAULT_ALGORITHMS = ("ring", "rd", "rabenseifner", "nic")
SWITCH_ALGORITHM = "switch"


def default_algorithms(topo, dtype: str) -> str:
    """The ``--algo`` value used when none is given, for ``topo`` and ``dtype``: switch
    aggregation joins the host and NIC algorithms when the topology has a switch and the
    switch adds ``dtype`` (a pair of hosts has no switch to aggregate in)."""
    names = list(DEFAULT_ALGORITHMS)
    if topo.switches and SWITCH_ALGORITHM in ALGORITHMS \
            and dtype in algorithm(SWITCH_ALGORITHM).dtypes:
        names.append(SWITCH_ALGORITHM)
    return ",".join(names)


def shared_programs(algs) -> list:
    """Handler programs of every algorithm that declares them: their runs share one engine."""
    out: list = []
    for alg in algs:
        for p in (alg.programs() if alg.programs is not None else []):
            if not any(same_program(p, q) for q in out):
                out.append(p)
    return out


def allreduce_topology(args):
    """(topology, its description for the table title) from ``--topology``, ``--hosts`` and
    ``--loss``: a star is built for HOSTS hosts; lossy links get ``LinkConfig.loss_rate``."""
    if not 0 <= args.loss < 1:
        raise ConfigError(f"--loss {args.loss}: a fraction of frames in [0, 1)")
    if not 0 <= args.loss_seed < 2**32:
        raise ConfigError(f"--loss-seed {args.loss_seed}: must be 0..{2**32 - 1}")
    if args.hosts is not None and args.hosts < 2:
        raise ConfigError(f"--hosts {args.hosts}: an allreduce needs at least 2 hosts")
    name, params = parse_spec(args.topology)
    if name == "star":
        params.setdefault("hosts", args.hosts if args.hosts is not None else 8)
    link = LinkConfig(loss_rate=args.loss, loss_seed=args.loss_seed) if args.loss else None
    topo = build_topology(name, link=link, **params)
    where = label(name, params) + (f", {args.loss:g} of frames lost" if args.loss else "")
    return topo, where


def run_allreduce_cli(args) -> int:
    """Run every (size, algorithm) of ``args``, print the table (and plot it with ``--plot``);
    1 if any result is wrong."""
    topo, where = allreduce_topology(args)
    hosts = args.hosts if args.hosts is not None else len(topo.hosts)
    if not 2 <= hosts <= len(topo.hosts):
        raise ConfigError(f"--hosts {hosts}: an allreduce needs 2..{len(topo.hosts)} hosts on "
                          f"{where}")
    check_worker_count(args.workers, len(topo.device_names()), "--workers")
    if args.algo is not None and not args.algo.replace(",", "").strip():
        raise ConfigError(f"--algo {args.algo!r} names no algorithm; valid: "
                          f"{', '.join(ALGORITHMS.names())} (default: "
                          f"{default_algorithms(topo, args.dtype)})")
    algs = selected_algorithms(args.algo or default_algorithms(topo, args.dtype), args.dtype)
    sizes = [parse_size(s) for s in args.size.split(",") if s.strip()]
    if not sizes:
        raise ConfigError(f"--size {args.size!r} names no size; e.g. --size 64KiB,1MiB")
    plot = getattr(args, "plot", None)
    if args.json:   # written after the runs: fail now, not then
        check_writable(args.json, "--json", directory=False)
    if plot:
        require_matplotlib()
        check_writable(plot, "--plot", directory=False)
    programs = shared_programs(algs)
    results = []
    for nbytes in sizes:
        for alg in algs:
            extra = {"engine_programs": programs} if alg.programs is not None else {}
            host = HostConfig.preset(getattr(args, "host_preset", "cpu"))
            try:
                results.append(measure(alg.name, hosts, nbytes, args.dtype, workers=args.workers,
                                       topology=topo, recover_loss=args.loss > 0, host=host,
                                       quiet=False, **extra))   # compile lines and bars
            except ConfigError as exc:   # keep what was measured; name what was refused
                if results:
                    print(allreduce_table(with_speedup(results), hosts, where))
                raise ConfigError(f"--algo {alg.name} at --size {nbytes:,} B: {exc}") from None
    rows = with_speedup(results)
    print(allreduce_table(rows, hosts, where))
    if plot:
        plot_allreduce(rows, plot, f"allreduce on {hosts} hosts ({args.dtype}, {where})")
        print(f"\nplot written to {plot}")
    if args.json:
        p = Path(args.json)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rows, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    return 0 if all(r["correct"] for r in rows) else 1
