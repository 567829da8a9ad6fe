"""Cached machine code loads with its symbols read from the object code: the same symbols
Numba lists from the bitcode, the bitcode parsed only when a new compile links the function."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spin.cached_machine_code import defined_symbols

ROOT = Path(__file__).resolve().parents[1]

CACHED = textwrap.dedent("""
    import numba
    import numpy as np

    @numba.njit(cache=True)
    def histogram(values, bins):
        counts = np.zeros(bins, np.int64)
        for v in values:
            counts[v % bins] += 1
        return counts

    @numba.njit(cache=True)
    def scaled(x):
        return 3 * x + 1
""")

# Loads both functions from the cache, then compiles a new function that calls `scaled`
# (Numba links the cached library's bitcode into it).
LOADER = textwrap.dedent("""
    import json
    import numba
    import numpy as np
    import llvmlite.binding as ll
    import spin.cached_machine_code as code
    from spin.caches import heal_numba_cache
    heal_numba_cache()
    read = []   # the symbols read from each object code loaded
    numba_defined_symbols = code.defined_symbols
    code.defined_symbols = lambda obj: read.append(numba_defined_symbols(obj)) or read[-1]
    import cached_probe as m

    counts = m.histogram(np.arange(10, dtype=np.int64), 4)
    first = m.scaled(5)
    assert m.histogram.stats.cache_hits and m.scaled.stats.cache_hits, "not from the cache"
    library = m.scaled.overloads[next(iter(m.scaled.overloads))].library
    parsed_on_load = library._shared_module is not None

    @numba.njit
    def caller(x):
        return m.scaled(x) + 1

    linked = caller(4)
    symbols = {}
    for f in (m.histogram, m.scaled):   # (the runtime's own cached module is read too)
        from_object = next(r for r in read if any(f.__name__ in name for name in r))
        lib = f.overloads[next(iter(f.overloads))].library
        bitcode = lib._get_module_for_linking()
        from_bitcode = {g.name for gs in (bitcode.functions, bitcode.global_variables)
                        for g in gs if not g.is_declaration}
        symbols[f.__name__] = [sorted(from_bitcode), sorted(from_object)]
    print(json.dumps({"counts": counts.tolist(), "scaled": first, "linked": linked,
                      "class": type(library).__name__, "parsed_on_load": parsed_on_load,
                      "symbols": symbols}))
""")


def _python(code: str, d: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "SPIN_"))}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(d), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, cwd=d)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF object code: Linux only")
def test_a_cached_function_loads_without_its_bitcode_and_still_links(tmp_path):
    import json
    (tmp_path / "cached_probe.py").write_text(CACHED)
    cache = tmp_path / "numba-cache"
    _python("import numpy as np, cached_probe as m\n"
            "m.histogram(np.arange(3, dtype=np.int64), 2); m.scaled(1)", tmp_path, cache)
    got = json.loads(_python(LOADER, tmp_path, cache).stdout.strip().splitlines()[-1])
    assert got["counts"] == [3, 3, 2, 2]
    assert got["scaled"] == 16 and got["linked"] == 14
    assert got["class"].startswith("BitcodeOnDemand") and not got["parsed_on_load"]
    assert set(got["symbols"]) == {"histogram", "scaled"}
    for name, (from_bitcode, from_object) in got["symbols"].items():
        assert from_bitcode and from_object == from_bitcode, name


def test_object_code_of_another_format_is_left_to_numba():
    assert defined_symbols(b"\xcf\xfa\xed\xfe" + bytes(60)) is None   # Mach-O
    assert defined_symbols(b"\x7fELF\x01\x01" + bytes(60)) is None    # ELF32
