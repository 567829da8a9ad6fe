"""What the user sees while, and when, the engine is compiled.

* ``compile_progress``: Numba compiles the engine once per spin version (tens of seconds on a
  cold cache) and each new or edited handler on its own (about a second). Instead of a silent wait, one line on stderr says what is
  compiled and, when it is done, how long it took. Nothing is printed when everything comes
  from the cache (Numba only fires its ``numba:compile`` event on a cache miss).
* ``describe_handler_compile_error``: a handler whose entry does not compile makes Numba fail
  with a trace through generated code. Compiling the handler alone, with the argument types the
  engine passes it, finds Numba's location in the user's file; the error then names the
  handler, its file and line, the code there and, for the usual mistakes, a hint.
"""
from __future__ import annotations

import linecache
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import HandlerCompileError

KIND_NAMES = ("header", "payload", "completion")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ALLOCATORS = ("zeros", "empty", "ones", "full", "array", "arange", "copy", "concatenate",
               "zeros_like", "empty_like", "ones_like", "full_like", "linspace", "stack",
               "astype", "reshape", "list", "dict")
_NO_ALLOC = "Only accept returning of array passed into the function as argument"


@contextmanager
def compile_progress(subject: str, quiet: bool = False, stream=None):
    """Report Numba compilations (cache misses) made inside the block on ``stream`` (stderr):
    a live line with the elapsed time on a terminal, a start and an end line otherwise.
    ``subject`` says what is compiled ("the engine", "the handlers of programs 'a'")."""
    if quiet:
        yield
        return
    from numba.core import event as ev
    out = stream if stream is not None else sys.stderr
    tty = hasattr(out, "isatty") and out.isatty()
    what = f"spin: compiling {subject} (cached for later runs)"
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
            out.write(f"\r{what} ... {verdict}\n" if tty else f"spin: compile {verdict}\n")
            out.flush()


def is_compile_error(exc: BaseException) -> bool:
    from numba.core.errors import NumbaError
    return isinstance(exc, NumbaError)


def _clean(text: str) -> list[str]:
    return [ln.strip() for ln in _ANSI.sub("", text).splitlines()]


def _reason(text: str) -> str:
    lines = [ln for ln in _clean(text)
             if ln and not ln.startswith(("Failed in ", "During:", "- ", "There are"))]
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


def _location(fn, exc: Exception) -> tuple[str, int]:
    """Where in the handler's own file Numba failed: its error location when it is there, else
    the last place in that file its trace names (a failure deep inside Numba's library is
    reached from a line of the handler), else the ``def`` line."""
    file = fn.__code__.co_filename
    loc = getattr(exc, "loc", None)
    if getattr(loc, "filename", None) and Path(loc.filename).resolve() == Path(file).resolve():
        return file, int(loc.line)
    text = _ANSI.sub("", str(exc))
    hits = [(m["file"], int(m["line"])) for m in re.finditer(
        r'(?: at (?P<file>\S+) \((?P<line>\d+)\))', text)]
    hits += [(m[1], int(m[2])) for m in re.finditer(r'File "([^"]+)", line (\d+)', text)]
    mine = [line for f, line in hits if Path(f).name == Path(file).name
            and fn.__code__.co_firstlineno <= line]
    return file, (mine[-1] if mine else fn.__code__.co_firstlineno)


def _handler_message(kind: str, program: str, fn, exc: Exception, mem_type) -> str:
    name = getattr(fn, "__qualname__", repr(fn))
    text = str(exc)
    reason = _reason(text)
    file, line = _location(fn, exc)
    code = linecache.getline(file, line).strip()
    where = f"{file}:{line}" + (f": `{code}`" if code else "")
    hint = _hint(text, reason, mem_type)
    if "of type HandlerContext(" in reason:  # the context's type spells every field: cut it
        reason = reason[:reason.index("of type HandlerContext(")] + "of ctx"
        hint = ("ctx holds only this handler's own invocation (its host memory, message state "
                "and frame); reach the rest of the fabric through the spin_* calls")
    if hint.startswith("handlers cannot allocate"):
        reason = "allocates an array"
    return (f"{kind} handler {name!r} of program {program!r} does not compile: {where}: {reason}"
            + (f" (hint: {hint})" if hint else ""))


def _return_message(kind: str, program: str, fn, return_type) -> str | None:
    """A handler must return an integer sPIN code; ``None`` (a missing ``return``) or another
    type compiles alone but not in the engine."""
    from numba.core import types
    if isinstance(return_type, (types.Integer, types.Boolean, types.IntegerLiteral)):
        return None
    name = getattr(fn, "__qualname__", repr(fn))
    what = "nothing (a missing return)" if return_type == types.none else str(return_type)
    return (f"{kind} handler {name!r} of program {program!r} does not compile: "
            f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}: it returns {what}; a "
            f"handler returns an int sPIN code (SUCCESS, PROCEED, DROP, ... from spin.api)")


def describe_handler_compile_error(exc: Exception, kind: str, program,
                                   fn) -> HandlerCompileError:
    """A handler's entry failed to compile: compile the handler alone with the types the
    engine passes (its context, the payload as ``uint8[::1]``, its handler memory) to find
    Numba's location in the user's file, and name the handler, its file and line."""
    import numba
    from numba.core.errors import NumbaError
    from ..engine.handler_abi import CONTEXT_TYPE, PAYLOAD_TYPE
    py = getattr(fn, "py_func", fn)
    memory = program.memory
    mem_type = numba.typeof(memory if memory.ndim else memory.reshape(1))
    alone = numba.njit(_nrt=False)(py)
    try:
        alone.compile((CONTEXT_TYPE, PAYLOAD_TYPE, mem_type))
    except NumbaError as failed:
        err = HandlerCompileError(_handler_message(kind, program.name, py, failed, mem_type))
        err.details = _ANSI.sub("", str(failed))
        return err
    returns = _return_message(kind, program.name, py, alone.nopython_signatures[0].return_type)
    if returns:
        return HandlerCompileError(returns)
    err = HandlerCompileError(f"{kind} handler {py.__qualname__!r} of program {program.name!r} "
                              f"does not compile in its entry: {_reason(str(exc))} (it compiles "
                              f"alone; Numba's full message is in this error's .details)")
    err.details = _ANSI.sub("", str(exc))
    return err
