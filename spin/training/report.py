"""What a replayed training step reports: this code now lives in ``spin.training.step_report`` (a
name that says what it is). This module only re-exports its public names, so imports of
``spin.training.report`` keep working for one release; new code imports
``spin.training.step_report``."""
from .step_report import (  # noqa: F401 (re-exported)
    PS_PER_US,
    RankStep,
    CollectiveTime,
    NodeSpan,
    StepReport,
    build_report,
)

__all__ = ["PS_PER_US", "RankStep", "CollectiveTime", "NodeSpan", "StepReport", "build_report"]
