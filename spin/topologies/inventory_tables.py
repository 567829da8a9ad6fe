"""Inventory tables for the ``spin topo`` command: one column per topology, every figure with
its unit, and parameter parsing for ``--param k=8``."""
from __future__ import annotations

import textwrap
import tomllib
from typing import Any

from ..errors import ConfigError
from .catalog import TOPOLOGIES
from .cost import Cost
from .inventory import MAX_FLOW_HOSTS, Inventory
from .declare import valid_range

# A side-by-side set of about 128 endpoints each, 400 Gb/s links (``spin topo --compare``).
COMPARE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fat_tree", {"k": 8}),
    ("leaf_spine", {"leaves": 8, "hosts_per_leaf": 16}),
    ("leaf_spine", {"leaves": 8, "hosts_per_leaf": 16, "oversubscription": 4}),
    ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 4, "cols": 8}),
    ("hamming_mesh", {"board_rows": 4, "board_cols": 4, "rows": 2, "cols": 4}),
    ("supernode", {"gpus": 64, "planes": 4, "supernodes": 2, "scale_out_gpus_per_leaf": 16}),
)
# The same families at 16 hosts: small enough for measured runs in seconds
# (``spin topo --compare --compare-hosts 16``).
COMPARE_16: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fat_tree", {"k": 4}),
    ("leaf_spine", {"leaves": 4, "hosts_per_leaf": 4}),
    ("leaf_spine", {"leaves": 4, "hosts_per_leaf": 4, "oversubscription": 4}),
    ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 2, "cols": 2}),
    ("supernode", {"gpus": 8, "planes": 4, "supernodes": 2, "scale_out_gpus_per_leaf": 4}),
)
# At the paper's scale, 4,096 accelerators, 64-port switches: the non-blocking three-tier fat
# tree (4 pods of 32 leaves and 32 spines, 2 superspines per plane), the rail-optimised one of
# the DGX SuperPOD reference architecture (512 servers of 8 GPUs, scalable units of 32, 4 per
# pod), and HammingMesh with 2 x 2 and 4 x 4 boards (each row and column network one switch).
# An entry whose kind this build lacks is left out (``available``), so a kind that lands later
# joins as it is.
COMPARE_4096: tuple[tuple[str, dict[str, Any]], ...] = (
    ("leaf_spine_superspine", {"pods": 4, "leaves_per_pod": 32, "hosts_per_leaf": 32,
                               "superspines_per_plane": 2}),
    ("rail_optimized", {"servers": 512, "gpus_per_server": 8, "servers_per_su": 32,
                        "sus_per_pod": 4, "cores_per_plane": 2}),
    ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 32, "cols": 32}),
    ("hamming_mesh", {"board_rows": 4, "board_cols": 4, "rows": 16, "cols": 16}),
)
COMPARE_SETS = {128: COMPARE, 16: COMPARE_16, 4096: COMPARE_4096}


def available(specs) -> tuple[list, list[str]]:
    """(the specs whose kind this build registers, the names of the kinds it lacks)."""
    have = [(name, params) for name, params in specs if name in TOPOLOGIES]
    return have, sorted({name for name, _ in specs if name not in TOPOLOGIES})


def parse_value(text: str) -> Any:
    """A parameter value as TOML would read it (``8``, ``2.5``, ``true``, ``[1, 2]``), else the
    text itself (``a``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_params(items: list[str], where: str = "--param") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{where} {item!r}: expected NAME=VALUE, e.g. k=8")
        if key.strip() in out:
            raise ConfigError(f"{where}: parameter {key.strip()!r} is given twice")
        out[key.strip()] = parse_value(value.strip())
    return out


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``fat_tree`` or ``fat_tree:k=8,oversubscription=2``."""
    name, _, rest = spec.partition(":")
    items = [p for p in rest.split(",") if p.strip()] if rest else []
    params = parse_params(items, where=spec)
    if name in TOPOLOGIES:
        TOPOLOGIES.get(name, "topology.kind").refuse_reserved(params)
    return name, params


def label(name: str, params: dict[str, Any]) -> str:
    return " ".join([name] + [f"{k}={v}" for k, v in params.items()])


