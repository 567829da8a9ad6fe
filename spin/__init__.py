"""spin: a sPIN-style network-offload emulator.

Handlers written as plain Python functions run, compiled by Numba, inside emulated NICs and
switches that exchange real RoCEv2 frames, in deterministic virtual time (picoseconds). A study
reads::

    import spin
    topo = spin.build_topology("star", hosts=4)          # or spin.Topology() by hand
    sc = spin.Scenario(topo)
    sc.host_program("h0").mark("start").send("h1", 4096, qp=1)
    sc.host_program("h1").wait_recv(qp=1).mark("done")
    result = spin.run(sc)                                 # a spin.RunResult
    print(result.totals().link_bytes, result.mark("done", 1))

Every name below is importable from ``spin`` directly; each is loaded on first use, so
``import spin`` stays cheap (Numba starts only when something runs). ``help(spin.NAME)`` says
more about each. Every cache (the generated engine, handler entries, Numba's machine code) lives
under ``$SPIN_CACHE_DIR`` (default ``~/.cache/spin``); see ``spin.caches``.
"""
from importlib import import_module

from .caches import configure_numba_cache_dir
from .compiled_sources import compiled_sources as _compiled_sources

configure_numba_cache_dir(_compiled_sources())  # before any spin module decorates a function

__version__ = "0.1.0"

# group -> public name -> "module" (the same name there) or "module:attribute"
_GROUPS: dict[str, dict[str, str]] = {
    "Topologies (build_topology(kind, **params); `spin topo --list` lists the kinds)": {
        "Topology": "spin.topology", "build_topology": "spin.topologies",
        "topology_kinds": "spin.topologies", "TOPOLOGIES": "spin.topologies",
        "topology_inventory": "spin.topologies",
    },
    "Scenarios and runs": {
        "Scenario": "spin.describe.scenario", "Simulation": "spin.simulation",
        "run": "spin.runs", "run_both": "spin.runs", "compare_offload": "spin.runs:compare",
        "run_scenario": "spin.fabric", "load_scenario": "spin.scenario_file",
        "HostCall": "spin.describe.host_program",
    },
    # the @handler decorator stays `from spin.handler import handler`: spin.handler is its module
    "Handlers (@handler: from spin.handler import handler; the device-side API is spin.api)": {
        "HandlerProgram": "spin.handler", "ExecutionContext": "spin.handler",
        "HandlerCost": "spin.handler",
    },
    "What a scenario file may call (spin.scenario_code; see docs/security.md)": {
        "program_factory": "spin.scenario_code", "scenario_function": "spin.scenario_code",
    },
    "Configuration": {
        "LinkConfig": "spin.config", "NicConfig": "spin.config", "HostConfig": "spin.config",
        "SwitchConfig": "spin.config", "EngineConfig": "spin.config",
        "TransportConfig": "spin.config",
    },
    "Results": {
        "RunResult": "spin.results", "MessageRecord": "spin.results.records",
        "LinkStats": "spin.results.records", "NicStats": "spin.results.records",
        "HostStats": "spin.results.records", "SwitchStats": "spin.results.records",
        "EndpointStats": "spin.results.records", "Totals": "spin.results.records",
        "TierLoad": "spin.results.records",
        "OffloadComparison": "spin.results.compare", "Metrics": "spin.results.compare",
    },
    "Workloads and htsim import": {
        "build_workload": "spin.workloads", "workload_kinds": "spin.workloads",
        "workload_report": "spin.workloads", "load_htsim_cm": "spin.workloads",
        "load_htsim_topo": "spin.workloads",
    },
    "Collectives (allreduce algorithms by name, as `spin allreduce` runs them)": {
        "ALLREDUCE_ALGORITHMS": "spin.collectives:ALGORITHMS",
        "allreduce_scenario": "spin.collectives.measure",
        "measure_allreduce": "spin.collectives.measure:measure",
    },
    "External programs on host ports": {
        "Endpoint": "spin.endpoint", "EndpointSpec": "spin.endpoint",
    },
    "Errors (all derive from SpinError; more in spin.errors)": {
        "SpinError": "spin.errors", "ConfigError": "spin.errors",
        "TopologyError": "spin.errors", "HandlerError": "spin.errors",
        "RunIncompleteError": "spin.errors", "OffloadAssertionError": "spin.errors",
    },
}

# A name must not be a submodule's (``spin.compare``, ``spin.handler``): importing the submodule
# sets that attribute of the package, which then hides the export.
_EXPORTS = {name: where for group in _GROUPS.values() for name, where in group.items()}

__all__ = sorted(_EXPORTS)


def _exports_text() -> str:
    lines = ["", "Public names", "------------"]
    for group, names in _GROUPS.items():
        lines.append(f"{group}:")
        lines.append("    " + ", ".join(names))
    return "\n".join(lines) + "\n"


__doc__ = (__doc__ or "") + _exports_text()   # help(spin) lists every name


def __getattr__(name: str):
    if name in _EXPORTS:
        module, _, attr = _EXPORTS[name].partition(":")
        value = getattr(import_module(module), attr or name)
        globals()[name] = value                   # loaded once
        return value
    raise AttributeError(f"module 'spin' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's own names plus every lazily loaded public name, for dir() and completion."""
    return sorted(set(globals()) | set(_EXPORTS))
