"""Multi-process layer: workers exchanging frame batches under conservative synchronisation.

Engine-agnostic: an engine implements ``WorkerProgram`` and is built in each worker by a factory
``"module:function"(spec, worker_id, n_workers)``. Run with ``run_fabric`` (local processes,
optionally remote workers over CurveZMQ, or the ranks of a cluster launcher: ``Launched``,
spin.parallel.launchers) or ``run_single`` (one worker, in process, no zmq).
"""

from importlib import import_module

# name -> its module; each is imported on first use (PEP 562), so that a one-process run,
# which needs only spin.parallel.progress, does not start ZeroMQ and the coordinator
_MODULES = {
    "FrameBatch": "spin.parallel.batch",
    "Coordinator": "spin.parallel.coordinator",
    "CoordinatorConfig": "spin.parallel.coordinator",
    "Deferred": "spin.parallel.coordinator",
    "Launched": "spin.parallel.coordinator",
    "run_fabric": "spin.parallel.coordinator",
    "RunOutcome": "spin.parallel.outcome",
    "WorkerOutcome": "spin.parallel.outcome",
    "INF_PS": "spin.parallel.program",
    "WorkerProgram": "spin.parallel.program",
    "load_factory": "spin.parallel.program",
    "worker_factory": "spin.parallel.program",
    "SyncOutcome": "spin.parallel.sync",
    "run_single": "spin.parallel.sync",
}


def __getattr__(name: str):
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'spin.parallel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULES))


__all__ = [
    "INF_PS",
    "Coordinator",
    "CoordinatorConfig",
    "Deferred",
    "FrameBatch",
    "Launched",
    "RunOutcome",
    "SyncOutcome",
    "WorkerOutcome",
    "WorkerProgram",
    "load_factory",
    "run_fabric",
    "run_single",
    "worker_factory",
]
