"""The per-device records of a run: this code now lives in ``spin.results.records``. This module
only re-exports its public names, so imports of ``spin.records`` keep working for one release;
new code imports ``spin.results.records``."""
from spin.results.records import (  # noqa: F401 (re-exported)
    DictStyleAccess,
    EndpointStats,
    HandlerCalls,
    HostStats,
    LinkStats,
    MessageRecord,
    NicStats,
    ResultKeyMessage,
    SwitchStats,
    TierLoad,
    Totals,
    host_label,
    tier_loads,
    traffic_duration_ps,
)

__all__ = ["DictStyleAccess", "EndpointStats", "HandlerCalls", "HostStats", "LinkStats",
           "MessageRecord", "NicStats", "ResultKeyMessage", "SwitchStats", "TierLoad", "Totals",
           "host_label", "tier_loads", "traffic_duration_ps"]
