"""What code a scenario file may run: functions declared for it, nothing else.

A scenario file names Python functions as ``"module:function"``: handler-program factories
(``[[program]] factory``), check functions (``[[check]] function``) and host reduce operators
(a reduce op's ``function``). Without a rule a TOML file would be code (``factory =
"os:system"`` runs a shell command), so each must be declared for its use: decorated with
``@program_factory`` / ``@scenario_function``, or published by an installed package under the
entry-point group ``spin.program_factories`` / ``spin.scenario_functions``. The declaration is
checked before anything is called; importing the named module (which runs its top-level code,
like any import) is the one other thing a scenario file can make happen.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Kind:
    decorator: str  # where the decorator lives, for the message
    mark: str  # the attribute the decorator sets
    group: str  # the entry-point group of installed packages

    @property
    def rule(self) -> str:
        return (f"only functions decorated with @{self.decorator} or published as entry points "
                f"of group {self.group!r} may be named")


FACTORY = _Kind("spin.program_factory", "__spin_program_factory__", "spin.program_factories")
FUNCTION = _Kind("spin.scenario_function", "__spin_scenario_function__", "spin.scenario_functions")


def _declare(fn: F, kind: _Kind) -> F:
    if not inspect.isfunction(fn):
        raise ConfigError(f"@{kind.decorator} applies to a function, got {type(fn).__name__}")
    setattr(fn, kind.mark, True)
    return fn


def program_factory(fn: F) -> F:
    """Declare ``fn(**args) -> HandlerProgram`` callable from a scenario file's ``[[program]]``."""
    return _declare(fn, FACTORY)


def scenario_function(fn: F) -> F:
    """Declare ``fn`` callable from a scenario file as a check function or reduce operator."""
    return _declare(fn, FUNCTION)


def _declared(obj: Any, kind: _Kind) -> bool:
    return inspect.isfunction(obj) and getattr(obj, kind.mark, False) is True


def _published(path: str, kind: _Kind) -> bool:
    """Is ``module:function`` an entry point of an installed package (read without importing)?"""
    try:
        points = importlib.metadata.entry_points(group=kind.group)
    except Exception:  # noqa: BLE001 - broken metadata of some package: nothing published
        return False
    return any(ep.value.replace(" ", "") == path for ep in points)


def _import(mod_name: str, base_dir: Path | None) -> Any:
    """Import from sys.path, else from the scenario file's own folder."""
    try:
        return importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        local = base_dir / (mod_name.replace(".", "/") + ".py") if base_dir else None
        if local is None or not local.exists() or exc.name != mod_name.split(".")[0]:
            raise ConfigError(f"cannot import module {mod_name!r} ({exc})") from None
        if str(base_dir) not in sys.path:
            sys.path.insert(0, str(base_dir))
        return importlib.import_module(mod_name)


SLOW_IMPORT_NOTICE_S = 3.0


@contextlib.contextmanager
def slow_import_notice(mod_name: str):
    """A line on stderr when importing a scenario's module takes over SLOW_IMPORT_NOTICE_S: a
    module that loops or blocks on import is the user's code, which spin cannot stop safely,
    so it says what it is waiting for (Ctrl-C stops it) instead of hanging without a word."""
    def notice() -> None:
        print(f"spin: still importing module {mod_name!r} after {SLOW_IMPORT_NOTICE_S:g} s "
              f"(its top-level code is running; Ctrl-C stops it)", file=sys.stderr, flush=True)
    timer = threading.Timer(SLOW_IMPORT_NOTICE_S, notice)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def resolve(path: str, kind: _Kind, base_dir: Path | None = None) -> Callable[..., Any]:
    """The declared function ``path`` names; ConfigError (one line, with the rule) for anything
    else. Nothing the path names is called here: the module is imported and looked into."""
    mod_name, sep, fn_name = path.partition(":")
    if not sep or not mod_name or not fn_name:
        raise ConfigError(f"expected 'package.module:function'; {kind.rule}")
    try:
        with slow_import_notice(mod_name):
            module = _import(mod_name, base_dir)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - the module's own code failed: name it
        raise ConfigError(f"importing module {mod_name!r} failed: {type(exc).__name__}: {exc}") \
            from None
    declared = ", ".join(sorted(n for n, v in vars(module).items() if _declared(v, kind))) or "none"
    obj: Any = module
    for part in fn_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is None or not callable(obj):
        raise ConfigError(f"module {mod_name!r} has no function {fn_name!r}; declared there: "
                          f"{declared}")
    if _declared(obj, kind) or (inspect.isfunction(obj) and _published(path, kind)):
        return obj
    raise ConfigError(f"not declared for scenario files, refused without calling it: "
                      f"{kind.rule} (declared in {mod_name!r}: {declared})")
