"""How far each price must move to change a topology's cost advantage by a factor: the
sensitivity of a comparison such as "HammingMesh costs 10x less per GB/s of allreduce than a
fat tree" to the prices behind it, which are assumptions (``spin.topologies.cost``).

A topology's cost is a sum of parts, each a price times a count: switches (by port), NIC and
accelerator ports, copper cables, active optical cables, transceivers, fibre. Scaling one
price by f changes the reference's cost to C_r + (f-1) c_r and the other's to C + (f-1) c, so
the advantage A = (C_r / bw_r) / (C / bw) becomes A(f) = A(1) * (1 + (f-1) c_r/C_r) /
(1 + (f-1) c/C): the bandwidths cancel, and the f that gives A(f) = t A(1) solves a linear
equation. A factor that would need a price below zero, or no finite price, is reported as
unreachable; A tends to c_r/c * C/C_r (times A(1)'s bandwidth ratio) as the price grows.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .cost import Cost, CostModel

# part -> what scaling its price means (all switch prices scale together: per port)
PARTS: dict[str, str] = {
    "switch": "switch port (every radix class)",
    "nic_port": "NIC / accelerator network port",
    "dac": "copper cable (DAC)",
    "aoc": "active optical cable",
    "transceiver": "optical transceiver",
    "fibre": "fibre",
}
# groups scaled together
GROUPS: dict[str, tuple[str, ...]] = {
    "cables and optics": ("dac", "aoc", "transceiver", "fibre"),
    "optics (AOC, transceivers, fibre)": ("aoc", "transceiver", "fibre"),
}


def parts(cost: Cost, model: CostModel) -> dict[str, float]:
    """USD of each part of ``cost`` under ``model``'s prices (sums to ``cost.total_usd``
    when board traces are free, as by default)."""
    links = dict(cost.links_by_class)
    optical = links.get("optical", 0)
    return {"switch": cost.switches_usd, "nic_port": cost.nic_ports_usd,
            "dac": links.get("dac", 0) * model.dac_usd,
            "aoc": links.get("aoc", 0) * model.aoc_usd,
            "transceiver": 2 * optical * model.transceiver_usd,
            "fibre": optical * model.fibre_usd,
            "pcb": links.get("pcb", 0) * model.pcb_link_usd}


def factor_for(ref: dict[str, float], other: dict[str, float], names, target: float
               ) -> float | None:
    """The factor f on the prices of ``names`` that multiplies the advantage of ``other``
    over ``ref`` (ref cost / other cost) by ``target``; None if no f > 0 does."""
    C_r, C = sum(ref.values()), sum(other.values())
    c_r, c = sum(ref[k] for k in names), sum(other[k] for k in names)
    # (C_r + x c_r) / (C + x c) = target * C_r / C, with x = f - 1
    denom = c_r - target * C_r / C * c
    if denom == 0:
        return None
    f = 1 + C_r * (target - 1) / denom
    return f if f > 0 else None


def at_zero(ref: dict[str, float], other: dict[str, float], names) -> float | None:
    """A(0) / A(1): the advantage when the parts ``names`` cost nothing (None: the other
    topology would cost nothing, an unbounded advantage)."""
    C_r, C = sum(ref.values()), sum(other.values())
    c_r, c = sum(ref[k] for k in names), sum(other[k] for k in names)
    return None if C == c else ((C_r - c_r) / C_r) / ((C - c) / C)


def limit(ref: dict[str, float], other: dict[str, float], names) -> float | None:
    """A(f) / A(1) as the prices of ``names`` grow without bound (None: the other topology
    has none of these parts, so its advantage grows without bound)."""
    C_r, C = sum(ref.values()), sum(other.values())
    c_r, c = sum(ref[k] for k in names), sum(other[k] for k in names)
    return None if c == 0 else (c_r / c) / (C_r / C)


@dataclass(frozen=True)
class Sensitivity:
    """One price (or group) for one topology against the reference: its share of each cost,
    the factors on it that halve and double the advantage, and the advantage (relative to
    today's) when the price is zero and as it grows without bound."""

    part: str
    share_ref: float
    share_other: float
    halves_at: float | None
    doubles_at: float | None
    free: float | None
    limit: float | None


def sensitivity(ref: Cost, other: Cost, model: CostModel) -> list[Sensitivity]:
    """Every part and group of ``PARTS`` and ``GROUPS`` present in either topology."""
    r, o = parts(ref, model), parts(other, model)
    out = []
    rows = [(label, (key,)) for key, label in PARTS.items()] + list(GROUPS.items())
    for label, names in rows:
        share_r = sum(r[k] for k in names) / sum(r.values())
        share_o = sum(o[k] for k in names) / sum(o.values())
        if share_r == share_o == 0:
            continue
        out.append(Sensitivity(label, share_r, share_o, factor_for(r, o, names, 0.5),
                               factor_for(r, o, names, 2.0), at_zero(r, o, names),
                               limit(r, o, names)))
    return out


def _x(f: float | None) -> str:
    if f is None:
        return "never"
    return f"x{f:,.2f}" if f < 100 else f"x{f:,.0f}"


def sensitivity_table(ref_title: str, named: list[tuple[str, Cost]], ref: Cost,
                      model: CostModel, advantages: dict[str, float]) -> str:
    """For each topology of ``named`` against ``ref``: its cost advantage per GB/s of
    allreduce (``advantages``, by title), then per price the share it has of each cost and the
    factors on that price that halve or double the advantage."""
    heads = ["topology (advantage)", "price", "share of ref.", "share of its cost",
             "halves at", "doubles at", "if free", "limit"]
    body = []
    for title, cost in named:
        adv = advantages.get(title)
        head = f"{title} ({adv:,.2f}x)" if adv is not None else title

        def scaled(rel: float | None) -> str:
            if rel is None:
                return "unbounded"
            return f"{rel * adv:,.2f}x" if adv is not None else f"x{rel:,.2f}"

        for s in sensitivity(ref, cost, model):
            body.append([head, s.part, f"{s.share_ref:.0%}", f"{s.share_other:.0%}",
                         _x(s.halves_at), _x(s.doubles_at), scaled(s.free), scaled(s.limit)])
            head = ""
    widths = [max(len(h), *(len(r[c]) for r in body)) for c, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) if c < 2 else h.rjust(w)
                       for c, (h, w) in enumerate(zip(heads, widths)))]
    lines += ["  ".join(v.ljust(w) if c < 2 else v.rjust(w)
                        for c, (v, w) in enumerate(zip(r, widths))) for r in body]
    note = (f"advantage: cost per GB/s of allreduce (at the bound) of the reference, "
            f"{ref_title}, over that of the topology; share: of the reference's and of the "
            f"topology's cost; halves at / doubles at: the factor on that price (all other "
            f"prices as they are) at which the advantage is half / twice what it is; never: no "
            f"positive price does it; if free / limit: the advantage when that price is zero / "
            f"as it grows without bound")
    return "\n".join(lines) + "\n\n" + textwrap.fill(note, 100)
