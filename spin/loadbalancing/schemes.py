"""The registry of load-balancing schemes: a scheme is a name for a combination of switch
settings (``SwitchConfig.load_balancing`` and its parameters) and NIC settings (how senders
choose entropy values, which transport carries the messages), applied to a scenario's configs.

Adding a scheme is one entry: a sender-side scheme names NIC fields (``spray`` and ``reps`` set
the transport's ``entropy``; the transport itself stays the scenario's), a switch-side one names
``switch={"load_balancing": ...}`` (one module per port-selection scheme in
``switch_emulator.lb``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
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


SCHEMES: dict[str, Scheme] = {s.name: s for s in (
    Scheme("ecmp", "per-flow ECMP: a hash of the 5-tuple in every switch, one path per flow",
           switch={"load_balancing": "ecmp"}),
    Scheme("flowlet", "flowlet switching: a flow changes path (to the least-loaded port) after "
           "an idle gap of flowlet_gap_ns", switch={"load_balancing": "flowlet"}),
    Scheme("adaptive", "switch-local adaptive routing: every packet to the least-loaded "
           "equal-cost port", switch={"load_balancing": "adaptive"}, per_packet=True),
    Scheme("drill", "DRILL: every packet to the less loaded of two random ports and the last "
           "best", switch={"load_balancing": "drill"}, per_packet=True),
    Scheme("spray", "oblivious packet spraying: senders draw a new entropy value per packet, "
           "switches hash it (ECMP)", switch={"load_balancing": "ecmp"},
           nic={"transport": {"entropy": "spray"}}, per_packet=True),
    Scheme("reps", "REPS: senders recycle the entropy values of unmarked ACKs and freeze on "
           "trims and timeouts; switches hash them (ECMP)", switch={"load_balancing": "ecmp"},
           nic={"transport": {"entropy": "reps"}}, per_packet=True),
)}


def scheme_names() -> list[str]:
    """Registered schemes, in registration order (the order of ``spin lb``'s rows)."""
    return list(SCHEMES)


def get_scheme(name: str, where: str = "scheme") -> Scheme:
    """The scheme called ``name``, or a ConfigError naming ``where`` and the valid schemes."""
    try:
        return SCHEMES[name]
    except (KeyError, TypeError):
        raise ConfigError(f"{where} = {name!r}: unknown load-balancing scheme; valid schemes: "
                          f"{', '.join(SCHEMES)}") from None


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
