"""Numba's runtime module from the cache instead of compiled in every process.

Starting Numba's runtime (NRT) compiles a small LLVM module (reference counting, atomics, the
abort for unresolved symbols) with the optimiser and code generator: about 17 ms of every
process that loads cached machine code, on a 2-core VM, for the same machine code each time.
``runtime_library`` compiles it once per Numba version and CPU, stores its object code and
bitcode in a cache folder (``runtime/`` of the spin cache, ``spin.caches``) and loads that
afterwards (about 2 ms), as Numba loads any cached function. A file that cannot be read or
does not define the module's symbols is compiled anew and replaced.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable

from .cached_machine_code import defined_symbols

# what the runtime module defines (numba.core.runtime.nrtdynmod), checked on load
RUNTIME_SYMBOLS = frozenset({"nrt_atomic_add", "nrt_atomic_sub", "nrt_atomic_cas",
                             "NRT_MemInfo_data_fast", "NRT_incref", "NRT_decref",
                             "nrt_unresolved_abort"})


def runtime_cache_path(folder: Path, codegen) -> Path:
    """The cached runtime in ``folder`` for this Numba, llvmlite and CPU
    (``codegen.magic_tuple()``: triple, CPU name and features, what Numba's own cache index
    keys on)."""
    import llvmlite
    import numba
    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple()))
    return folder / f"nrt-{hashlib.sha256(key.encode()).hexdigest()[:20]}.pickle"


def _compile(context):
    from numba.core.runtime import nrtdynmod
    module, library = nrtdynmod.create_nrt_module(context)
    library.enable_object_caching()
    library.add_ir_module(module)
    library.finalize()
    return library


def _load(codegen, path: Path):
    """The cached library at ``path``, or None when it is missing or unusable."""
    try:
        state = pickle.loads(path.read_bytes())
        name, kind, (object_code, _bitcode) = state
        symbols = defined_symbols(object_code)
        if kind != "object" or (symbols is not None and not RUNTIME_SYMBOLS <= symbols):
            return None
        return codegen.unserialize_library(state)
    except FileNotFoundError:
        return None
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except Exception:  # noqa: BLE001  (any unreadable file is a miss: compiled and replaced)
        return None


def _store(library, path: Path) -> None:
    """Write atomically: a reader sees the old file or the whole new one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(library.serialize_using_object_code(), f)
        os.replace(tmp, path)
    except OSError:
        pass   # a read-only cache: compiled again next time, as before


def runtime_library(context, folder: Path):
    """Numba's runtime library for ``context``: cached in ``folder``, else compiled and
    cached there."""
    codegen = context.codegen()
    path = runtime_cache_path(folder, codegen)
    library = _load(codegen, path)
    if library is None:
        library = _compile(context)
        _store(library, path)
    return library


def load_runtime_from_cache(folder: Callable[[], Path]) -> None:
    """Make Numba's runtime start with ``runtime_library``, cached in ``folder()`` (read when
    the runtime starts). Idempotent; a Numba without the function replaced here keeps
    compiling its own."""
    from numba.core.runtime import nrtdynmod
    compile_functions = getattr(nrtdynmod, "compile_nrt_functions", None)
    if compile_functions is None or getattr(compile_functions, "__spin__", False):
        return

    def compile_nrt_functions(context):
        return runtime_library(context, folder())

    compile_nrt_functions.__spin__ = True
    nrtdynmod.compile_nrt_functions = compile_nrt_functions
