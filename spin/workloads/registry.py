"""How a workload builder is declared: this code now lives in ``spin.workloads.declare`` (a name
that says what it is). This module only re-exports its public names, so imports of
``spin.workloads.registry`` keep working for one release; new code imports
``spin.workloads.declare``."""
from .declare import (  # noqa: F401 (re-exported)
    WorkloadParams,
    Builder,
    WorkloadKind,
    builder,
)

__all__ = ["WorkloadParams", "Builder", "WorkloadKind", "builder"]
