"""spin: a sPIN-style network-offload emulator.

Handlers written as plain Python functions run, compiled by Numba, inside emulated NICs that
exchange real RoCEv2 frames through switches, in deterministic virtual time (picoseconds).

Public API (imported lazily so ``import spin`` stays cheap):

* ``Topology``, ``Scenario``, ``Simulation``, ``RunResult``, ``run_scenario`` (any worker count)
* ``Endpoint``, ``EndpointSpec``: real programs attached to host ports (``spin.endpoint``)
* ``OffloadComparison``: a host baseline against an offloaded run (``spin.testing`` for pytest)
* ``HandlerProgram``, ``ExecutionContext``, ``HandlerCost``, ``handler``
* ``program_factory``, ``scenario_function``: what a scenario file may call (``spin.scenario_code``)
* configs: ``LinkConfig``, ``NicConfig``, ``HostConfig``, ``SwitchConfig``, ``EngineConfig``
* errors: ``SpinError`` and subclasses in ``spin.errors``
* the handler API (``spin_dma_to_host``, ``spin_send_packet``, return codes...) in ``spin.api``

Every cache (the generated engine, handler entries, Numba's machine code) lives under
``$SPIN_CACHE_DIR`` (default ``~/.cache/spin``); see ``spin.caches``.
"""
from importlib import import_module

from .caches import configure_numba_cache_dir

configure_numba_cache_dir()  # before any spin module decorates a function with numba

__version__ = "0.1.0"

_EXPORTS = {
    "Topology": "spin.topology", "Scenario": "spin.simulation", "Simulation": "spin.simulation",
    "RunResult": "spin.results", "HandlerProgram": "spin.handler",
    "ExecutionContext": "spin.handler", "HandlerCost": "spin.handler", "handler": "spin.handler",
    "LinkConfig": "spin.config", "NicConfig": "spin.config", "HostConfig": "spin.config",
    "SwitchConfig": "spin.config", "EngineConfig": "spin.config",
    "run_scenario": "spin.fabric", "OffloadComparison": "spin.compare",
    "Endpoint": "spin.endpoint", "EndpointSpec": "spin.endpoint",
    "program_factory": "spin.scenario_code", "scenario_function": "spin.scenario_code",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'spin' has no attribute {name!r}")
