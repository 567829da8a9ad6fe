"""A run as a timeline (a Chrome trace-event file for Perfetto): this code now lives in
``spin.results.timeline``. This module only re-exports its public names, so imports of
``spin.trace`` keep working for one release; new code imports ``spin.results.timeline``."""
from spin.results.timeline import (  # noqa: F401 (re-exported)
    MIN_BUFFER_RECORDS,
    Span,
    Trace,
    TraceNames,
    TraceOptions,
    canonical_order,
)

__all__ = ["MIN_BUFFER_RECORDS", "Span", "Trace", "TraceNames", "TraceOptions", "canonical_order"]
