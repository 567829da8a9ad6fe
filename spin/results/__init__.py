"""What a run produces, in one place: the ``RunResult`` and its records, read as pandas tables,
plain-text reports and offload comparisons, a timeline for Perfetto and pcap captures, and the
builder that turns the engine's counters and logs into a result.

Modules, from what users read to what the run fills in:

- ``run_result``: ``RunResult`` (one run, merged over workers; JSON in and out);
- ``records``: its per-device records (``MessageRecord``, ``LinkStats``, ``NicStats``, ...);
- ``tables``: the records as pandas DataFrames (``RunResult.tables()``);
- ``report``: plain-text tables of results, every figure with its unit;
- ``compare``: a baseline run against an offloaded one (``OffloadComparison``, ``Metrics``);
- ``timeline``: the run as spans in virtual time, a Chrome trace-event file (``Trace``);
- ``capture``: pcap files of emulated traffic (``PcapWriter``, ``read_pcap``);
- ``builder``: the engine's counters and logs of one worker as a ``RunResult``.

``from spin.results import RunResult`` (and the records) works as it did when this package was
one module; the comparison, timeline, capture and builder load only when imported.
"""
from .records import (
    EndpointStats,
    HandlerCalls,
    HostStats,
    LinkStats,
    MessageRecord,
    NicStats,
    SwitchStats,
    TierLoad,
    Totals,
    host_label,
    tier_loads,
)
from .run_result import SCHEMA_VERSION, RunResult
from .tables import RunTables, run_tables

__all__ = ["SCHEMA_VERSION", "EndpointStats", "HandlerCalls", "HostStats", "LinkStats",
           "MessageRecord", "NicStats", "RunResult", "RunTables", "SwitchStats", "TierLoad",
           "Totals", "host_label", "run_tables", "tier_loads"]
