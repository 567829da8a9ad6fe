"""What the user sees while, and when, the engine is compiled.

* ``compile_progress``: Numba compiles the engine on its first call, which takes from seconds
  to over a minute on a cold cache. Instead of a silent wait, one line on stderr says what is
  compiled and, when it is done, how long it took. Nothing is printed when everything comes
  from the cache (Numba only fires its ``numba:compile`` event on a cache miss).
* ``describe_compile_error``: a handler that does not compile makes Numba fail while compiling
  the *generated engine*, with kilobytes of trace through engine files. Compiling each handler
  alone, with the argument types the engine passes it, finds the culprit and Numba's location
  in the user's file; the error then names the handler, its file and line, the code there and,
  for the usual mistakes, a hint. This only runs after the engine failed to compile.
"""
from __future__ import annotations

import linecache
import re
import sys
import threading
import time
from contextlib import contextmanager

from .errors import HandlerCompileError

KIND_NAMES = ("header", "payload", "completion")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ALLOCATORS = ("zeros", "empty", "ones", "full", "array", "arange", "copy", "concatenate",
               "zeros_like", "empty_like", "ones_like", "full_like", "linspace", "stack",
               "astype", "reshape", "list", "dict")
_NO_ALLOC = "Only accept returning of array passed into the function as argument"


def _what(programs) -> str:
    names = [p.name for p in programs]
    return (f"programs {', '.join(map(repr, names))}" if names else "no handler programs")


@contextmanager
def compile_progress(programs, quiet: bool = False, stream=None):
    """Report Numba compilations (cache misses) made inside the block on ``stream`` (stderr):
    a live line with the elapsed time on a terminal, a start and an end line otherwise."""
    if quiet:
        yield
        return
    from numba.core import event as ev
    out = stream if stream is not None else sys.stderr
    tty = hasattr(out, "isatty") and out.isatty()
    what = f"spin: compiling the engine for {_what(programs)} (cached for later runs)"
    started: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(1.0):
            out.write(f"\r{what} ... {time.perf_counter() - started[0]:.0f} s")
            out.flush()

    class Listener(ev.Listener):
        def on_start(self, event) -> None:
            if started:
                return
            started.append(time.perf_counter())
            out.write(f"{what} ..." if tty else f"{what} ...\n")
            out.flush()
            if tty:
                threading.Thread(target=tick, daemon=True, name="spin-compile-progress").start()

        def on_end(self, event) -> None:
            pass

    listener = Listener()
    ev.register("numba:compile", listener)
    ok = False
    try:
        yield
        ok = True
    finally:
        ev.unregister("numba:compile", listener)
        stop.set()
        if started:
            took = time.perf_counter() - started[0]
            verdict = f"done in {took:.1f} s" if ok else f"failed after {took:.1f} s"
            out.write(f"\r{what} ... {verdict}\n" if tty else f"spin: engine compile {verdict}\n")
            out.flush()


def is_compile_error(exc: BaseException) -> bool:
    from numba.core.errors import NumbaError
    return isinstance(exc, NumbaError)


def _clean(text: str) -> list[str]:
    return [ln.strip() for ln in _ANSI.sub("", text).splitlines()]


def _reason(text: str) -> str:
    lines = [ln for ln in _clean(text) if ln and not ln.startswith(("Failed in ", "During:"))]
    if not lines:
        return "Numba could not compile it"
    first = lines[0]
    if first.startswith("No implementation of function"):
        sig = next((ln[4:] for ln in lines if ln.startswith(">>> ")), "")
        return f"no implementation of {sig}" if sig else first.rstrip(":")
    return first


def _hint(text: str, reason: str, mem_type) -> str:
    plain = _ANSI.sub("", text)
    called = re.match(r"no implementation of (\w+)\(", reason)
    if _NO_ALLOC in plain or "NRT required" in plain or (called and called[1] in _ALLOCATORS):
        return "handlers cannot allocate arrays: keep state in handler memory"
    if reason.startswith("NameError"):
        return "a handler can use only names defined or imported in its module"
    if reason.startswith("no implementation of") or "Cannot unify" in reason:
        return (f"types: pkt is the payload, array(uint8, 1d, C); mem is the handler memory, "
                f"{mem_type}; return an int sPIN code")
    return ""


def _handler_message(kind: str, program: str, fn, exc: Exception, mem_type) -> str:
    name = getattr(fn, "__qualname__", repr(fn))
    text = str(exc)
    reason = _reason(text)
    loc = getattr(exc, "loc", None)
    file = getattr(loc, "filename", None) or fn.__code__.co_filename
    line = getattr(loc, "line", None) or fn.__code__.co_firstlineno
    code = linecache.getline(file, line).strip()
    where = f"{file}:{line}" + (f": `{code}`" if code else "")
    hint = _hint(text, reason, mem_type)
    return (f"{kind} handler {name!r} of program {program!r} does not compile: {where}: {reason}"
            + (f" (hint: {hint})" if hint else ""))


def describe_compile_error(exc: Exception, programs, ctx, hmems) -> HandlerCompileError:
    """Compile each handler alone with the engine's argument types (``ctx`` as the engine
    passes it, the payload as ``uint8[::1]``, one instance of its handler memory) and name the
    first that fails; otherwise summarise Numba's error about the engine."""
    import numba
    from numba.core import types
    from numba.core.errors import NumbaError
    ctx_type = numba.typeof(ctx)
    pkt_type = types.Array(types.uint8, 1, "C")
    for p, prog in enumerate(programs):
        mem_type = numba.typeof(hmems[p][0])
        for kind, fn in zip(KIND_NAMES, prog.handlers()):
            if fn is None:
                continue
            py = getattr(fn, "py_func", fn)
            try:
                numba.njit(_nrt=False)(py).compile((ctx_type, pkt_type, mem_type))
            except NumbaError as alone:
                err = HandlerCompileError(_handler_message(kind, prog.name, py, alone, mem_type))
                err.details = _ANSI.sub("", str(alone))
                return err
    err = HandlerCompileError(f"the engine for {_what(programs)} does not compile: "
                              f"{_reason(str(exc))} (every handler compiles alone; Numba's full "
                              f"message is in this error's .details)")
    err.details = _ANSI.sub("", str(exc))
    return err
