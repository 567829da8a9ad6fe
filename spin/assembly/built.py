"""Building apart from running: ``build(scenario) -> Built``, everything one worker's engine needs
before its first event (the scenario checked, the engine state laid out, the handlers compiled
or loaded and their memory), as one record that ``spin.runtime.simulation.Simulation`` only runs.

The lifecycle of a run reads in this order: describe (``spin.describe``: ``Scenario``), build
(here), run (``spin.runtime``), results (``spin.results``).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..caches import check_cache_root
from ..describe.limits import check_host_op_addresses, check_reordering
from ..describe.payload_mode import check_payload_mode
from ..engine import state as S
from ..engine.codegen import load_engine
from ..engine.handler_abi import MAX_MEMORY_DIMS, init_call_block
from ..engine.handler_build import (EntryCompileFailure, HandlerTable, build_handler_table,
                                    describe_programs)
from ..handler import ExecutionContext, HandlerProgram
from .compile_report import compile_progress, describe_handler_compile_error
from .scheme_entries import SchemeTable, build_scheme_table
from .transport_entries import TransportEntries
from .state_builder import build_state

if TYPE_CHECKING:  # annotations only
    from ..describe.scenario import Scenario


@dataclass(frozen=True)
class Built:
    """One worker's engine for a scenario, built and not yet run. The arrays are the engine's
    state, which the run advances in place: a ``Built`` is run once (build again to rerun)."""

    scenario: Scenario
    local: frozenset[int]              # engine device ids this worker owns
    standalone: bool                   # no other worker, no attached host
    attached_hosts: bool               # some frames leave for hosts attached from outside spin
    device_names: tuple[str, ...]      # engine device ids: hosts, then switches
    programs: tuple[HandlerProgram, ...]   # the engine's program table, in dispatch order
    engine: ModuleType                 # the generated engine module (compiled on first run)
    st: S.EngineState
    ec_order: tuple[ExecutionContext, ...]     # the context of every engine EC row
    port_of_link: dict[int, tuple[int, int]]   # link -> its two engine ports (a, b)
    handlers: HandlerTable             # the installed handlers' compiled entries
    schemes: SchemeTable | None        # the port-selection schemes compiled apart, if any
    transport: TransportEntries | None  # the NICs' transport, if compiled apart
    hmem: np.ndarray                   # the handler-memory arena (uint8)


def build(scenario: Scenario, local_devices: set[int] | None = None, quiet: bool = False,
          attached_hosts: bool = False) -> Built:
    """Check ``scenario`` and build its engine for the devices in ``local_devices`` (all when
    None). ``quiet`` silences the line on stderr shown while handlers compile (cache misses
    only); ``attached_hosts``: some frames leave for hosts attached from outside spin
    (endpoints), which need every byte of them."""
    names = tuple(scenario.topology.device_names())
    local = frozenset(range(len(names)) if local_devices is None else local_devices)
    programs = tuple(scenario.programs())
    check_host_op_addresses(scenario)
    check_payload_mode(scenario)
    check_reordering(scenario)
    check_cache_root()
    engine = load_engine(scenario.engine.boundscheck)
    state = build_state(scenario, list(programs), set(local), standalone=not attached_hosts)
    st, ec_order = state.st, tuple(state.ec_order)
    init_call_block(st)
    handlers = _load_handlers(scenario, programs, st, len(ec_order), quiet)
    schemes = _load_schemes(scenario, st, quiet)
    transport = _load_transport(scenario, st, quiet)
    hmem = _handler_memory(st, ec_order)
    return Built(scenario=scenario, local=local, standalone=local_devices is None,
                 attached_hosts=attached_hosts, device_names=names, programs=programs,
                 engine=engine, st=st, ec_order=ec_order, port_of_link=state.port_of_link,
                 handlers=handlers, schemes=schemes, transport=transport, hmem=hmem)


def _load_handlers(scenario: Scenario, programs: tuple[HandlerProgram, ...], st: S.EngineState,
                   n_ecs: int, quiet: bool) -> HandlerTable:
    """Compile (or load from the cache) the entry of every handler of an installed program
    and write their addresses into the program table; handlers are compiled apart from the
    engine, each on its own (``spin.engine.handler_build``)."""
    installed = {int(p) for p in st.ec[:n_ecs, S.EC_PROG]}
    used = [prog for p, prog in enumerate(programs) if p in installed]
    try:
        with compile_progress(f"the handlers of {describe_programs(used)}", quiet):
            table = build_handler_table(
                [prog if p in installed else None for p, prog in enumerate(programs)],
                debug=scenario.engine.debug)
    except EntryCompileFailure as failed:
        raise describe_handler_compile_error(failed.cause, failed.kind, failed.program,
                                             failed.fn) from None
    n = len(programs)
    st.prog[:n, S.PR_ENTRY:S.PR_ENTRY + 3] = table.addresses[:n]
    return table


def _load_schemes(scenario: Scenario, st: S.EngineState, quiet: bool) -> SchemeTable | None:
    """Compile (or load from the cache) the port-selection schemes from outside spin that the
    scenario's switches use, apart from the engine, and write their entry addresses where the
    engine's dispatch finds them (``switch_emulator.lb.apart``)."""
    from switch_emulator.lb.registry import schemes_apart, switch_schemes
    names = schemes_apart(set(switch_schemes(scenario)))
    if not names:
        return None
    with compile_progress(f"port-selection schemes {', '.join(map(repr, names))}", quiet):
        table = build_scheme_table(names, debug=scenario.engine.debug)
    st.sc[S.SC_LB_ENTRY:S.SC_LB_ENTRY + len(names)] = table.addresses
    return table


