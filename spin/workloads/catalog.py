"""Every workload kind, listed once: ``WORKLOADS`` is what a scenario's ``[workload] kind``,
``spin lb --workload`` and ``build_workload`` accept, in alphabetical order."""
from __future__ import annotations

from typing import Any

from ..registry import Registry
from . import all_to_all, htsim_cm, incast, permutation, ring, shifts
from .common import Workload
from .declare import WorkloadKind

WORKLOADS: Registry[WorkloadKind] = Registry(
    "workload", (all_to_all.all_to_all, htsim_cm.htsim_cm, incast.incast,
                 permutation.permutation, ring.ring_allreduce, shifts.shifts))


def build_workload(scenario, name: str, *, where: str = "workload", **params: Any) -> Workload:
    """Add the workload kind ``name`` to ``scenario`` (its host programs and send buffers) and
    return what was added. Errors name ``where``: ``workload.kind``, ``workload.seed``."""
    return WORKLOADS.get(name, f"{where}.kind").add(scenario, where=where, **params)


def workload_kinds() -> list[str]:
    """The kinds' names, in ``WORKLOADS`` order."""
    return list(WORKLOADS.names())
