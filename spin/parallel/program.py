"""The contract between the multi-process layer and an engine: one worker's share of a fabric.

The layer only moves batches and virtual-time bounds; everything about devices lives behind
``WorkerProgram``. Programs are built inside each worker process by a factory named by an import
path (``"package.module:function"``): code is named, never sent. Only functions declared with
``@worker_factory`` can be named, so a coordinator cannot make a worker call just any function
it finds importable (``subprocess:call`` with the spec as argv, say).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol, runtime_checkable

from spin.errors import ConfigError
from spin.parallel.batch import FrameBatch

INF_PS = 2**62  # "no pending event"; also the clamp for every window end


@runtime_checkable
class WorkerProgram(Protocol):
    """One worker's share of a fabric: the devices it owns, run in virtual time (integer ps).

    Determinism contract: given the same frames with the same (arrival_ps, order_key), the program
    must behave identically however they are grouped into batches and rounds; that is what makes
    results identical for any number of workers.

    Optional extras, looked up with getattr: ``describe() -> str`` (named in WorkerError),
    ``events_processed() -> int`` (events/s in the progress bar) and
    ``admit(batch, sender, not_before_ps) -> str | None``: the reason to drop a peer's batch
    before ``deliver`` ever sees it (None: deliver it). It must refuse lengths beyond the slot
    and arrivals before ``not_before_ps`` (the round end), as the round loop's generic check,
    which it replaces, does for programs without one. A program with ``admit`` may also have
    ``deliver_admitted(batch)``: ``deliver`` without checking again what ``admit`` passed (the
    round loop calls it; ``deliver`` itself stays safe for any caller).
    """

    def lookahead_ps(self) -> int:
        """Minimum latency of any link crossing workers (> 0); INF_PS if none crosses."""

    def next_event_ps(self) -> int:
        """Earliest pending local event, or INF_PS if idle."""

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        """Process events with time < t_end_ps; return frames for other workers by worker id.

        Every returned frame must arrive at or after t_end_ps (guaranteed by the lookahead).
        """

    def deliver(self, batch: FrameBatch) -> None:
        """Frames from peers (all peers of a round, concatenated in sender order); arrival >= round end."""

    def result(self) -> dict:
        """JSON-compatible result of this worker (str keys, lists, numbers, strings)."""


ProgramFactory = Callable[[Any, int, int], WorkerProgram]
_DECLARED = "__spin_worker_factory__"


def worker_factory(fn: ProgramFactory) -> ProgramFactory:
    """Declare ``fn(spec, worker_id, n_workers)`` as a program factory workers may be told to call."""
    setattr(fn, _DECLARED, True)
    return fn


def load_factory(path: str) -> ProgramFactory:
    """Resolve a declared ``"module:function"``; raises ConfigError naming the path on any failure."""
    mod_name, sep, attr = path.partition(":")
    if not sep or not mod_name or not attr:
        raise ConfigError(f"factory must look like 'package.module:function', got {path!r}")
    try:
        module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ConfigError(f"factory module {mod_name!r} cannot be imported: {exc}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"factory {path!r}: {mod_name} has no callable {attr!r}")
    if getattr(fn, _DECLARED, False) is not True:
        raise ConfigError(f"factory {path!r} is not declared with @spin.parallel.worker_factory; "
                          f"workers call only declared factories")
    return fn


def describe(program: object) -> str:
    """The program's own description, or its type name; never raises."""
    fn = getattr(program, "describe", None)
    if callable(fn):
        try:
            return str(fn())
        except Exception as exc:  # a broken describe must not hide the real error
            return f"{type(program).__name__} (describe() failed: {exc!r})"
    return type(program).__name__


def events_processed(program: object) -> int:
    fn = getattr(program, "events_processed", None)
    return int(fn()) if callable(fn) else 0
