"""The engine's counters and logs as a RunResult: this code now lives in ``spin.results.builder``.
This module only re-exports its public names, so imports of ``spin.runtime.results_builder``
keep working for one release; new code imports ``spin.results.builder``."""
from spin.results.builder import (  # noqa: F401 (re-exported)
    build_result,
)

__all__ = ["build_result"]
