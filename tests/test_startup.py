"""A cached `spin run` loads only what the run needs: the modules of the scenario's own features
and no other command's, and its machine code from the cache without Numba's compiler (whose
registries, and scipy with them where installed, cost a few tenths of a second to load).
Behaviour only: how long start-up takes is `spin bench`'s to report."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

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

status = spin.cli.main(sys.argv[1:])
unneeded = {unneeded!r}
loaded = sorted(m for m in sys.modules if m in unneeded or m.split(".")[0] in unneeded
                or m.startswith(tuple(u + "." for u in unneeded)))
print("status", status, "refreshes", len(refreshed))
print("loaded", " ".join(loaded) or "none")
"""

# What a one-process run of a small scenario, without captures written, plots, endpoints or a
# workload, has no use for.
UNNEEDED = ("tqdm", "scapy", "zmq", "matplotlib", "pandas", "networkx", "pymetis",
            "spin.collectives", "spin.training", "spin.loadbalancing", "spin.workloads",
            "spin.endpoint", "spin.parallel.coordinator")


def _probe(*args: str, unneeded: tuple[str, ...] = UNNEEDED) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(unneeded=unneeded), *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    status_line, loaded_line = out.stdout.strip().splitlines()[-2:]
    return status_line, loaded_line


def test_a_cached_small_run_loads_its_code_without_the_compiler_or_unused_modules():
    _probe("run", "examples/pingpong.toml", "--quiet")   # compiles what this checkout has not cached
    status, loaded = _probe("run", "examples/pingpong.toml")
    assert status == "status 0 refreshes 0"
    assert loaded == "loaded none"


# What a one-process `spin lb` run of an htsim scenario has no use for: ZeroMQ (no workers, no
# endpoints), the collectives and training packages.
UNNEEDED_BY_LB = ("tqdm", "scapy", "zmq", "matplotlib", "pandas", "spin.collectives",
                  "spin.training", "spin.endpoint.client", "spin.parallel.coordinator")


def test_a_cached_htsim_lb_run_loads_neither_zeromq_nor_other_commands_packages():
    args = ("lb", "--preset", "htsim", "--topo-file", "examples/htsim/fat_tree_16.topo",
            "--cm", "examples/htsim/chains_8.cm", "--schemes", "ecmp")
    _probe(*args, unneeded=UNNEEDED_BY_LB)
    status, loaded = _probe(*args, unneeded=UNNEEDED_BY_LB)
    assert status == "status 0 refreshes 0"
    assert loaded == "loaded none"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet, terminal, shown", [(False, True, True), (False, False, False),
                                                     (True, True, False)])
def test_the_progress_bar_starts_when_due_on_a_terminal_only(monkeypatch, quiet, terminal, shown):
    """The bar (and tqdm with it) starts once a run has lasted BAR_DELAY_S, on a terminal;
    never when quiet, nor where stderr is no terminal (tqdm would show nothing there either)."""
    from spin.parallel import progress as P
    from spin.units import NS
    clock = [100.0]
    monkeypatch.setattr(P.time, "perf_counter", lambda: clock[0])
    stream = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(P.sys, "stderr", stream)
    bar = P.Progress(10_000 * NS, quiet=quiet)
    bar.update(1_000 * NS, events=10)
    assert stream.getvalue() == ""                       # not due yet
    clock[0] += P.BAR_DELAY_S
    bar.update(2_000 * NS, events=20)
    bar.close()
    assert ("virtual time" in stream.getvalue()) == shown
    assert bar.setup_s >= 0.0
