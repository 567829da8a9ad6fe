"""A cached `spin run` loads only what the run needs: the modules of the scenario's own features
and no other command's, and its machine code from the cache without Numba's compiler (whose
registries, and scipy with them where installed, cost a few tenths of a second to load).
Behaviour only: how long start-up takes is `spin bench`'s to report."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs `spin run ARGS...` in this process (counting refreshes of Numba's compiler contexts), then
# prints the status, the count and the modules loaded among those a small run does not need.
PROBE = """
import sys
from numba.core import base

refreshed = []
numba_refresh = base.BaseContext.refresh


def refresh(self):
    refreshed.append(type(self).__name__)
    return numba_refresh(self)


base.BaseContext.refresh = refresh
import spin.cli

status = spin.cli.main(["run", *sys.argv[1:]])
unneeded = {unneeded!r}
loaded = sorted(m for m in sys.modules if m in unneeded or m.split(".")[0] in unneeded
                or m.startswith(tuple(u + "." for u in unneeded)))
print("status", status, "refreshes", len(refreshed))
print("loaded", " ".join(loaded) or "none")
"""

# What a one-process run of a small scenario, without captures written, plots, endpoints or a
# workload, has no use for.
UNNEEDED = ("scapy", "zmq", "matplotlib", "pandas", "networkx", "pymetis",
            "spin.collectives", "spin.training", "spin.endpoint", "spin.parallel.coordinator")


def _probe(*args: str) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(unneeded=UNNEEDED), *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    status_line, loaded_line = out.stdout.strip().splitlines()[-2:]
    return status_line, loaded_line


def test_a_cached_small_run_loads_its_code_without_the_compiler_or_unused_modules():
    _probe("examples/pingpong.toml", "--quiet")   # compiles whatever this checkout has not cached
    status, loaded = _probe("examples/pingpong.toml")
    assert status == "status 0 refreshes 0"
    assert loaded == "loaded none"
