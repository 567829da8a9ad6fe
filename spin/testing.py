"""pytest plugin and helpers for asserting offload benefits (active after ``pip install``,
through the ``pytest11`` entry point).

Fixtures:

* ``spin_workers`` — a worker count; a test that uses it (directly or through ``spin_runner``)
  runs once per count given by ``--spin-workers`` (default ``1,2``).
* ``spin_runner`` — a ``Runner`` bound to that count: ``run``, ``run_both`` and ``compare``.

Helpers (``spin.runs``, usable without pytest; re-exported here): ``run``, ``run_both``,
``compare``. Memory to read back after
a run is named as ``(node, addr, count, dtype)`` tuples and read with ``RunResult.read``.
Results never depend on the worker count (virtual time), so a benefit asserted with one worker
holds with any; ``run_both`` checks exactly that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import pytest

from .results.compare import Metrics, OffloadComparison
from .results import RunResult
from .runs import Read, compare, run, run_both

if TYPE_CHECKING:                      # spin.simulation pulls in Numba: not at pytest start-up
    from .describe.scenario import Scenario

__all__ = ["Metrics", "OffloadComparison", "Runner", "compare", "run", "run_both"]

DEFAULT_WORKERS = (1, 2)


@dataclass(frozen=True)
class Runner:
    """``run``, ``run_both`` and ``compare`` with the worker count of the current test."""

    workers: int

    def run(self, scenario: Scenario, *, read: Iterable[Read] = (), **kw) -> RunResult:
        """``spin.testing.run`` with this test's worker count."""
        return run(scenario, self.workers, read=read, **kw)

    def run_both(self, scenario: Scenario, *, read: Iterable[Read] = (), **kw) -> RunResult:
        """Run on 1 and on ``max(2, workers)`` processes and check they agree."""
        return run_both(scenario, max(2, self.workers), read=read, **kw)

    def compare(self, baseline: Scenario, offload: Scenario, **kw) -> OffloadComparison:
        """``spin.testing.compare`` with this test's worker count."""
        return compare(baseline, offload, workers=self.workers, **kw)


# --- pytest hooks ---------------------------------------------------------------------------------
def pytest_addoption(parser) -> None:
    """``--spin-workers N,M``."""
    group = parser.getgroup("spin", "spin offload emulator")
    group.addoption("--spin-workers", default=",".join(map(str, DEFAULT_WORKERS)),
                    metavar="N,M", help="worker counts the spin_workers / spin_runner fixtures "
                    "run each test with (default 1,2)")


def _worker_counts(config) -> list[int]:
    raw = config.getoption("--spin-workers")
    try:
        counts = [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or any(n < 1 for n in counts):
        raise pytest.UsageError(f"--spin-workers={raw!r}: expected worker counts >= 1 "
                                f"separated by commas, e.g. 1,2")
    return counts


def pytest_generate_tests(metafunc) -> None:
    """Parametrise every test that uses ``spin_workers`` over the worker counts."""
    if "spin_workers" in metafunc.fixturenames:
        counts = _worker_counts(metafunc.config)
        metafunc.parametrize("spin_workers", counts, ids=[f"{n}w" for n in counts])


@pytest.fixture
def spin_workers(request) -> int:
    """A worker count (parametrised by ``pytest_generate_tests``)."""
    return request.param


@pytest.fixture
def spin_runner(spin_workers: int) -> Runner:
    """Run, run on several worker counts, and compare baseline with offload."""
    return Runner(spin_workers)
