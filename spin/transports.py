"""The NIC transports and entropy modes users pick by name (``[nic.transport] kind`` and
``entropy``), registered once here. A transport's registration names the module that
implements it and the declaration modules of the state and parameters it owns; the config
check, the scenario schema's text and the CLI choices read this registry.

spin's own transports (``SHIPPED``) are compiled into the engine: its dispatch and its tables'
transport columns (``spin.engine.layout``) are generated from them. Transports from outside
spin register by an entry point of group ``spin.transports`` whose value is their
``TransportOption`` (``toy = "my_package.toy_declares:TRANSPORT"``); they are listed after
spin's own, in entry-point name order, and are **compiled apart** from the engine, as handlers
and port-selection schemes are: a NIC running one holds the code ``TR_APART``, the engine calls
its functions through their entry addresses (``nic_emulator.transports.apart``), and its own
columns live in tables of their own (``spin.transport_api``), so installing, editing or
removing one never recompiles the engine. (This module lives apart from ``spin.config`` so
that the engine and the device models can read it without importing the whole config.)
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


# spin's own transports, compiled into the engine; the code of a NIC running one is its index
# here (``D_TRANSPORT``). The open-loop transport comes first (code 0: ``TR_OPEN_LOOP``).
SHIPPED: tuple[TransportOption, ...] = _BUILT_IN
# the code of a NIC whose transport is compiled apart (one from outside spin)
TR_APART = len(SHIPPED)

# The NICs' transports and entropy modes (``TransportConfig.kind`` and ``.entropy``): spin's own,
# then those published by installed packages. The engine's entropy codes (``D_ENTROPY``) are
# the indices in ``ENTROPIES``.
TRANSPORTS: Registry[TransportOption] = Registry(
    "transport", _BUILT_IN + _published(),
    others="or a transport of your own by import path ('package.module:TRANSPORT')")
ENTROPIES: Registry[Option] = Registry("entropy mode", (
    Option("per_flow", "one entropy value (UDP source port) per connection"),
    Option("spray", "a new entropy value per packet (oblivious spraying)"),
    Option("reps", "recycle the entropy values of unmarked ACKs, freeze on trims (REPS)"),
))


# transports named by import path ("package.module:TRANSPORT"), loaded in this process: by that
# path and by their option's name (the key of their [nic.transport.<name>] table)
_BY_PATH: dict[str, TransportOption] = {}


def is_import_path(kind: object) -> bool:
    """Does ``kind`` name a transport by import path rather than by registered name?"""
    return isinstance(kind, str) and kind not in TRANSPORTS and ("." in kind or ":" in kind)


def find_transport(kind: str, where: str = "transport") -> TransportOption:
    """The transport ``kind`` names: a registered name (spin's own, or an installed package's
    entry point), or an import path, ``"package.module:ATTRIBUTE"`` or ``"package.module"``
    (its ``TRANSPORT``), whose value is a ``TransportOption``; a one-line ConfigError else."""
    if kind in TRANSPORTS:
        return TRANSPORTS.get(kind, where)
    if isinstance(kind, str) and kind in _BY_PATH:
        return _BY_PATH[kind]
    if not is_import_path(kind):
        TRANSPORTS.get(kind, where)         # raises, with the valid choices
    module, _, attribute = kind.partition(":")
    attribute = attribute or "TRANSPORT"
    try:
        loaded = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module, named
        raise ConfigError(f"{where} = {kind!r}: importing {module!r} failed: "
                          f"{type(exc).__name__}: {exc}") from None
    option = getattr(loaded, attribute, None)
    if not isinstance(option, TransportOption):
        raise ConfigError(f"{where} = {kind!r}: {module}.{attribute} is "
                          f"{'missing' if option is None else 'a ' + type(option).__name__}; "
                          f"a transport by import path names a spin.transports.TransportOption")
    if option.name in TRANSPORTS:
        raise ConfigError(f"{where} = {kind!r}: its name {option.name!r} is already a registered "
                          f"transport's; give it another")
    _BY_PATH[kind] = _BY_PATH[option.name] = option
    return option


def check_kind(kind: Any) -> str:
    """``kind`` for ``TransportConfig.kind``'s validator: a registered name (checked by the
    registry, for pydantic's message) or an import path that loads a transport."""
    if is_import_path(kind):
        find_transport(kind, "nic.transport.kind")
        return kind
    return TRANSPORTS.check(kind)


def declaration_module(path: str, who: str) -> Any:
    """Import a declaration module by its path; a missing one is named with ``who``."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        raise StateLayoutError(f"{who}: declaration module {path!r} is missing "
                               f"({exc})") from None


def is_shipped(kind: str) -> bool:
    """Is transport ``kind`` one of spin's own (compiled into the engine)?"""
    return any(t.name == kind for t in SHIPPED)


def transport_code(kind: str) -> int:
    """The engine's code (``D_TRANSPORT``) of a NIC running transport ``kind``."""
    names = [t.name for t in SHIPPED]
    return names.index(kind) if kind in names else TR_APART


def _declared(sources: list[tuple[str, str]]) -> tuple[Any, ...]:
    out = []
    for who, path in sources:
        declared = getattr(declaration_module(path, who), "DECLARES", None)
        if declared is None:
            raise StateLayoutError(f"{who}: declaration module {path!r} defines no DECLARES")
        out += declared if isinstance(declared, tuple) else [declared]
    return tuple(out)


def declarations() -> tuple[Any, ...]:
    """The ``Declares`` laid out in the engine's tables: the shared parts, then each of spin's
    own transports', in registration order (the order of the tables' columns). A declaration
    module is imported by its path here (the engine imports no device package statically)."""
    sources = [("shared transport state", p) for p in SHARED_PARTS]
    sources += [(f"transport {t.name!r}", p) for t in SHIPPED for p in t.declares]
    return _declared(sources)


def own_declarations(kind: str) -> tuple[Any, ...]:
    """The ``Declares`` of transport ``kind`` compiled apart: laid out in its own tables
    (``spin.transport_api``), not in the engine's."""
    option = find_transport(kind)
    return _declared([(f"transport {kind!r}", p) for p in option.declares])


def transport_params(kind: str) -> Any:
    """The pydantic model of transport ``kind``'s ``[nic.transport.<kind>]`` table (the
    ``PARAMS`` of its first declaration module), or None when it takes no parameters."""
    option = find_transport(kind)
    if not option.declares:
        return None
    return getattr(declaration_module(option.declares[0], f"transport {kind!r}"), "PARAMS",
                   None)
