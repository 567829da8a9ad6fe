"""Multi-process layer: workers exchanging frame batches under conservative synchronisation.

Engine-agnostic: an engine implements ``WorkerProgram`` and is built in each worker by a factory
``"module:function"(spec, worker_id, n_workers)``. Run with ``run_fabric`` (local processes,
optionally remote workers over CurveZMQ, or the ranks of a cluster launcher: ``Launched``,
spin.parallel.launchers) or ``run_single`` (one worker, in process, no zmq).
"""

from spin.parallel.batch import FrameBatch
from spin.parallel.coordinator import (
    Coordinator,
    CoordinatorConfig,
    Deferred,
    Launched,
    run_fabric,
)
from spin.parallel.outcome import RunOutcome, WorkerOutcome
from spin.parallel.program import INF_PS, WorkerProgram, load_factory, worker_factory
from spin.parallel.sync import SyncOutcome, run_single

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