def _load_transport(scenario: Scenario, st: S.EngineState, quiet: bool
                    ) -> TransportEntries | None:
    """Compile (or load from the cache) the NICs' transport when it comes from outside spin,
    apart from the engine, and write its entry addresses where the engine's dispatch finds them
    (``nic_emulator.transports.apart``)."""
    from ..transports import is_shipped
    kind = scenario.nic.transport.kind
    if is_shipped(kind):
        return None
    import numba

    from ..engine.transport_abi import engine_state_type
    from .transport_entries import load_transport
    if numba.typeof(st) != engine_state_type():   # the entries take the state by reference
        raise AssertionError("spin: the engine state's type differs from the one transports "
                             "compiled apart are built for (a spin bug)")
    with compile_progress(f"transport {kind!r}", quiet):
        entries = load_transport(kind)
    st.sc[S.SC_TR_ENTRY:S.SC_TR_ENTRY + len(entries.addresses)] = entries.addresses
    return entries


def _handler_memory(st: S.EngineState, ec_order: tuple[ExecutionContext, ...]) -> np.ndarray:
    """The handler-memory arena: each execution context's memory as bytes, 64-byte aligned,
    its offset, size and shape in its row of ``st.ec``."""
    mems, offset = [], 0
    for e, ctx in enumerate(ec_order):
        mem = ctx.initial_memory()
        if mem.ndim == 0:
            mem = mem.reshape(1)
        st.ec[e, S.EC_MEM_OFF] = offset
        st.ec[e, S.EC_MEM_BYTES] = mem.nbytes
        st.ec[e, S.EC_MEM_DIMS:S.EC_MEM_DIMS + MAX_MEMORY_DIMS] = 0
        st.ec[e, S.EC_MEM_DIMS:S.EC_MEM_DIMS + mem.ndim] = mem.shape
        mems.append((offset, mem))
        offset += -(-mem.nbytes // 64) * 64
    arena = np.zeros(max(offset, 64), np.uint8)
    for off, mem in mems:
        arena[off:off + mem.nbytes] = np.ascontiguousarray(mem).view(np.uint8).reshape(-1)
    return arena
