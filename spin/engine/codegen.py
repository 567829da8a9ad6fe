"""Generate, cache and import the engine module for a set of handler programs.

Handlers are dispatched statically: the generated module imports each handler as a global and
selects it with ``if prog == k`` branches, so Numba inlines it into the engine (about 1 ns per
call, against 10-30 ns for first-class function values). The module name embeds a hash of every
source file the compiled code depends on (the template, the engine, the device models, the wire
format, each handler's whole module and every project-local module it imports, transitively), so
Numba's on-disk cache is reused across runs and an edited handler, or an edited helper it imports,
can never be served stale machine code. A damaged Numba cache entry is rebuilt
(``spin.caches``).
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType

import numba

from ..caches import cache_root, heal_numba_cache
from ..handler import HandlerProgram, _python_function
from ..source_digest import sources_digest

DISPATCH_MARKER = "from spin.engine._dispatch_default import dispatch_handler  # SPIN-DISPATCH"
# Lines importing names that the concatenated module defines itself.
TEMPLATE_MARKER = "# SPIN-TEMPLATE"
# Receive paths of each device kind: they call handlers, so they join the generated module
# (device code stays in its own folder).
DEVICE_TEMPLATES = ("nic_emulator/receive_template.py", "switch_emulator/receive_template.py")
_ROOT = Path(__file__).resolve().parents[2]
_ENGINE_SOURCES = ("spin/engine", "spin/wire", "spin/api.py", "spin/drops.py", "nic_emulator",
                   "switch_emulator")


def cache_dir() -> Path:
    """Where generated engines live: ``engines/`` under the spin cache root (``spin.caches``)."""
    path = cache_root() / "engines"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=1)
def _engine_source_digest() -> bytes:
    """Digest of the engine's own sources, read once per process (they do not change while it
    runs; a process that edits them must start a new one, as for any imported module)."""
    h = hashlib.sha256()
    for rel in _ENGINE_SOURCES:
        p = _ROOT / rel
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode())
            h.update(f.read_bytes())
    return h.digest()


def _handler_ref(fn) -> tuple[str, str, str]:
    """(module name, qualified name, module source) of a handler."""
    py = _python_function(fn)
    mod = sys.modules.get(py.__module__)
    try:
        src = inspect.getsource(mod) if mod is not None else inspect.getsource(py)
    except (OSError, TypeError):
        src = inspect.getsource(py)
    return py.__module__, py.__qualname__, src


def _dispatch_source(programs: list[HandlerProgram], boundscheck: bool) -> str:
    lines = ["import importlib as _importlib", "import sys as _sys", "",
             "def _resolve(module, qualname):",
             "    obj = _sys.modules[module] if module in _sys.modules else _importlib.import_module(module)",
             "    for part in qualname.split('.'):",
             "        obj = getattr(obj, part)",
             "    return getattr(obj, 'py_func', obj)", ""]
    branches = []
    for p, prog in enumerate(programs):
        for k, fn in enumerate(prog.handlers()):
            if fn is None:
                continue
            module, qualname, _ = _handler_ref(fn)
            # handlers always index with bounds checks: a wrong index stops the run with a
            # HandlerError naming the handler instead of corrupting frames or the process
            lines.append(f"_h_{p}_{k} = nb.njit(boundscheck=True, _nrt=False)"
                         f"(_resolve({module!r}, {qualname!r}))")
            branches.append((p, k))
    lines += ["", "", "@nb.njit(cache=True, boundscheck=%s, _nrt=False, no_cpython_wrapper=True)"
              % boundscheck,
              "def dispatch_handler(kind, prog, inst, ctx, hmems, pkt):"]
    for p, prog in enumerate(programs):
        kinds = [k for (pp, k) in branches if pp == p]
        if not kinds:
            continue
        lines.append(f"    if prog == {p}:")
        for k in kinds:
            lines.append(f"        if kind == {k}:")
            lines.append(f"            return np.int64(_h_{p}_{k}(ctx, pkt, hmems[{p}][inst]))")
    lines.append("    return np.int64(-1)")
    return "\n".join(lines) + "\n"


def engine_module_source(programs: list[HandlerProgram], boundscheck: bool = False) -> tuple[str, str]:
    """Return (module name, source) of the engine for these programs."""
    template = (Path(__file__).parent / "loop_template.py").read_text()
    if DISPATCH_MARKER not in template:
        raise RuntimeError("engine template lost its dispatch marker")
    parts = [template] + [(_ROOT / rel).read_text() for rel in DEVICE_TEMPLATES]
    source = "\n".join("\n".join(line for line in part.splitlines() if TEMPLATE_MARKER not in line)
                       for part in parts)
    dispatch = _dispatch_source(programs, boundscheck)
    source = source.replace(DISPATCH_MARKER, dispatch)
    if boundscheck:
        source = source.replace("@nb.njit(cache=True, _nrt=False",
                                "@nb.njit(cache=True, boundscheck=True, _nrt=False")
    h = hashlib.sha256()
    h.update(source.encode())
    h.update(numba.__version__.encode())
    h.update(_engine_source_digest())
    modules = []
    for prog in programs:
        for fn in prog.handlers():
            if fn is not None:
                module, qualname, src = _handler_ref(fn)
                h.update(f"{module}:{qualname}".encode())
                h.update(src.encode())
                modules.append(module)
    h.update(sources_digest(modules))  # what the handlers import, transitively
    name = f"spin_engine_{h.hexdigest()[:20]}"
    return name, source


def load_engine(programs: list[HandlerProgram], boundscheck: bool = False) -> ModuleType:
    """Import (generating if needed) the engine module for these handler programs."""
    heal_numba_cache()
    name, source = engine_module_source(programs, boundscheck)
    if name in sys.modules:
        return sys.modules[name]
    directory = cache_dir()
    path = directory / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
