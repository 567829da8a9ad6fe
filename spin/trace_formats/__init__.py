"""Training-step traces: readers for MLCommons Chakra execution traces, PyTorch's own
execution-trace JSON and GOAL schedules (LogGOPSim, Schedgen, ATLAHS), producing one
format-independent ``StepTrace`` that ``spin.training`` replays on the fabric.
Readers only parse and validate: nothing here runs."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import TraceError

from .chakra import read_chakra
from .goal import read_goal
from .model import COLLECTIVES, StepTrace, TraceOp, validate
from .pytorch_et import is_pytorch_et_prefix, read_pytorch_et

__all__ = ["COLLECTIVES", "StepTrace", "TraceOp", "read_chakra", "read_goal",
           "read_pytorch_et", "read_trace", "validate"]
_RANK_JSON = re.compile(r"^(.+)\.\d+\.json(?:\.gz)?$")


def read_trace(path: str | Path, groups_file: str | Path | None = None,
               strict: bool = False, kineto: str | Path | None = None) -> StepTrace:
    """A GOAL file (``*.goal``, or any existing text file), a PyTorch execution-trace prefix
    (the path before ``.<rank>.json``; ``kineto``: the prefix of its profiler traces) or a
    Chakra prefix (the path before ``.<rank>.et``). ``strict``: refuse to skip CPU-side
    collectives."""
    p = Path(path)
    if (m := _RANK_JSON.match(p.name)) and p.is_file():   # a rank file: take its prefix
        p = p.with_name(m.group(1))
    if is_pytorch_et_prefix(p):
        return read_pytorch_et(p, kineto)
    if kineto is not None:
        raise TraceError(f"{path}: --kineto is for PyTorch execution traces "
                         f"(files {p.name}.<rank>.json), and there are none")
    if p.suffix == ".goal" or (p.is_file() and not p.name.endswith((".et", ".et.gz"))):
        return read_goal(p)
    for tail in (".et", ".et.gz"):  # a rank file was given: take its prefix
        if p.name.endswith(tail):
            p = p.with_name(p.name[:-len(tail)].rsplit(".", 1)[0])
    return read_chakra(p, groups_file, strict)