def kinds_text() -> str:
    """Every registered builder with its parameters, defaults and valid ranges."""
    lines = []
    for spec in TOPOLOGIES:
        lines.append(f"{spec.name}: {spec.summary}")
        for field, info in spec.params.model_fields.items():
            default = "required" if info.is_required() else f"default {info.default!r}"
            lines.append(f"    {field:<26} {default:<18} valid: {valid_range(spec.params, field)}")
    return "\n".join(lines)


def _tb(gbps: float | None) -> str:
    return "-" if gbps is None else f"{gbps / 1000:,.1f} Tb/s"


def _figures(inv: Inventory) -> list[tuple[str, str]]:
    return [
        ("hosts", f"{inv.hosts:,}"),
        ("switches", f"{inv.switches:,}"),
        ("switch ports", f"{inv.switch_ports:,}"),
        ("accel. ports", f"{inv.accelerator_ports:,}"),
        ("cables", f"{inv.cables:,}"),
        ("capacity", _tb(inv.capacity_gbps)),
        ("bisection", _tb(inv.bisection_gbps) + ("*" if inv.bisection_method == "formula"
                                                  else "")),
        ("formula", _tb(inv.bisection_formula_gbps)),
        ("per host", f"{inv.bisection_per_host_gbps:,.1f} Gb/s"),
        ("ports per Tb/s", f"{inv.ports_per_tbps:,.1f}"),
    ]


NOTES = textwrap.fill(
    "bisection: max-flow between the first and the second half of the host ids; formula: "
    "the builder's analytic figure; per host: bisection / (hosts / 2); ports per Tb/s: "
    "switch and accelerator ports per Tb/s of bisection; cables: links other than a NIC's "
    "internal link to its accelerator router", 100)


def inventory_table(named: list[tuple[str, Inventory]]) -> str:
    """One topology: a column of figures with its switches by role and links by tier. Several:
    one row each, side by side."""
    if len(named) == 1:
        title, inv = named[0]
        rows = [("topology", title)] + _figures(inv)
        rows += [(f"switches: {role}", f"{n:,}") for role, n in inv.switches_by_role]
        rows += [(f"links: {kind} at {rate} Gb/s", f"{n:,}")
                 for rate, kind, n in inv.links_by_rate_kind]
        w0 = max(len(k) for k, _ in rows)
        w1 = max(len(v) for _, v in rows)
        return ("\n".join(f"{k.ljust(w0)}  {v.rjust(w1)}" for k, v in rows) + "\n\n" + NOTES
                + _formula_note(named))
    heads = ["topology"] + [k for k, _ in _figures(named[0][1])]
    body = [[title] + [v for _, v in _figures(inv)] for title, inv in named]
    widths = [max(len(h), *(len(r[c]) for r in body)) for c, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) if c == 0 else h.rjust(w)
                       for c, (h, w) in enumerate(zip(heads, widths)))]
    for r in body:
        lines.append("  ".join(v.ljust(w) if c == 0 else v.rjust(w)
                               for c, (v, w) in enumerate(zip(r, widths))))
    return "\n".join(lines) + "\n\n" + NOTES + _formula_note(named)


def _formula_note(named: list[tuple[str, Inventory]]) -> str:
    if not any(inv.bisection_method == "formula" for _, inv in named):
        return ""
    return ("\n* the builder's formula: max-flow is not computed above "
            f"{MAX_FLOW_HOSTS:,} hosts (it would take minutes to hours)")


def _money(usd: float) -> str:
    return f"${usd / 1e3:,.0f}k" if usd < 1e6 else f"${usd / 1e6:,.2f}M"


COMPARE_NOTES = textwrap.fill(
    "cost: switches (priced by radix class), NIC ports and links by cable class "
    "(spin.topologies.cost.CostModel; list-price-class assumptions, configurable with --cost); "
    "$/Gb/s bis.: cost per Gb/s of bisection; allreduce and all-to-all: measured per host in "
    "virtual time (NIC-offloaded two-dimensional rings, four streams over a HammingMesh "
    "accelerator's four ports, one elsewhere; all-to-all over the Ultra-Ethernet-style "
    "transport with trimming, S/(n-1) per pair, or S/64 to 64 random offsets from 1,024 hosts "
    "on), GB/s; AR bound: the allreduce's injection bound 2(n-1)/n S over every port of a "
    "host; $/(GB/s) AR: cost per GB/s of allreduce bandwidth summed over the hosts, measured "
    "and at the bound", 100)


