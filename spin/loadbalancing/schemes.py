"""The study's load-balancing schemes: a scheme is a name for a combination of switch settings
(``SwitchConfig.load_balancing`` and its parameters) and NIC settings (how senders choose
entropy values, which transport carries the messages), applied to a scenario's configs.

Two kinds, one source of truth each: every switch port-selection scheme of
``switch_emulator.lb`` is a scheme here under its own name (read from that package's registry
when first needed, never when spin is imported); sender-side schemes are the entries of
``SENDER_SCHEMES``, which name NIC fields (``spray`` and ``reps`` set the transport's
``entropy``; the transport itself stays the scenario's) over per-flow ECMP switches.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..config import NicConfig, SwitchConfig
from ..errors import ConfigError


@dataclass(frozen=True)
class Scheme:
    """A named load-balancing scheme: the config fields it sets."""

    name: str
    summary: str
    switch: dict[str, Any] = field(default_factory=dict)   # SwitchConfig fields
    nic: dict[str, Any] = field(default_factory=dict)      # NicConfig fields
    per_packet: bool = False   # packets of a flow take different paths (needs an out-of-order
                               # receiver: a message's packets may overtake its first)


SENDER_SCHEMES = (
    Scheme("spray", "oblivious packet spraying: senders draw a new entropy value per packet, "
           "switches hash it (ECMP)", switch={"load_balancing": "ecmp"},
           nic={"transport": {"entropy": "spray"}}, per_packet=True),
    Scheme("reps", "REPS: senders recycle the entropy values of unmarked ACKs and freeze on "
           "trims and timeouts; switches hash them (ECMP)", switch={"load_balancing": "ecmp"},
           nic={"transport": {"entropy": "reps"}}, per_packet=True),
)


@functools.lru_cache(maxsize=1)
def schemes() -> Mapping[str, Scheme]:
    """Every scheme by name: the switches' port-selection schemes in their registry's order
    (``ecmp`` first), then the sender-side ones (the order of ``spin lb``'s rows)."""
    from switch_emulator.lb.registry import port_schemes
    out = {p.name: Scheme(p.name, p.summary, switch={"load_balancing": p.name},
                          per_packet=p.per_packet) for p in port_schemes()}
    for s in SENDER_SCHEMES:
        if s.name in out:
            raise ConfigError(f"load-balancing scheme {s.name!r} is both a sender-side scheme "
                              f"and a port-selection scheme of switch_emulator.lb")
        out[s.name] = s
    return MappingProxyType(out)


def scheme_names() -> list[str]:
    """Every scheme's name, in the order of ``schemes()``."""
    return list(schemes())


def get_scheme(name: str, where: str = "scheme") -> Scheme:
    """The scheme called ``name``, or a ConfigError naming ``where`` and the valid schemes."""
    try:
        return schemes()[name]
    except (KeyError, TypeError):
        raise ConfigError(f"{where} = {name!r}: unknown load-balancing scheme; valid schemes: "
                          f"{', '.join(schemes())}") from None


def scheme_configs(name: str, switch: SwitchConfig, nic: NicConfig,
                   where: str = "scheme") -> tuple[SwitchConfig, NicConfig]:
    """``switch`` and ``nic`` with the scheme's settings applied (validated)."""
    s = get_scheme(name, where)
    return (SwitchConfig.make(**_merged(switch.model_dump(), s.switch)),
            NicConfig.make(**_merged(nic.model_dump(), s.nic)))


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s fields, nested tables merged field by field (a scheme that sets
    the transport's entropy keeps the scenario's transport kind and timers)."""
    out = dict(base)
    for key, value in over.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if nested else value
    return out


def with_scheme(scenario, name: str):
    """A copy of ``scenario`` (sharing its topology, programs and memory) under scheme
    ``name``."""
    switch, nic = scheme_configs(name, scenario.switch, scenario.nic)
    return replace(scenario, switch=switch, nic=nic)
