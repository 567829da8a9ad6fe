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
from spin.errors import ConfigError
# declared there, for the schemes from outside spin too
from spin.port_selection import PortScheme, no_table  # noqa: F401

DEFAULT = "ecmp"


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
    """Names of the shipped schemes, in code order."""
    return tuple(s.name for s in port_schemes())


def scheme_code(name: str, where: str = "load_balancing") -> int:
    """The engine's code of shipped scheme ``name`` (``D_SW_LB``), or a ConfigError naming
    ``where``, the value and the valid choices."""
    names = scheme_names()
    if name not in names:
        raise ConfigError(f"{where} = {name!r}: unknown port-selection scheme; valid choices: "
                          f"{', '.join(names)}")
    return names.index(name)


# --- schemes from outside spin, compiled apart (spin.port_selection) -------------------------

ENTRY_POINT_GROUP = "spin.schemes"


class UnknownScheme(Exception):
    """Why a load-balancing value names no scheme (the caller adds field and value)."""


def find_scheme(name: str) -> PortScheme:
    """The scheme ``name`` names: a shipped scheme's name, the name of an entry point of group
    ``spin.schemes`` of an installed package, or an import path (``package.module``, whose
    ``SCHEME`` is taken, or ``module:ATTRIBUTE``; a bare word is never imported). Nothing of the module is called:
    it is imported (its top-level code runs, as for any import) and looked into."""
    shipped = {s.name: s for s in port_schemes()}
    if not isinstance(name, str):
        raise UnknownScheme(f"a scheme is named by a string; valid choices: "
                            f"{', '.join(shipped)}")
    if name in shipped:
        _warn_if_shadowed(name)
        return shipped[name]
    return _outside_scheme(name)


@functools.lru_cache(maxsize=64)
def _warn_if_shadowed(name: str) -> None:
    """An installed package publishing a scheme under a shipped scheme's name does not replace
    it (a name always means the same scheme); say so once, with the path that reaches it."""
    point = published_schemes().get(name)
    if point is not None:
        import warnings
        warnings.warn(f"spin: the entry point {name!r} of group {ENTRY_POINT_GROUP!r} "
                      f"({point.value}) is shadowed by the shipped scheme {name!r}; name it by "
                      f"its import path {point.value!r} to use it", RuntimeWarning, stacklevel=3)


@functools.lru_cache(maxsize=64)
def _outside_scheme(name: str) -> PortScheme:
    """A scheme from outside spin, resolved once per process (errors are not cached)."""
    published = published_schemes()
    if name in published:
        try:
            scheme = published[name].load()
        except Exception as exc:  # noqa: BLE001 - the package's own code failed: name it
            raise UnknownScheme(f"loading entry point {name!r} ({published[name].value}) "
                                f"failed: {type(exc).__name__}: {exc}") from None
        return _checked(scheme, f"entry point {name!r} ({published[name].value})")
    module_name, sep, attribute = name.partition(":")
    looks_like_path = sep or "." in module_name     # a bare word is a (mistyped) name
    if not looks_like_path or not _is_import_path(module_name) \
            or (sep and not attribute.isidentifier()):
        from spin.suggest import did_you_mean
        choices = [*scheme_names(), *published]
        raise UnknownScheme(f"unknown port-selection scheme; valid choices: "
                            f"{', '.join(choices)}, or a scheme of your own by import path "
                            f"('package.module' declaring SCHEME = PortScheme(...))"
                            f"{did_you_mean(name, choices)}")
    from spin.scenario_code import slow_import_notice
    try:
        with slow_import_notice(module_name):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UnknownScheme(f"no module {module_name!r} to import ({exc}); a scheme of your own "
                            f"must be importable (on sys.path or installed)") from None
    except Exception as exc:  # noqa: BLE001 - the module's own code failed: name it
        raise UnknownScheme(f"importing module {module_name!r} failed: "
                            f"{type(exc).__name__}: {exc}") from None
    attribute = attribute or "SCHEME"
    if not hasattr(module, attribute):
        raise UnknownScheme(f"module {module_name!r} declares no {attribute} (a scheme's module "
                            f"declares SCHEME = PortScheme(name=..., select=..., summary=...))")
    return _checked(getattr(module, attribute), f"{module_name}.{attribute}")


