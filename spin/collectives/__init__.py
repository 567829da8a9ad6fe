"""Allreduce on the emulated fabric: builders that add host programs (or, for in-network
variants, handlers) to a ``Scenario``, a registry of them by name, and ``measure``, which runs
one on a topology and reports time, algbw/busbw, host CPU, bytes on the wire and correctness.

Host baselines: ``ring``, ``rd`` (recursive doubling), ``rabenseifner``; in-network:
``switch`` (SwitchML-style aggregation in the switches, ``spin.collectives.switch``). Another
variant joins the table with ``register(Algorithm(...))``: a builder ``build(scenario, count,
dtype, *, hosts, inputs, qp) -> AllreducePlan`` and the host memory its layout needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from ..errors import ConfigError
from . import rabenseifner, recursive_doubling, ring, switch
from .common import DTYPES, AllreducePlan

__all__ = ["ALGORITHMS", "DTYPES", "Algorithm", "AllreducePlan", "algorithm", "register"]


@dataclass(frozen=True)
class Algorithm:
    """A registered allreduce: its table name, a title, its builder and its memory need."""

    name: str
    title: str
    build: Callable[..., AllreducePlan]
    plan_memory: Callable[[int, int, str], int]     # (n, count, dtype) -> host bytes needed


ALGORITHMS: dict[str, Algorithm] = {}
ALIASES = {"recursive_doubling": "rd", "rab": "rabenseifner"}


def register(alg: Algorithm) -> Algorithm:
    """Add (or replace) an algorithm under ``alg.name``; the CLI and ``measure`` find it."""
    ALGORITHMS[alg.name] = alg
    return alg


def algorithm(name: str) -> Algorithm:
    """The registered algorithm ``name`` (or an alias of one)."""
    key = ALIASES.get(name, name)
    if key not in ALGORITHMS:
        raise ConfigError(f"allreduce algorithm={name!r}; valid choices: "
                          f"{', '.join(ALGORITHMS)} (aliases: {', '.join(ALIASES)})")
    return ALGORITHMS[key]


register(Algorithm("ring", "ring (reduce-scatter + allgather)", ring.build, ring.plan_memory))
register(Algorithm("rd", "recursive doubling", recursive_doubling.build,
                   recursive_doubling.plan_memory))
register(Algorithm("rabenseifner", "Rabenseifner (halving + doubling)", rabenseifner.build,
                   rabenseifner.plan_memory))
register(Algorithm("switch", "in-switch aggregation (SwitchML)", switch.build,
                   switch.plan_memory))
