"""Generate, cache and import the engine module: one per spin version (and bounds-check mode).

The engine (event loop, device receive paths, transports, load balancing) is one module made by
concatenating the loop template with each device kind's templates and the parts generated from
registries (the dispatch over device kinds, ``spin.engine.device_kinds``; over the NIC's
transports, ``nic_emulator.transports``; over the switch's port-selection schemes,
``switch_emulator.lb``), so that everything
on the per-packet path is compiled, and optimised, as a unit. Its name embeds a digest of every
engine source, so Numba's on-disk cache serves it across runs and an edited engine file can
never be served stale machine code. Handlers are not in it: they are compiled apart
(``spin.engine.handler_build``) and called through their entry's address, so a new or edited
handler never recompiles the engine. A damaged Numba cache entry is rebuilt (``spin.caches``).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numba

from ..caches import cache_root, heal_numba_cache, sources_digest
from .device_kinds import templates as device_templates
from .generated import import_generated

# Lines importing names that the concatenated module defines itself.
TEMPLATE_MARKER = "# SPIN-TEMPLATE"
# Functions returning source generated from registries (imported when the engine is generated,
# never when spin is imported): the switch's port-selection dispatch, one static branch per
# scheme module of ``switch_emulator.lb``; the NIC's transport dispatch, one per transport
# registered in ``spin.transports.TRANSPORTS``.
GENERATED_PARTS = ("switch_emulator.routing:dispatch_source",
                   "nic_emulator.transports.dispatch:dispatch_source",
                   "spin.engine.device_kinds:dispatch_source")
_ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """Where generated engines live: ``engines/`` under the spin cache root (``spin.caches``)."""
    path = cache_root() / "engines"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=1)
def _engine_source_digest() -> bytes:
    """Digest of the engine's own sources, read once per process (they do not change while it
    runs; a process that edits them must start a new one, as for any imported module)."""
    return sources_digest(_ROOT)


@functools.lru_cache(maxsize=2)
def engine_module_source(boundscheck: bool = False) -> tuple[str, str]:
    """Return (module name, source) of the engine."""
    template = (Path(__file__).parent / "loop_template.py").read_text()
    parts = [template] + [(_ROOT / rel).read_text() for rel in device_templates()]
    parts += [_generated(ref) for ref in GENERATED_PARTS]
    source = "\n".join("\n".join(line for line in part.splitlines() if TEMPLATE_MARKER not in line)
                       for part in parts)
    if boundscheck:
        source = source.replace("@njit(cache=True, _nrt=False",
                                "@njit(cache=True, boundscheck=True, _nrt=False")
    h = hashlib.sha256()
    h.update(source.encode())
    h.update(numba.__version__.encode())
    h.update(_engine_source_digest())
    return f"spin_engine_{h.hexdigest()[:20]}", source


def _generated(ref: str) -> str:
    """The source returned by the function ``module:name``."""
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)()


def engine_lock_path(boundscheck: bool = False) -> Path:
    """Lock file held while the engine is compiled: the first process compiles, others wait and
    then load it from the cache (two pytest workers never compile it twice)."""
    name, _ = engine_module_source(boundscheck)
    return cache_dir() / f"{name}.lock"


def load_engine(boundscheck: bool = False) -> ModuleType:
    """Import (generating if needed) the engine module. Its functions compile on first call."""
    heal_numba_cache()
    name, source = engine_module_source(boundscheck)
    if name in sys.modules:
        return sys.modules[name]
    return import_generated(cache_dir(), name, source)
