"""``njit`` for spin's compiled code: Numba's, minus the specialisations that only cost compile time.

A call from compiled code to a Numba function is compiled for the exact types of its
arguments, and Numba types a constant as a *literal* of its value: ``trace_row(st, TRK_HANDLER,
...)`` and ``trace_row(st, TRK_PORT, ...)`` were two compilations of ``trace_row`` (with their
callees re-optimised inside each), as were a call with an ``int32`` read from a table and one
with an ``int64``. The engine held 75 such duplicates among 263 compilations. Functions
decorated here are specialised on the general type instead: literals become their type
(``Literal[int](4)`` is ``int64``, ``Literal[bool]`` is ``bool``) and signed integers narrower
than 64 bits become ``int64``. The caller converts the argument, the callee is compiled once,
and LLVM still folds a constant into an inlined callee, so the machine code on the hot path
does not change (``spin bench``); only the duplicates are gone.

Caching (``cache=True``) is switched on when a function first compiles, not when it is
decorated: setting up a function's cache costs about 0.2 ms (its cache folder and index paths),
and a run that loads the engine whole from the cache never compiles the engine's 230 functions
one by one, so it skips that set-up (some 40 ms of every start).

A function decorated here compiles or loads its machine code only once spin's cache loader
is installed (``spin.caches.heal_numba_cache``): a damaged entry is then compiled anew, and
loading needs Numba's runtime, not its compiler. Modules that only declare (header formats,
state layouts) can therefore be imported without Numba's loader, or Numba, being set up.

Everything else is ``numba.njit``: the same options, caching and dispatcher.
"""
from __future__ import annotations

from typing import Any, Callable

import numba as nb
from numba.core import types
from numba.core.registry import CPUDispatcher

from .caches import heal_numba_cache


def general_type(ty: types.Type) -> types.Type:
    """The type a call is specialised on: literals unliteral, narrow signed integers int64."""
    ty = types.unliteral(ty)
    if isinstance(ty, types.Integer) and ty.signed and ty.bitwidth < 64:
        return types.int64
    return ty


class GeneralDispatcher(CPUDispatcher):
    """A CPU dispatcher whose calls from compiled code are compiled for the general argument
    types (``general_type``); calls from Python are unchanged (they never see literals)."""

    _cache_on_compile = False   # ``cache=True`` was asked for; switched on at the first compile

    def compile(self, sig):
        heal_numba_cache()   # the loader for spin's cache is in place before anything loads
        if self._cache_on_compile:
            self._cache_on_compile = False
            self.enable_caching()
        return super().compile(sig)

    def get_call_template(self, args, kws):
        args = tuple(general_type(a) for a in args)
        kws = {k: general_type(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` with the dispatcher above; use it as ``@njit(...)`` or ``@njit``."""
    cache = bool(options.get("cache", False))
    if args and callable(args[0]) and not isinstance(args[0], (str, tuple, list)):
        return _general(nb.njit(**{**options, "cache": False})(args[0]), cache)
    decorate = nb.njit(*args, **{**options, "cache": False})
    return lambda func: _general(decorate(func), cache)


def _general(dispatcher: Callable, cache: bool) -> Callable:
    if type(dispatcher) is not CPUDispatcher:   # e.g. NUMBA_DISABLE_JIT: the plain function
        return dispatcher
    dispatcher.__class__ = GeneralDispatcher
    dispatcher._cache_on_compile = cache
    return dispatcher
