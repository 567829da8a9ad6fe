"""AI traffic patterns as host programs, looked up by name in a registry, plus their metrics
and the import of htsim connection matrices and topologies.

``build_workload(sc, "permutation", message_bytes=2_000_000)`` from Python,
``[workload] kind = "permutation"`` in a scenario file. Builders add host programs (and send
buffers) to a ``Scenario`` and return a ``Workload``; ``workload_report(wl, sc, result)`` reads
flow and collective completion times against the ideal.
"""
from .common import Flow, Workload, send_pattern
from .declare import WorkloadKind, WorkloadParams, builder
from .catalog import WORKLOADS, build_workload, workload_kinds
from .metrics import FctStats, WorkloadReport, collective_times_ps, flow_messages, workload_report
from .htsim_cm import HtsimConnection, load_htsim_cm
from .htsim_topo import load_htsim_topo

__all__ = ["FctStats", "Flow", "HtsimConnection", "WORKLOADS", "Workload", "WorkloadKind",
           "WorkloadParams", "WorkloadReport", "build_workload", "builder",
           "collective_times_ps", "flow_messages", "load_htsim_cm", "load_htsim_topo",
           "send_pattern", "workload_kinds", "workload_report"]
