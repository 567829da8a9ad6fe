"""Modules that moved keep their old import paths for one release: each old module re-exports
the public names of the new one (the very same objects), and says where the code now lives."""
from __future__ import annotations

import importlib

import pytest

MOVED = {
    "spin.records": "spin.results.records",
    "spin.tables": "spin.results.tables",
    "spin.report": "spin.results.report",
    "spin.compare": "spin.results.compare",
    "spin.trace": "spin.results.timeline",
    "spin.runtime.results_builder": "spin.results.builder",
    "spin.runtime.capture": "spin.results.capture",
    "spin.runtime.scenario": "spin.describe.scenario",
    "spin.runtime.compile_report": "spin.assembly.compile_report",
    "spin.topologies.registry": "spin.topologies.declare",
    "spin.workloads.registry": "spin.workloads.declare",
    "nic_emulator.transports.registry": "nic_emulator.transports.dispatch",
    "spin.topologies.report": "spin.topologies.inventory_tables",
    "spin.collectives.report": "spin.collectives.allreduce_table",
    "spin.training.report": "spin.training.step_report",
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_path_re_exports_the_new_module(old, new):
    shim, module = importlib.import_module(old), importlib.import_module(new)
    assert new in shim.__doc__
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(module, name), f"{old}.{name}"
    defined = [name for name, value in vars(module).items() if not name.startswith("_")
               and getattr(value, "__module__", None) == new]
    assert sorted(set(defined) - set(shim.__all__)) == []


def test_spin_results_exports_what_the_module_did():
    """``spin.results`` was one module; as a package it exports the same names."""
    from spin.results import (SCHEMA_VERSION, EndpointStats, HandlerCalls, HostStats,  # noqa: F401
                              LinkStats, MessageRecord, NicStats, RunResult, RunTables,
                              SwitchStats, TierLoad, Totals, host_label, run_tables, tier_loads)
    assert RunResult.__module__ == "spin.results.run_result"


def test_spin_build_imports_as_spin_assembly():
    """``spin.build`` was renamed ``spin.assembly``; the old package and module names give the
    same modules (one copy of the code, so a change to either path is a change to both)."""
    import spin.assembly.state_builder
    import spin.build.state_builder
    from spin.assembly import cut_cost, partition
    from spin.build import cut_cost as old_cut_cost
    from spin.build.partition import auto_partition
    assert "spin.assembly" in spin.build.__doc__
    assert spin.build.state_builder is spin.assembly.state_builder
    assert old_cut_cost is cut_cost and auto_partition is partition.auto_partition


def test_spin_traces_imports_as_spin_trace_formats():
    """``spin.traces`` (trace-file readers) was renamed ``spin.trace_formats``, apart from the
    run's own timeline (``spin.results.timeline``); the old package and module names give the
    same modules."""
    import spin.trace_formats.goal
    import spin.traces.goal
    from spin.trace_formats import read_trace
    from spin.traces import read_trace as old_read_trace
    from spin.traces.model import StepTrace
    assert "spin.trace_formats" in spin.traces.__doc__
    assert spin.traces.goal is spin.trace_formats.goal
    assert old_read_trace is read_trace and StepTrace is spin.trace_formats.model.StepTrace