def _is_import_path(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _checked(scheme, where: str) -> PortScheme:
    if not isinstance(scheme, PortScheme):
        raise UnknownScheme(f"{where} is {type(scheme).__name__}, not a "
                            f"spin.port_selection.PortScheme")
    if not scheme.name.isidentifier():
        raise UnknownScheme(f"{where}.name = {scheme.name!r}: a scheme name must be an "
                            f"identifier (letters, digits, underscores), as a shipped one's is")
    select = getattr(scheme.select, "py_func", scheme.select)
    if not callable(select) or not hasattr(select, "__code__"):
        raise UnknownScheme(f"{where}.select is {type(scheme.select).__name__}; a scheme's "
                            f"select is a Python function select(view) -> local port")
    from spin.engine.handler_build import resolve_handler   # how the compiled entry finds it
    try:
        found = resolve_handler(select.__module__, select.__qualname__)
    except (AttributeError, ImportError, TypeError):
        found = None
    if found is not select:
        code = select.__code__
        raise UnknownScheme(f"{where}.select is {select.__qualname__} "
                            f"({code.co_filename}:{code.co_firstlineno}), which its module does "
                            f"not name: a scheme's select is a function defined at the top level "
                            f"of its module (spin compiles it apart by module and name), not a "
                            f"lambda, a nested function or a partial")
    return scheme


def published_schemes() -> dict:
    """Entry points of group ``spin.schemes`` of installed packages, by name (read without
    importing them)."""
    import importlib.metadata
    try:
        points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - broken metadata of some package: nothing published
        return {}
    return {ep.name: ep for ep in points}


def is_shipped(scheme: PortScheme) -> bool:
    """Is ``scheme`` compiled into the engine (one of ``switch_emulator.lb``'s)?"""
    return any(scheme is s for s in port_schemes())


def schemes_apart(names) -> list[str]:
    """The names among ``names`` (a run's schemes) of schemes compiled apart, in code order
    (sorted): codes ``len(port_schemes()) + index``, the same in every worker process."""
    from spin.engine.layout import SCHEMES_APART
    apart = sorted({n for n in names if not is_shipped(find_scheme(n))})
    if len(apart) > SCHEMES_APART:
        raise ConfigError(f"load_balancing: {len(apart)} schemes of your own in one run "
                          f"({', '.join(apart)}); at most {SCHEMES_APART}")
    return apart


def run_scheme_codes(names) -> dict[str, int]:
    """The engine code (``D_SW_LB``) of each of a run's scheme names: shipped schemes by their
    place in ``port_schemes()``, schemes compiled apart after them (``schemes_apart``)."""
    shipped = port_schemes()
    codes = {}
    for name in set(names):
        scheme = find_scheme(name)
        for code, s in enumerate(shipped):
            if s is scheme:
                codes[name] = code
    for index, name in enumerate(schemes_apart(names)):
        codes[name] = len(shipped) + index
    return codes


MAX_TABLE_ENTRIES = 1 << 22      # per switch: 128 MiB of scheme memory each


def table_entries(names, n_route_groups: int) -> int:
    """Entries of ``st.lb_table`` per switch that the schemes ``names`` in use need; a
    ``table_entries`` that fails or answers anything but an int in 1..MAX_TABLE_ENTRIES is a
    ConfigError naming the scheme."""
    sizes = [1]
    for name in names:
        scheme = find_scheme(name)
        try:
            entries = scheme.table_entries(n_route_groups)
        except Exception as exc:  # noqa: BLE001 - the scheme's own code failed: name it
            raise ConfigError(f"load_balancing = {name!r}: table_entries({n_route_groups}) "
                              f"failed: {type(exc).__name__}: {exc}") from None
        if isinstance(entries, bool) or not isinstance(entries, int) \
                or not 1 <= entries <= MAX_TABLE_ENTRIES:
            raise ConfigError(f"load_balancing = {name!r}: table_entries({n_route_groups}) = "
                              f"{entries!r}; a scheme's memory is 1..{MAX_TABLE_ENTRIES:,} "
                              f"entries per switch")
        sizes.append(entries)
    return max(sizes)


def switch_schemes(scenario) -> list[str]:
    """The scheme name of each switch of ``scenario``, in topology order."""
    default = scenario.switch.load_balancing
    return [scenario.switch_load_balancing.get(name, default)
            for name in scenario.topology.switches]


def scheme_registry():
    """The schemes as ``spin.registry.Registry`` (``spin.config.port_schemes()``): the shipped
    ones listed, and any name ``find_scheme`` resolves accepted."""
    from pydantic_core import PydanticCustomError

    from spin.registry import Registry

    class PortSchemeRegistry(Registry):
        def get(self, name, where: str) -> PortScheme:
            try:
                return find_scheme(name)
            except UnknownScheme as why:
                raise self.error(f"{where} = {name!r}: {why}") from None

        def check(self, name) -> str:
            try:
                find_scheme(name)
            except UnknownScheme as why:
                raise PydanticCustomError("unknown_name", "{text}", {"text": str(why)}) from None
            return name

        def __contains__(self, name: object) -> bool:
            try:
                find_scheme(name)
            except UnknownScheme:
                return False
            return True

    return PortSchemeRegistry("port-selection scheme", port_schemes())
