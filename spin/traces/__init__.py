"""Training-step traces: readers for MLCommons Chakra execution traces and GOAL schedules
(LogGOPSim, Schedgen, ATLAHS), producing one format-independent ``StepTrace`` that
``spin.training`` replays on the fabric. Readers only parse and validate: nothing here runs."""
from __future__ import annotations

from pathlib import Path

from .chakra import read_chakra
from .goal import read_goal
from .model import COLLECTIVES, StepTrace, TraceOp, validate

__all__ = ["COLLECTIVES", "StepTrace", "TraceOp", "read_chakra", "read_goal", "read_trace",
           "validate"]


def read_trace(path: str | Path, groups_file: str | Path | None = None,
               strict: bool = False) -> StepTrace:
    """A GOAL file (``*.goal``, or any existing text file) or a Chakra prefix (the path
    before ``.<rank>.et``). ``strict``: refuse to skip CPU-side collectives."""
    p = Path(path)
    if p.suffix == ".goal" or (p.is_file() and not p.name.endswith((".et", ".et.gz"))):
        return read_goal(p)
    for tail in (".et", ".et.gz"):  # a rank file was given: take its prefix
        if p.name.endswith(tail):
            p = p.with_name(p.name[:-len(tail)].rsplit(".", 1)[0])
    return read_chakra(p, groups_file, strict)
