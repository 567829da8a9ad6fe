"""Offload benefit, a baseline run against an offloaded one: this code now lives in
``spin.results.compare``. This module only re-exports its public names, so imports of
``spin.compare`` keep working for one release; new code imports ``spin.results.compare``."""
from spin.results.compare import (  # noqa: F401 (re-exported)
    METRIC_NAMES,
    Metrics,
    OffloadComparison,
    completion,
    gain,
)

__all__ = ["METRIC_NAMES", "Metrics", "OffloadComparison", "completion", "gain"]
