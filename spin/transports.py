"""The NIC transports and entropy modes users pick by name (``[nic.transport] kind`` and
``entropy``), registered once here. A transport's registration names the module of
``nic_emulator.transports`` that implements it and the declaration modules of the state and
parameters it owns; the engine's dispatch, its tables' transport columns
(``spin.engine.layout``), the config check, the scenario schema's text and the CLI choices all
read this registry. (It lives apart from ``spin.config`` so that the engine and the device
models can read it without importing the whole config.)

Transports from outside spin register by an entry point of group ``spin.transports`` whose
value is their ``TransportOption`` (``toy = "my_package.toy_declares:TRANSPORT"``): they are
appended after spin's own, in entry-point name order, when this module is first imported, so
before the engine's tables are laid out.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .caches import TRANSPORT_ENTRY_POINTS as ENTRY_POINT_GROUP, transport_entry_points
from .errors import ConfigError, StateLayoutError
from .registry import Option, Registry


@dataclass(frozen=True)
class TransportOption:
    """A NIC transport, registered once: its name, a one-line summary, the module that
    implements it (the functions ``nic_emulator.transports``' docstring lists; the engine's
    dispatch over them is generated from this registry), and ``declares``: the import paths of
    the modules whose ``DECLARES`` (``spin.engine.columns.Declares``, one or a tuple) are the
    columns, counters and parameters it owns. The first of them may define ``PARAMS``, the
    pydantic model of its ``[nic.transport.<name>]`` table."""

    name: str
    summary: str
    module: str
    declares: tuple[str, ...] = ()


# Parts of the state every reliable transport shares (connection rows, entropy), laid out
# before the transports' own, in this order.
SHARED_PARTS = ("nic_emulator.transports.connections_columns", "nic_emulator.entropy_columns")

_BUILT_IN = (
    TransportOption("none", "open loop, no acknowledgements (a lost packet loses its message)",
                    "nic_emulator.transports.open_loop"),
    TransportOption("rc", "RoCEv2 reliable connection (go-back-N, retransmission timeout, DCQCN)",
                    "nic_emulator.transports.rc", ("nic_emulator.transports.rc_columns",)),
    TransportOption("ue", "Ultra-Ethernet-style (out-of-order placement, selective ACKs, "
                    "trimming, NSCC congestion control)", "nic_emulator.transports.ue",
                    ("nic_emulator.transports.ue_columns", "nic_emulator.nscc_columns")),
)


def _published() -> tuple[TransportOption, ...]:
    """Transports registered by entry points of group ``spin.transports``, by name."""
    out = []
    for ep in transport_entry_points():
        option = ep.load()
        if not isinstance(option, TransportOption):
            raise ConfigError(f"entry point {ep.name} = {ep.value!r} of group "
                              f"{ENTRY_POINT_GROUP}: is a {type(option).__name__}, not a "
                              f"spin.transports.TransportOption")
        out.append(option)
    return tuple(out)


# The NICs' transports and entropy modes (``TransportConfig.kind`` and ``.entropy``); the engine's
# codes (``D_TRANSPORT``, ``D_ENTROPY``) are the indices in these registries. The open-loop
# transport comes first (code 0: the engine's ``TR_OPEN_LOOP``).
TRANSPORTS: Registry[TransportOption] = Registry("transport", _BUILT_IN + _published())
ENTROPIES: Registry[Option] = Registry("entropy mode", (
    Option("per_flow", "one entropy value (UDP source port) per connection"),
    Option("spray", "a new entropy value per packet (oblivious spraying)"),
    Option("reps", "recycle the entropy values of unmarked ACKs, freeze on trims (REPS)"),
))


def declaration_module(path: str, who: str) -> Any:
    """Import a declaration module by its path; a missing one is named with ``who``."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        raise StateLayoutError(f"{who}: declaration module {path!r} is missing "
                               f"({exc})") from None


def declarations() -> tuple[Any, ...]:
    """Every registered part's ``Declares``: the shared parts, then each transport's, in
    registration order (the order of the engine tables' columns). A declaration module is
    imported by its path here (the engine imports no device package statically)."""
    out = []
    sources = [("shared transport state", p) for p in SHARED_PARTS]
    sources += [(f"transport {t.name!r}", p) for t in TRANSPORTS for p in t.declares]
    for who, path in sources:
        declared = getattr(declaration_module(path, who), "DECLARES", None)
        if declared is None:
            raise StateLayoutError(f"{who}: declaration module {path!r} defines no DECLARES")
        out += declared if isinstance(declared, tuple) else [declared]
    return tuple(out)


def transport_params(kind: str) -> Any:
    """The pydantic model of transport ``kind``'s ``[nic.transport.<kind>]`` table (the
    ``PARAMS`` of its first declaration module), or None when it takes no parameters."""
    option = TRANSPORTS.get(kind, "transport")
    if not option.declares:
        return None
    return getattr(declaration_module(option.declares[0], f"transport {kind!r}"), "PARAMS",
                   None)
