"""What a handler may not do, refused before it compiles.

Handlers model the cores of a NIC or a switch: they run compiled, on a bounded stack, and see
only the packet, their memory and the ``spin_*`` calls. Numba would still compile three ways
out of that sandbox, so they are refused here, naming the handler and the line:

- ``numba.objmode`` blocks run arbitrary Python (``os.system``) in the middle of a handler;
- C functions reached through ``ctypes`` or ``cffi`` run arbitrary native code;
- recursion (a function of the handler reaching itself again) overflows the native stack
  of the engine on deep inputs, which ends the process with a segfault instead of an error;
- the engine's own internals (``spin.engine``, ``nic_emulator``, ``switch_emulator``): their
  raw-pointer helpers (``array_at``) read and write any address of the process, another
  device's state included. Handlers reach the engine through ``spin.api``, schemes through
  ``spin.port_selection``'s view and accessors.

The walk follows every Python function the handler calls through module globals (also in
other modules, also through the dispatchers Numba wraps them in); spin's own and Numba's and NumPy's
functions are trusted and not entered.
"""
from __future__ import annotations

import ctypes
import dis
import linecache
import types
from typing import Callable

from .errors import HandlerCompileError

_TRUSTED_PACKAGES = ("spin", "numba", "numpy", "nic_emulator", "switch_emulator", "llvmlite")
# trusted when spin's public API calls them, out of bounds when a handler or scheme does
_INTERNAL_PREFIXES = ("spin.engine", "nic_emulator", "switch_emulator")
_RAW_MEMORY_NAMES = frozenset({"array_at", "readonly_array_at"})


def check_sandbox(fn: Callable, kind: str, program: str) -> None:
    """Raise HandlerCompileError if handler ``fn`` (or a function it calls) uses object mode,
    calls C through ctypes/cffi, or recurses."""
    root = getattr(fn, "py_func", fn)
    problem = find_escape(root)
    if problem is not None:
        where, reason = problem
        raise HandlerCompileError(f"{kind} handler {root.__qualname__!r} of program {program!r} "
                                  f"is refused: {where}: {reason}")


def find_escape(fn: Callable, engine_internals: bool = False) -> tuple[str, str] | None:
    """(where, reason) of the first way out of the sandbox reachable from ``fn`` (a handler or
    a port-selection scheme), else None. ``engine_internals``: the engine's own functions are
    allowed (a NIC transport calls them by design; object mode, C calls and recursion are
    still refused)."""
    return _walk(getattr(fn, "py_func", fn), [], engine_internals)


def _walk(fn: types.FunctionType, path: list[types.FunctionType], internals: bool = False):
    """(where, reason) of the first forbidden use reachable from ``fn``, else None."""
    path = [*path, fn]
    for code in _codes(fn.__code__):
        for ins in dis.get_instructions(code):
            if ins.opname not in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD"):
                continue
            name = ins.argval
            if name == "objmode":
                return _where(code, ins), ("uses numba.objmode: a handler runs on a NIC or "
                                           "switch core and may not run Python object code")
            attribute = ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
            if attribute and name in _RAW_MEMORY_NAMES and not internals:   # array_at(...)
                return _where(code, ins), _raw_memory(name)
            if attribute or name not in fn.__globals__:
                continue
            value = fn.__globals__[name]
            internal = None if internals else _internal_module(value)
            if internal is not None and getattr(value, "__name__", name) in _RAW_MEMORY_NAMES:
                return _where(code, ins), _raw_memory(name)
            if internal is not None:
                return _where(code, ins), (f"uses {name} of {internal}, an internal of the "
                                           f"engine: compiled user code reaches the engine "
                                           f"through spin.api or spin.port_selection only")
            if "objmode" in type(value).__name__.lower():     # from numba import objmode as om
                return _where(code, ins), (f"uses numba.objmode (as {name}): a handler runs on "
                                           f"a NIC or switch core and may not run Python "
                                           f"object code")
            if _is_foreign_function(value):
                return _where(code, ins), (f"calls {name}, a C function reached through "
                                           f"ctypes or cffi: handlers may only call spin_* "
                                           f"functions and compiled Python")
            target = getattr(value, "py_func", value)
            if not isinstance(target, types.FunctionType) or _trusted(target):
                continue
            if target in path:
                cycle = " -> ".join(f.__qualname__ for f in path[path.index(target):])
                return _where(code, ins), (f"recursion ({cycle} -> {target.__qualname__}): "
                                           f"handlers run on a bounded core stack; use a loop")
            found = _walk(target, path, internals)
            if found is not None:
                return found
    return None


def _codes(code: types.CodeType):
    """``code`` and the code objects nested in it (comprehensions, inner functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _raw_memory(name: str) -> str:
    return (f"uses {name}, the engine's raw-memory helper (any address of the process): "
            f"compiled user code reaches the engine through spin.api or spin.port_selection only")


def _internal_module(value) -> str | None:
    """The engine-internal module a callable ``value`` (function, dispatcher or intrinsic)
    comes from, else None. Modules and constants are not refused: a handler may read the
    engine's constants (``state.OP_*``); its raw-memory helpers are refused by name."""
    if isinstance(value, types.ModuleType) or not callable(value):
        return None
    target = getattr(value, "py_func", None) or getattr(value, "_defn", None) or value
    module = getattr(target, "__module__", None)
    if not isinstance(module, str):
        return None
    return module if module.startswith(_INTERNAL_PREFIXES) else None


def _trusted(fn: types.FunctionType) -> bool:
    module = (fn.__module__ or "").split(".", 1)[0]
    return module in _TRUSTED_PACKAGES


def _is_foreign_function(value) -> bool:
    if isinstance(value, ctypes._CFuncPtr):
        return True
    return type(value).__module__ == "_cffi_backend"


def _where(code: types.CodeType, ins: dis.Instruction) -> str:
    line = ins.positions.lineno if ins.positions and ins.positions.lineno else \
        code.co_firstlineno
    text = linecache.getline(code.co_filename, line).strip()
    return f"{code.co_filename}:{line}" + (f": `{text}`" if text else "")
