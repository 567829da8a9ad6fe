"""The study's load-balancing schemes: a scheme is a name for a combination of switch settings
(``SwitchConfig.load_balancing`` and its parameters) and NIC settings (how senders choose
entropy values, which transport carries the messages), applied to a scenario's configs.

Two kinds, one source of truth each: every switch port-selection scheme of
``switch_emulator.lb`` is a scheme here under its own name (``spin.config.port_schemes()``, read
when first needed, never when spin is imported); sender-side schemes are the entries of
``SENDER_SCHEMES``, which name NIC fields (``spray`` and ``reps`` set the transport's
``entropy``; the transport itself stays the scenario's) over per-flow ECMP switches.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import NicConfig, SwitchConfig, port_schemes
from ..errors import ConfigError
from ..registry import Registry


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
def schemes() -> Registry[Scheme]:
    """Every scheme: the switches' port-selection schemes in their registry's order (``ecmp``
    first), then the sender-side ones (the order of ``spin lb``'s rows). A sender-side scheme
    named like a port-selection one is refused as declared twice."""
    return Registry("load-balancing scheme", (
        *(Scheme(p.name, p.summary, switch={"load_balancing": p.name}, per_packet=p.per_packet)
          for p in port_schemes()),
        *SENDER_SCHEMES))


def scheme_names() -> list[str]:
    """Every scheme's name, in the order of ``schemes()``."""
    return list(schemes().names())


def get_scheme(name: str, where: str = "scheme") -> Scheme:
    """The scheme called ``name`` (a scheme of your own too: an import path or an entry point
    of group ``spin.schemes``, see ``spin.port_selection``), or a ConfigError naming ``where``,
    the value and the valid schemes."""
    registry = schemes()
    if name in registry:
        return registry.get(name, where)
    if isinstance(name, str) and ("." in name or ":" in name or name in published_schemes()):
        port = port_schemes().get(name, where)
        return Scheme(name, port.summary, switch={"load_balancing": name},
                      per_packet=port.per_packet)
    return registry.get(name, where)


def published_schemes() -> dict[str, str]:
    """The schemes installed packages publish (entry-point group ``spin.schemes``): name ->
    ``module:attribute``, read without importing them."""
    from switch_emulator.lb.registry import published_schemes as published
    return {name: point.value for name, point in published().items()}


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


def scheme_list(text: str | None, default: list[str]) -> list[str]:
    """The schemes ``--schemes`` names (comma-separated; ``default`` when the option is not
    given). An empty list, an empty item or a scheme named twice is refused: each would run
    something other than what was asked (nothing, or a row twice)."""
    if text is None:
        return list(default)
    names = [s.strip() for s in text.split(",")]
    if not any(names):
        raise ConfigError(f"--schemes {text!r} names no scheme; valid choices: "
                          f"{', '.join(scheme_names())}, or a scheme of your own by import path")
    if "" in names:
        raise ConfigError(f"--schemes {text!r}: an empty item between commas")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"--schemes {text!r}: {', '.join(twice)} named twice")
    for name in names:
        get_scheme(name, "--schemes")
    return names

