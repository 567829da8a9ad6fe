"""Plain-text tables of results: this code now lives in ``spin.results.report``. This module only
re-exports its public names, so imports of ``spin.report`` keep working for one release; new
code imports ``spin.results.report``."""
from spin.results.report import (  # noqa: F401 (re-exported)
    COMPARISON_ROWS,
    LINK_ROWS_SHOWN,
    bench_lines,
    comparison_table,
    count,
    link_table,
    mark_table,
    message_table,
    nic_table,
    ratio,
    run_summary,
    shown,
    switch_table,
    table,
    tier_table,
    transport_table,
    us,
)

__all__ = ["COMPARISON_ROWS", "LINK_ROWS_SHOWN", "bench_lines", "comparison_table", "count",
           "link_table", "mark_table", "message_table", "nic_table", "ratio", "run_summary",
           "shown", "switch_table", "table", "tier_table", "transport_table", "us"]
