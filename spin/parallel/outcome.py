"""What a multi-process run returns: each worker's result and counters, and the run's totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spin.errors import TransportError
from spin.parallel.members import Member


@dataclass(frozen=True)
class WorkerOutcome:
    worker_id: int
    pid: int
    host: str
    description: str
    result: dict
    rounds: int
    events: int
    loop_wall_s: float  # wall time of the worker's round loop
    stats: dict[str, Any]  # the worker's TransportStats


@dataclass(frozen=True)
class RunOutcome:
    results: tuple[dict, ...]  # program.result() of each worker, by worker id (JSON-decoded)
    workers: tuple[WorkerOutcome, ...]
    rounds: int
    end_ps: int  # final global bound (INF_PS when everything went idle)
    wall_s: float  # whole run, spawn to last result
    loop_wall_s: float  # slowest worker's round loop (excludes start-up and program build)
    transport: dict[str, Any]  # TransportStats summed over workers, plus "rounds"
    epoch: int
    control_rejected: dict[str, int] = field(default_factory=dict)  # junk control messages, by reason


def run_outcome(members: list[Member], epoch: int, wall_s: float) -> RunOutcome:
    """The run's outcome from every worker's result; the workers must agree on the rounds."""
    outs = [m.outcome for m in members]
    assert all(o is not None for o in outs)
    rounds = {o.rounds for o in outs}
    if len(rounds) != 1:
        raise TransportError(f"workers disagree on the number of rounds: {sorted(rounds)}")
    transport: dict[str, Any] = {}
    for o in outs:
        for k, v in o.stats.items():
            if isinstance(v, dict):  # counters by reason
                sub = transport.setdefault(k, {})
                for r, n in v.items():
                    sub[r] = sub.get(r, 0) + n
            else:
                transport[k] = transport.get(k, 0) + v
    transport["rounds"] = outs[0].rounds
    return RunOutcome(
        results=tuple(o.result for o in outs),
        workers=tuple(outs),
        rounds=outs[0].rounds,
        end_ps=members[0].beat.get("end_ps", 0),
        wall_s=wall_s,
        loop_wall_s=max(o.loop_wall_s for o in outs),
        transport=transport,
        epoch=epoch,
    )