def link_rates(inv: Inventory) -> str:
    """The link rates of a topology, the commonest first, the others with their kinds:
    ``400 Gb/s`` or ``400 Gb/s (internal 1600)``."""
    count: dict[int, int] = {}
    kinds: dict[int, list[str]] = {}
    for rate, kind, n in inv.links_by_rate_kind:
        count[rate] = count.get(rate, 0) + n
        kinds.setdefault(rate, []).append(kind)
    main, *others = sorted(count, key=lambda r: (-count[r], r))
    rest = ", ".join(f"{'/'.join(kinds[r])} {r}" for r in others)
    return f"{main} Gb/s" + (f" ({rest})" if rest else "")


def measured_basis(rows: list[tuple[str, Inventory, Cost, Any]]) -> str | None:
    """What the measured columns rest on: bytes per host of each run, the algorithm, the NICs
    and the host preset (None when nothing was measured)."""
    measured = [bw for _, _, _, bw in rows if bw is not None]
    if not measured:
        return None

    def one(values: list) -> str:
        return " or ".join(dict.fromkeys(values))

    return (f"measured per host: allreduce of "
            f"{one([f'{bw.nbytes:,} B' for bw in measured])} "
            f"({one([bw.allreduce_algorithm for bw in measured])}, int32, accelerator NICs), "
            f"all-to-all of {one([f'{bw.all_to_all_bytes:,} B' for bw in measured])} "
            f"(to {one([f'{bw.all_to_all_peers:,}' for bw in measured])} peers); host preset "
            f"{one([bw.host_preset for bw in measured])}; link rates in the table")


def compare_table(rows: list[tuple[str, Inventory, Cost, Any]],
                  bounds: dict[str, float] | None = None) -> str:
    """Topologies side by side with their link rates, cost and, where measured (the fourth
    item, a ``FabricBandwidth`` or None), their allreduce and all-to-all bandwidth per host; the
    allreduce's bound (``bounds`` by title, else the measured run's) and the cost per GB/s
    of allreduce, measured and at the bound. A line above says what was measured."""
    heads = ["topology", "hosts", "links", "bisection", "cost", "power", "$/Gb/s bis.",
             "allreduce", "AR bound", "all-to-all", "$/(GB/s) AR", "at bound"]
    body = []
    for title, inv, cost, bw in rows:
        bound = (bounds or {}).get(title, bw.allreduce_bound_gbytes_per_s if bw else None)

        def per(gbps: float | None) -> str:
            return "-" if not gbps else f"{cost.total_usd / (gbps * inv.hosts):,.0f}"

        measured = bw.allreduce_gbytes_per_s if bw is not None else None
        body.append([title, f"{inv.hosts:,}", link_rates(inv), _tb(inv.bisection_gbps),
                     _money(cost.total_usd),
                     f"{cost.watts / 1e3:,.1f} kW", f"{cost.usd_per_bisection_gbps:,.1f}",
                     "-" if bw is None else f"{measured:,.2f} GB/s",
                     "-" if bound is None else f"{bound:,.1f} GB/s",
                     "-" if bw is None else f"{bw.all_to_all_gbytes_per_s:,.2f} GB/s",
                     per(measured), per(bound)])
    widths = [max(len(h), *(len(r[c]) for r in body)) for c, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) if c == 0 else h.rjust(w)
                       for c, (h, w) in enumerate(zip(heads, widths)))]
    for r in body:
        lines.append("  ".join(v.ljust(w) if c == 0 else v.rjust(w)
                               for c, (v, w) in enumerate(zip(r, widths))))
    basis = measured_basis(rows)
    return ((basis + "\n" if basis else "") + "\n".join(lines) + "\n\n" + COMPARE_NOTES)
