"""Conservative synchronisation: the round loop every worker runs, identical on all of them.

Each round all workers agree on T, the global lower bound on any pending event or frame in flight.
A worker runs its events with time < T + lookahead (no peer can send it anything earlier, since
every crossing link is at least lookahead long), then exchanges exactly one message with every
peer: its frames for that peer plus its own new bound. The next T is the minimum of all bounds
sent, so every worker computes the same T without a central coordinator, idle workers jump ahead,
and the loop ends in the same round everywhere.

Peers are checked, not trusted: before the program sees a peer's frames, each batch must pass
the program's ``admit`` or, for programs without one, the generic check (lengths within the slots,
arrivals at or after the round end: no frame from the past); a bound below the round end is
raised to it, so virtual time never runs backwards. Every refusal is counted by reason on the
exchange's ``stats``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from spin.errors import ConfigError, SpinError
from spin.parallel.batch import FrameBatch, check_frames
from spin.parallel.program import INF_PS, WorkerProgram, events_processed


@dataclass(frozen=True)
class Inbox:
    """What one exchange returns: peer frames in sender order, and every worker's bound."""

    batches: Sequence[FrameBatch]
    bounds_ps: Sequence[int]  # one per worker, own included
    lookaheads_ps: Sequence[int]  # one per worker, own included
    senders: Sequence[int] = ()  # worker id of each batch


class Exchange(Protocol):
    """Sends one message to every peer and returns one message from every peer, for a round."""

    def exchange(
        self, round_no: int, outgoing: dict[int, FrameBatch], bound_ps: int, lookahead_ps: int
    ) -> Inbox: ...


@dataclass(frozen=True)
class SyncOutcome:
    rounds: int  # rounds that ran events (the start-up exchange is not counted)
    end_ps: int  # the final global bound T (INF_PS if everything went idle)
    wall_s: float  # wall time of the round loop alone
    cpu_s: float  # CPU time of this process (all threads, zmq's included) in the round loop
    events: int  # program.events_processed() at the end (0 if not provided)
    rejected: dict[str, int] = field(default_factory=dict)  # peer batches refused, by reason


class Rejects:
    """Refusal counters, for exchanges that keep none of their own."""

    def __init__(self) -> None:
        self.rejected: dict[str, int] = {}
        self.rejected_frames = 0

    def reject(self, reason: str, frames: int = 0) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.rejected_frames += frames


RoundCallback = Callable[[int, int, int], None]  # (T_ps, rounds, events)


class SoloExchange:
    """The exchange of a 1-worker run: nobody to talk to."""

    def exchange(
        self, round_no: int, outgoing: dict[int, FrameBatch], bound_ps: int, lookahead_ps: int
    ) -> Inbox:
        return Inbox(batches=(), bounds_ps=(bound_ps,), lookaheads_ps=(lookahead_ps,))


def _check_outgoing(outgoing: dict[int, FrameBatch], worker_id: int, n_workers: int, t_end: int) -> int:
    """Validate destinations and causality; return the earliest arrival sent (INF_PS if none)."""
    earliest = INF_PS
    for dst, batch in outgoing.items():
        if not isinstance(dst, int) or not 0 <= dst < n_workers or dst == worker_id:
            raise SpinError(
                f"worker {worker_id} produced frames for worker {dst!r}; valid peers are "
                f"{[w for w in range(n_workers) if w != worker_id]}"
            )
        first = batch.min_arrival_ps(INF_PS)
        if first < t_end:
            raise SpinError(
                f"worker {worker_id} sent a frame arriving at {first} ps, before the round end "
                f"{t_end} ps: a crossing link is shorter than lookahead_ps()"
            )
        earliest = min(earliest, first)
    return earliest


def run_rounds(
    program: WorkerProgram,
    exchange: Exchange,
    worker_id: int,
    n_workers: int,
    until_ps: int | None = None,
    on_round: RoundCallback | None = None,
) -> SyncOutcome:
    """Run the program to completion (T == INF_PS) or until T >= until_ps."""
    limit = INF_PS if until_ps is None else min(int(until_ps), INF_PS)
    stats = getattr(exchange, "stats", None) or Rejects()
    own_look = int(program.lookahead_ps())
    started, cpu = time.perf_counter(), time.process_time()
    inbox = exchange.exchange(0, {}, int(program.next_event_ps()), own_look)
    look = min(inbox.lookaheads_ps)
    if n_workers > 1 and look <= 0:
        raise ConfigError(f"lookahead_ps must be > 0 with {n_workers} workers, got {look}")
    look = max(look, 1)
    t = min(inbox.bounds_ps)
    rounds = 0
    while t < limit:
        t_end = min(t + look, limit)
        outgoing = program.run_until(t_end)
        sent_first = _check_outgoing(outgoing, worker_id, n_workers, t_end)
        own_next = int(program.next_event_ps())
        if own_next < t_end:
            raise SpinError(f"worker {worker_id}: next_event_ps()={own_next} after run_until({t_end})")
        rounds += 1
        inbox = exchange.exchange(rounds, outgoing, min(own_next, sent_first), own_look)
        if inbox.batches:
            good = admit_batches(inbox, program, stats, t_end)
            if good:  # batches the program's own admit() passed need not be checked again
                deliver = getattr(program, "deliver_admitted", None) if hasattr(program, "admit") \
                    else None
                (deliver or program.deliver)(good[0] if len(good) == 1 else FrameBatch.concat(good))
        t = min(inbox.bounds_ps)
        if t < t_end:  # only a broken or hostile peer announces a bound in the past
            stats.reject("bound_in_past")
            t = t_end
        after = int(program.next_event_ps())
        if after < t:
            raise SpinError(f"worker {worker_id}: after delivery next_event_ps()={after} < global bound {t}")
        if on_round is not None:
            on_round(t, rounds, events_processed(program))
    return SyncOutcome(
        rounds=rounds, end_ps=t, wall_s=time.perf_counter() - started, cpu_s=time.process_time() - cpu,
        events=events_processed(program),
        rejected=dict(stats.rejected),
    )


def admit_batches(inbox: Inbox, program: WorkerProgram, stats, t_end: int) -> list[FrameBatch]:
    """The peers' batches that pass the generic checks and the program's own; others counted."""
    admit = getattr(program, "admit", None)
    good = []
    for sender, batch in zip(inbox.senders, inbox.batches):
        if not batch.n:
            continue
        reason = check_frames(batch, t_end) if admit is None else admit(batch, sender, t_end)
        if reason is None:
            good.append(batch)
        else:
            stats.reject(reason, batch.n)
    return good


def run_single(
    program: WorkerProgram, until_ps: int | None = None, on_round: RoundCallback | None = None
) -> SyncOutcome:
    """In-process 1-worker run, no zmq: same loop, same windows as a multi-worker run."""
    return run_rounds(program, SoloExchange(), 0, 1, until_ps, on_round)
