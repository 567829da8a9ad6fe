"""Which of spin's files hold compiled code, derived from the registries rather than listed by
hand: the engine's own packages, each device kind's sources (``spin.engine.device_kinds``), each
transport's module (``spin.transports``), the handler ABI, and the few host-side modules with
cached ``njit`` functions. ``spin.caches`` keys Numba's cache on these files, so a source that
joins a registry is covered the moment it is registered (tests/test_caches_heal.py checks that
every module the engine links, and every cached jitted function of spin, is).

Nothing imported here holds compiled code: this runs when ``spin`` is imported, before any
module of spin decorates a function with Numba.
"""
from __future__ import annotations

from pathlib import Path

from .engine.device_kinds import DEVICE_KINDS
from .errors import ConfigError
from .transports import SHIPPED

ROOT = Path(__file__).resolve().parents[1]

# The engine core and what its compiled code reads (constants, the handler API and its ABI,
# the port-selection API that schemes compile against, and the transports' registry, whose
# order gives the engine's transport codes and the order of their columns).
ENGINE_SOURCES = ("spin/engine", "spin/wire", "spin/jit.py", "spin/api.py",
                  "spin/port_selection.py", "spin/transports.py")
# Host-side modules with cached compiled functions of their own: schemes' generated entries,
# capture drain, the endpoint link and the frames exchanged between workers.
HOST_SOURCES = ("spin/assembly/scheme_entries.py", "spin/results/capture.py",
                "spin/runtime/endpoint_link.py", "spin/runtime/fabric_frames.py")


def module_path(module: str) -> str:
    """The file of a module of this project, relative to its root, found without importing it
    (importing would decorate its functions before Numba's cache folder is chosen)."""
    rel = module.replace(".", "/")
    for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate
    raise ConfigError(f"compiled source {module!r}: no file {rel}.py or {rel}/__init__.py under "
                      f"{ROOT}; registered modules must be part of this project")


def compiled_sources() -> tuple[str, ...]:
    """Every file or folder holding compiled code, relative to the project root, each once, in
    registration order."""
    sources = [*ENGINE_SOURCES]
    for kind in DEVICE_KINDS:
        sources += kind.templates + kind.sources
    # spin's own transports (those of installed packages are compiled apart, keyed by their
    # own sources: spin.assembly.transport_entries), and the engine's side of those apart
    sources += [module_path(t.module) for t in SHIPPED]
    sources += [module_path("nic_emulator.transports.apart")]
    sources += HOST_SOURCES
    return tuple(dict.fromkeys(sources))
