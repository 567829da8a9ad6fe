"""In-switch allreduce on a HammingMesh the way the HammingMesh paper (Hoefler et al., SC22)
reduces: along every row network, then along every column network.

Phase 1 runs one SwitchML job per accelerator row, aggregated in that row's network switches
(one switch, or the fat tree of them) and never in the accelerators' routers, which only relay:
the trees are built over the network switches (``switch_tree.aggregation_tree`` with
``aggregators``). Every accelerator then holds its row's sum, in place. Phase 2 runs one job
per accelerator column over its column network on those sums, so every accelerator ends with
the total. The jobs of a phase run at once and share the switches' memory (their job numbers
select disjoint slot ranges). With ``share_networks`` one network joins several accelerator
rows; each row's job still has its own tree, inside the shared network.

Schemes (``build(..., scheme=...)`` of ``spin.collectives.switch``):

* ``row-column``: the whole vector goes rows then columns. In each phase one of an
  accelerator's two networks carries the whole vector (S up and S down its network port) while
  the other idles: 2 S/B for link payload rate B.
* ``row-column-split`` (what ``auto`` picks on a HammingMesh): half A goes rows then columns
  while half B goes columns then rows, so both networks carry half a vector in each phase:
  S/B on the network ports, as one switch joining every rank. In both schemes the NIC reads
  the whole vector from host memory and writes it back in each phase (phase 2 reads phase 1's
  result), 2 S per direction over PCIe: 2 S/B_pcie bounds the split (25 GB/s at the default
  50 GB/s).
* ``tree``: one tree for all ranks over every switch, accelerators' routers included: S/B and
  one PCIe pass, but a deep tree needs a deep window (``bench/bench_hamming_allreduce.py``).

``auto`` picks ``row-column-split`` when the topology is a HammingMesh (``topology.kind``) of at
least 2 x 2 boards (a row network joining a single board would lose to the board mesh's
shorter routes) with every host a rank and native sums, and ``tree`` otherwise.
"""
from __future__ import annotations

from ..errors import ConfigError, TopologyError
from ..wire import switchml as SW
from .switch_tree import aggregation_tree, attachment
from .switchml_jobs import SwitchMLJob, install_jobs

SCHEMES = ("auto", "tree", "row-column", "row-column-split")
MAX_JOB = 255


def row_column_possible(topo, hosts, quantized: bool) -> str:
    """Why the row/column scheme cannot run ('' if it can)."""
    if topo.kind != "hamming_mesh":
        return f"the topology is {topo.kind!r}, not a HammingMesh"
    if topo.params.get("rows", 1) < 2 or topo.params.get("cols", 1) < 2:
        return "it needs at least 2 x 2 boards (rows, cols >= 2)"
    if sorted(hosts) != list(range(len(topo.hosts))):
        return "every host must be a rank"
    if quantized:
        return "quantized mode runs on one tree"
    return _switch_limits(topo, hosts)


def _switch_limits(topo, hosts) -> str:
    """Why the lines' trees would not fit the switch program's tables ('' if they do): at
    most MAX_CHILDREN children per switch and job, MAX_JOBS jobs per switch (two per line it
    serves, one per half of the split)."""
    from handlers.switchml import MAX_CHILDREN, MAX_JOBS   # spin -> handlers: at run time only
    lines = accelerator_lines(topo, hosts)
    equal_cost = topo.equal_cost_ports()
    jobs: dict[str, int] = {}
    for kind, line in [(kind, line) for kind in ("row", "column") for line in lines[kind]]:
        try:
            _root, nodes = aggregation_tree(topo, line, equal_cost,
                                            network_switches(topo, kind))
        except TopologyError as exc:
            return str(exc)
        for s, node in nodes.items():
            if len(node.children) > MAX_CHILDREN:
                return (f"{s} would take {len(node.children)} children of one job, more than "
                        f"the switch program's {MAX_CHILDREN}")
            jobs[s] = jobs.get(s, 0) + 2
    busy = max(jobs, key=jobs.get)
    if jobs[busy] > MAX_JOBS:
        return (f"{busy} would hold {jobs[busy]} jobs (two per line it joins), more than the "
                f"switch program's {MAX_JOBS}")
    return ""


def resolve_scheme(topo, scheme: str, hosts, quantized: bool) -> str:
    """The scheme to run: ``auto`` resolved, an impossible explicit choice refused by name."""
    if scheme not in SCHEMES:
        raise ConfigError(f"switch allreduce scheme={scheme!r}; valid choices: "
                          f"{', '.join(SCHEMES)}")
    why = row_column_possible(topo, hosts, quantized) if scheme != "tree" else ""
    if scheme == "auto":
        return "tree" if why else "row-column-split"
    if why:
        raise ConfigError(f"switch allreduce scheme={scheme!r}: {why}")
    return scheme


def accelerator_lines(topo, hosts) -> dict[str, list[tuple[int, ...]]]:
    """Host ids per accelerator row and per accelerator column, from the routers' names
    ``a<R>.<C>.<i>.<j>`` (board row and column, position on the board): row (R, i),
    column (C, j)."""
    rows: dict[tuple[int, int], list[int]] = {}
    cols: dict[tuple[int, int], list[int]] = {}
    for h, (router, _port) in sorted(attachment(topo, hosts).items()):
        R, C, i, j = (int(x) for x in router[1:].split("."))
        rows.setdefault((R, i), []).append(h)
        cols.setdefault((C, j), []).append(h)
    return {"row": [tuple(rows[key]) for key in sorted(rows)],
            "column": [tuple(cols[key]) for key in sorted(cols)]}


def network_switches(topo, kind: str) -> tuple[str, ...]:
    """The switches a ``kind`` ("row" or "column") job aggregates in: its kind of network's
    (roles ``row-switch``, ``row-leaf``, ``row-spine``, ...), never an accelerator's router.
    A route may still cross the other kind's network (with ``share_networks`` a column's
    accelerators on one board reach each other through the shared row network): it relays."""
    return tuple(s for s in topo.switches if topo.roles[s].startswith(f"{kind}-"))


def add_row_column_steps(sc, progs, hosts, count: int, addr: int, kick: int, op: int,
                         window: int, job: int, split: bool, opts: dict):
    """Install the two phases' jobs (numbers from ``job`` on) and add each rank's steps: post
    its phase-1 jobs, wait for them, post its phase-2 jobs, wait. Returns the setup."""
    lines = accelerator_lines(sc.topology, hosts)
    first = (count + 1) // 2 if split else count
    halves = [(addr, first, ("row", "column"))]
    if split and count > first:
        halves.append((addr + SW.element_bytes(op) * first, count - first, ("column", "row")))
    phases: list[list[SwitchMLJob]] = [[], []]
    number = job
    for at, n, order in halves:
        for phase, kind in enumerate(order):
            for line in lines[kind]:
                phases[phase].append(SwitchMLJob(number, line, n, at, kick, op, window,
                                                 network_switches(sc.topology, kind)))
                number += 1
    if job < 0 or number - 1 > MAX_JOB:
        raise ConfigError(f"switch allreduce job={job}: the row/column scheme numbers "
                          f"{number - job} jobs from it, past SwitchML's {MAX_JOB}")
    setup = install_jobs(sc, phases[0] + phases[1], **opts)
    for p in progs:
        for phase in phases:
            mine = [spec for spec in phase if p.node in spec.hosts]
            for spec in mine:
                setup.post(p, spec)
            p.wait_event(len(mine))
    return setup
