"""``spin topo --compare``: topologies priced, their collectives measured, set side by side, and
how much the cost advantage per GB/s of allreduce depends on each price (``--sensitivity``).
Measured runs at thousands of hosts take minutes each, so every run reports its progress."""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

from ..topologies.catalog import build_topology
from ..topologies.cost import CostModel, topology_cost
from ..topologies.inventory import topology_inventory
from ..topologies.inventory_tables import label
from ..topologies.sensitivity import sensitivity_table
from .fabric_bandwidth import allreduce_bound_gbytes_per_s, measure_fabric


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def compare_rows(specs: list[tuple[str, dict[str, Any]]], model: CostModel,
                 nbytes: int | None, progress: Callable[[str], None] | None = _stderr,
                 a2a_bytes: int | None = None) -> tuple[list[tuple], dict[str, float]]:
    """(rows of (title, inventory, cost, measured bandwidth or None), the allreduce's
    injection bound per host by title, GB/s); ``nbytes`` per host for the measured runs (None:
    cost and bounds only), ``a2a_bytes`` for the all-to-all if it differs."""
    rows, bounds = [], {}
    for name, params in specs:
        title = label(name, params)
        topo = build_topology(name, **params)
        inv = topology_inventory(topo)
        cost = topology_cost(topo, model, inv.bisection_gbps)
        bounds[title] = allreduce_bound_gbytes_per_s(topo, nbytes or 1 << 20)
        bw = None
        if nbytes is not None:
            start = time.perf_counter()
            if progress:
                progress(f"measuring {title} ({inv.hosts:,} hosts, {nbytes:,} B per host) ...")
            bw = measure_fabric(functools.partial(build_topology, name, **params), nbytes,
                                a2a_bytes)
            if progress:
                progress(f"  done in {time.perf_counter() - start:,.0f} s")
        rows.append((title, inv, cost, bw))
    return rows, bounds


def bound_advantages(rows, bounds: dict[str, float]) -> dict[str, float]:
    """Cost per GB/s of allreduce at the injection bound of the first row over that of each
    other row: how many times cheaper each delivers allreduce bandwidth."""
    def per(title, inv, cost) -> float:
        return cost.total_usd / (bounds[title] * inv.hosts)

    ref = per(*rows[0][:3])
    return {row[0]: ref / per(*row[:3]) for row in rows[1:]}


def sensitivity_section(rows, bounds: dict[str, float], model: CostModel) -> str:
    """The sensitivity table of every topology against the first one."""
    ref_title, _, ref_cost, _ = rows[0]
    named = [(title, cost) for title, _, cost, _ in rows[1:]]
    return sensitivity_table(ref_title, named, ref_cost, model, bound_advantages(rows, bounds))
