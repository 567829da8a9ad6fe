"""How a process that is a spin command starts (``spin``, ``python -m spin``;
``bench/bench_scale.py`` times its runs started the same way). Not for a library call: it would
change its caller's process.

- OpenBLAS's worker threads. Importing NumPy starts one per core, and each spins for about
  0.1 s of CPU before it sleeps. spin calls no BLAS routine, so the threads only take a core
  from the start-up on a busy machine. ``OPENBLAS_NUM_THREADS=1`` (no worker thread) unless the
  user set it, before NumPy is imported.
- The cyclic garbage collector. Importing spin's modules, Numba's and pydantic's makes some
  10^5 objects that live as long as the process (classes, functions, Numba's types); the
  collector walked them in two full passes and some 300 young ones, about 0.1 s of a
  1,024-host run. ``imports_paused`` holds the collector off while the command's imports run,
  then freezes what exists (``gc.freeze``: later passes skip it; reference counting still frees
  it) and turns the collector on again, so the run's own garbage is collected as before. The
  cycles made during the imports (some 600 objects) are never collected.
"""
from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from typing import Iterator


def single_blas_thread() -> None:
    """``OPENBLAS_NUM_THREADS=1`` unless set, and only while NumPy is not yet imported (it is
    read once, when OpenBLAS loads)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@contextmanager
def imports_paused() -> Iterator[None]:
    """No collection inside; on leaving, what exists is frozen and the collector is on again
    (if it was on)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_on:
            gc.enable()
