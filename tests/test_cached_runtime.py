"""Numba's runtime module is compiled once, cached, and loaded from the cache afterwards; a
damaged cache file is compiled anew and replaced, and the runtime works either way."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Starts the runtime as spin does, then runs a function that allocates, fills and frees arrays
# through it. With FORBID_COMPILE set, compiling the runtime module fails the process.
PROBE = textwrap.dedent("""
    import os
    import numpy as np
    from numba.core.runtime import nrtdynmod
    if os.environ.get("FORBID_COMPILE"):
        def refuse(*args):
            raise AssertionError("the runtime module was compiled, not loaded")
        nrtdynmod.create_nrt_module = refuse
    from spin.caches import heal_numba_cache, start_numba_runtime
    heal_numba_cache()
    start_numba_runtime()
    import numba

    @numba.njit
    def squares(n):
        out = [np.arange(k) ** 2 for k in range(1, n)]
        return sum([a.sum() for a in out])

    print(squares(40))
""")
EXPECTED = str(sum(sum(i * i for i in range(k)) for k in range(1, 40)))


def _probe(cache: Path, forbid_compile: bool = False) -> str:
    env = {**os.environ, "SPIN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("NUMBA_CACHE_DIR", None)
    if forbid_compile:
        env["FORBID_COMPILE"] = "1"
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _cached_files(cache: Path) -> list[Path]:
    return sorted((cache / "runtime").glob("nrt-*.pickle"))


def test_runtime_is_compiled_once_then_loaded(tmp_path):
    assert _probe(tmp_path) == EXPECTED
    files = _cached_files(tmp_path)
    assert len(files) == 1 and files[0].stat().st_size > 1000
    assert _probe(tmp_path, forbid_compile=True) == EXPECTED


def test_damaged_runtime_file_is_compiled_again_and_replaced(tmp_path):
    _probe(tmp_path)
    (path,) = _cached_files(tmp_path)
    good = path.read_bytes()
    for damage in (b"", good[: len(good) // 2], b"\x80\x04not a pickle"):
        path.write_bytes(damage)
        assert _probe(tmp_path) == EXPECTED
        assert path.read_bytes() != damage     # replaced: the next process loads it
        assert _probe(tmp_path, forbid_compile=True) == EXPECTED
