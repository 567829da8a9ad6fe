"""The registry of port-selection schemes: each module of ``switch_emulator.lb`` that declares a
module-level ``SCHEME = PortScheme(...)`` is one scheme, found by scanning the package.

This is the one source of truth for the schemes' names: ``SwitchConfig.load_balancing``,
``Scenario.load_balancing``, the study's list (``spin.loadbalancing.schemes``), ``spin lb``,
the per-switch tables (``table_entries``) and the engine's dispatch (``select_port``, generated
into the engine module by ``switch_emulator.routing.dispatch_source``) all derive from
``port_schemes()``. Codes (the engine's ``D_SW_LB`` column) follow the order of the names, except
that ``ecmp``, the default, is always code 0.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spin.errors import ConfigError

DEFAULT = "ecmp"


def no_table(n_route_groups: int) -> int:
    """A scheme that keeps no per-switch memory needs one (unused) entry."""
    return 1


@dataclass(frozen=True)
class PortScheme:
    """A port-selection scheme, declared once by its module as ``SCHEME``.

    ``select`` is the module's Numba function ``(st, dev, slot, group, first, count, now) -> local
    port`` (contract in ``switch_emulator.lb``); ``table_entries(n_route_groups)`` is how many
    entries of ``st.lb_table`` per switch it needs; ``per_packet`` says that packets of one flow
    may take different paths (the study flags reordering for those)."""

    name: str
    select: Any
    summary: str
    table_entries: Callable[[int], int] = no_table
    per_packet: bool = False


@functools.lru_cache(maxsize=1)
def port_schemes() -> tuple[PortScheme, ...]:
    """Every scheme of this package, ``ecmp`` first and then by name (the index is the code),
    scanned once per process."""
    return discover(__package__)


def discover(package_name: str) -> tuple[PortScheme, ...]:
    """The ``SCHEME`` of every module of package ``package_name`` (``pkgutil``: modules in
    name order; a module without one is a helper), ``ecmp`` first and then by name. A name
    declared twice, a ``SCHEME`` that is no ``PortScheme`` or a missing ``ecmp`` is an error."""
    package = importlib.import_module(package_name)
    found: dict[str, tuple[PortScheme, str]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package_name}.{info.name}")
        scheme = getattr(module, "SCHEME", None)
        if scheme is None:
            continue
        if not isinstance(scheme, PortScheme):
            raise ConfigError(f"{module.__name__}.SCHEME = {scheme!r}: not a PortScheme")
        if not scheme.name.isidentifier():
            raise ConfigError(f"{module.__name__}.SCHEME.name = {scheme.name!r}: a scheme name "
                              f"must be an identifier (letters, digits, underscores)")
        if scheme.name in found:
            raise ConfigError(f"port-selection scheme {scheme.name!r} is declared twice: by "
                              f"{found[scheme.name][1]} and {module.__name__}")
        found[scheme.name] = (scheme, module.__name__)
    if DEFAULT not in found:
        raise ConfigError(f"no port-selection scheme {DEFAULT!r} in {package_name}")
    names = [DEFAULT] + sorted(n for n in found if n != DEFAULT)
    return tuple(found[n][0] for n in names)


def scheme_names() -> tuple[str, ...]:
    """Names of the schemes, in code order."""
    return tuple(s.name for s in port_schemes())


def scheme_code(name: str, where: str = "load_balancing") -> int:
    """The engine's code of scheme ``name`` (``D_SW_LB``), or a ConfigError naming ``where``,
    the value and the valid choices."""
    names = scheme_names()
    if name not in names:
        raise ConfigError(f"{where} = {name!r}: unknown port-selection scheme; valid choices: "
                          f"{', '.join(names)}")
    return names.index(name)


def table_entries(names, n_route_groups: int) -> int:
    """Entries of ``st.lb_table`` per switch that the schemes ``names`` in use need."""
    by_name = {s.name: s for s in port_schemes()}
    return max([1] + [by_name[n].table_entries(n_route_groups) for n in names])
