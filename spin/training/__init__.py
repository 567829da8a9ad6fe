"""Training steps as workloads: replay a Chakra or GOAL trace (``spin.trace_formats``) on the fabric,
with per-rank compute speed and stragglers, and report per rank and per collective
(``spin train``)."""
from __future__ import annotations

from .compute import ComputeModel
from .replay import ReplayConfig, replay
from .step_report import StepReport

__all__ = ["ComputeModel", "ReplayConfig", "StepReport", "replay"]
