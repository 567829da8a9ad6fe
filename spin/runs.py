"""Run a scenario and read host memory back; run it on 1 and N workers and check that they
agree; run a baseline and an offloaded variant and compare them. Plain library functions (``spin.testing`` re-exports them for pytest users): measuring
code such as ``spin.collectives`` uses them without pytest installed."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

from .results.compare import OffloadComparison
from .errors import ConfigError, DeterminismError
from .results import RunResult

if TYPE_CHECKING:                      # spin.simulation pulls in Numba: not at pytest start-up
    from .describe.scenario import Scenario

__all__ = ["Read", "compare", "run", "run_both"]

Read = tuple[int, int, int, str]      # (node, addr, count, dtype) of host memory


def _regions(read: Iterable[Read]) -> tuple[tuple[int, int, int], ...]:
    import numpy as np                 # not at pytest start-up: most sessions never run spin
    out = []
    for r in read:
        if len(r) != 4:
            raise ConfigError(f"read={r!r}: expected (node, addr, count, dtype)")
        node, addr, count, dtype = r
        out.append((int(node), int(addr), int(count) * np.dtype(dtype).itemsize))
    return tuple(out)


def run(scenario: Scenario, workers: int = 1, *, read: Iterable[Read] = (), debug: bool = False,
        **kw) -> RunResult:
    """Run ``scenario`` on ``workers`` processes; host memory named in ``read`` comes back in
    the result (``result.read(node, addr, count, dtype)``). ``debug`` runs the handlers as
    plain Python (print, pdb, tracebacks naming the failing line; same results, slower).
    ``kw`` go to ``run_scenario``."""
    from .runtime.fabric import run_scenario
    if debug:
        scenario = scenario.with_debug_handlers()
    return run_scenario(scenario, workers, regions=_regions(read), **kw)


def run_both(scenario: Scenario, workers: int = 2, *, read: Iterable[Read] = (), **kw) -> RunResult:
    """Run on 1 and on ``workers`` processes; raise ``DeterminismError`` unless results and the
    memory read back are identical. Returns the single-process result."""
    read = tuple(read)
    scenario = replace(scenario, engine=scenario.engine.model_copy(
        update={"host_memory_digests": True}))      # compare every host's memory too
    one = run(scenario, 1, read=read, **kw)
    many = run(scenario, workers, read=read, **kw)
    if one.deterministic_digest() != many.deterministic_digest():
        a, b = one.to_dict(include_wall=False), many.to_dict(include_wall=False)
        diff = [k for k in a if a[k] != b.get(k)]
        raise DeterminismError(f"results with 1 and {workers} workers differ in {diff}")
    for r in read:
        if one.read(*r).tobytes() != many.read(*r).tobytes():
            raise DeterminismError(f"host memory {r} differs between 1 and {workers} workers")
    return one


def compare(baseline: Scenario, offload: Scenario, *, workers: int = 1,
            read: Iterable[Read] = (), done: str | None = "done", start: str | None = "start",
            node: int | str | None = None, title: str = "") -> OffloadComparison:
    """Run the host-based ``baseline`` and the ``offload`` variant of a workload and compare
    them. Completion runs from mark ``start`` to mark ``done``: by default from the earliest
    ``start`` of any host to the latest ``done`` of any host; with ``node`` (node id or host
    name), on that host's marks only (``spin.results.compare.Metrics.of``). The comparison's table
    prints what was measured. The results, with the memory named in ``read``, stay available
    as ``.baseline_result`` and ``.offload_result``."""
    read = tuple(read)
    b = run(baseline, workers, read=read)
    o = run(offload, workers, read=read)
    return OffloadComparison.of(b, o, done=done, start=start, node=node, title=title)
