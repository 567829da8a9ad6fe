"""The scenario: everything a run needs, as plain picklable data (``Scenario``)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import PORT_FIELDS, EngineConfig, HostConfig, NicConfig, SwitchConfig, port_schemes
from ..errors import ConfigError
from ..suggest import did_you_mean
from ..handler import ExecutionContext, HandlerProgram, same_program
from .faults import LinkFault
from .host_program import HostProgram
from .trace_options import TraceOptions

if TYPE_CHECKING:  # annotations only: a description imports neither the topology nor results
    from ..results import RunResult
    from ..topology import Topology


@dataclass
class Scenario:
    """Everything a run needs, as plain picklable data."""

    topology: Topology
    nic: NicConfig = field(default_factory=NicConfig)
    host: HostConfig = field(default_factory=HostConfig)
    switch: SwitchConfig = field(default_factory=SwitchConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    contexts: list[ExecutionContext] = field(default_factory=list)
    host_programs: dict[int, HostProgram] = field(default_factory=dict)
    host_memory: list[tuple[int, int, bytes]] = field(default_factory=list)
    capture_links: list[int] = field(default_factory=list)
    mark_index: dict[str, int] = field(default_factory=dict)
    callbacks: list = field(default_factory=list)   # host-program Python calls, by id
    # Optional superset of programs to compile the engine for: scenarios that list the same
    # programs share one compiled (and cached) engine, e.g. a whole test suite.
    engine_programs: list[HandlerProgram] | None = None
    multicast_groups: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    faults: list[LinkFault] = field(default_factory=list)
    tracing: TraceOptions | None = None   # set by trace()
    # switch name -> port-selection scheme overriding switch.load_balancing (load_balancing())
    switch_load_balancing: dict[str, str] = field(default_factory=dict)
    # per switch port (switch, device it faces): SwitchConfig queue fields that differ there
    port_overrides: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # "stored": payload bytes live in host memory; "generated": no host memory is kept, sent
    # bytes come from a fixed table by (node, address) (spin.wire.payload)
    payload: str = "stored"

    def __repr__(self) -> str:
        """One line: the topology and counts (host programs and memory can be huge)."""
        programs = ", ".join(dict.fromkeys(c.program.name for c in self.contexts)) or "none"
        return (f"Scenario({self.topology!r}, {len(self.host_programs)} host programs, "
                f"{len(self.contexts)} execution contexts (programs: {programs}), "
                f"{len(self.faults)} faults)")

    @property
    def n_hosts(self) -> int:
        """How many hosts the topology has (node ids 0..n_hosts-1)."""
        return len(self.topology.hosts)

    def _check_node(self, node: int | str, what: str) -> int:
        """Node id of a host given by node id or name; a ConfigError naming the hosts else."""
        return self.topology.host_node(node, what)

    def _check_programmable(self, name: str, what: str) -> None:
        """A device of a kind that runs nothing a scenario installs refuses it, in one line."""
        kind = self.topology.device_kinds()[self.topology.device_names().index(name)]
        if not kind.programmable:
            others = [s for s in self.topology.switches
                      if self.topology.device_kinds()[self.topology.device_names().index(s)]
                      .programmable]
            raise ConfigError(f"{what}: {name!r} is a {kind.name} device, which runs no "
                              f"handlers, schemes or multicast (it forwards every frame as it "
                              f"arrives); install it on a host's NIC or a switch"
                              + (f": {', '.join(others[:8])}" + (", ..." if len(others) > 8
                                                                  else "") if others else ""))

    def install(self, ctx: ExecutionContext) -> ExecutionContext:
        """Install an execution context on a device: a host's NIC (node id or name) or a switch
        (name). Contexts of a device are matched in installation order."""
        what = f"execution context of program {ctx.program.name!r}"
        if not (isinstance(ctx.node, str) and ctx.node in self.topology.switches):
            self.topology.host_node(ctx.node, what, switches_too=True)
        else:
            self._check_programmable(ctx.node, what)
        for field_name in ("match_src", "match_dst"):   # matched against packets' node ids
            value = getattr(ctx, field_name)
            if value is not None and (isinstance(value, str) or not 0 <= value < self.n_hosts):
                raise ConfigError(f"{what}: {field_name}={value!r} is not a host's node id; "
                                  f"hosts: {self.topology.hosts_text()}"
                                  + (f" (give {self.topology.node_id(value)} for {value!r})"
                                     if isinstance(value, str) and value in self.topology.hosts
                                     else ""))
        ctx.initial_memory()
        self.contexts.append(ctx)
        return ctx

    def multicast_group(self, switch: str, ports: list[int] | tuple[int, ...]) -> int:
        """Declare a port group of ``switch`` for ``spin_multicast``; returns its id."""
        if switch not in self.topology.switches:
            raise ConfigError(f"multicast group: {switch!r} is not a switch; switches: "
                              f"{', '.join(self.topology.switches) or '(none)'}")
        self._check_programmable(switch, "multicast group")
        n = len(self.topology.ports()[switch])
        bad = [p for p in ports if not 0 <= int(p) < n]
        if not ports or bad:
            raise ConfigError(f"multicast group on {switch!r}: ports={list(ports)}; valid ports "
                              f"are 0..{n - 1}, at least one")
        self.multicast_groups.append((switch, tuple(int(p) for p in ports)))
        return len(self.multicast_groups) - 1

    def load_balancing(self, scheme: str, *switches: str) -> None:
        """Let ``switches`` pick ports by ``scheme`` (a ``SwitchConfig.load_balancing`` value)
        instead of ``switch.load_balancing``: e.g. flowlets at the edge, adaptive routing
        above it. Without switch names the scheme applies to every switch (a warning says so,
        since naming none is also how a forgotten argument looks)."""
        port_schemes().get(scheme, "load_balancing scheme")
        if not self.topology.switches:
            raise ConfigError(f"load_balancing({scheme!r}): the topology has no switches")
        for name in switches:
            if name not in self.topology.switches:
                raise ConfigError(f"load_balancing: {name!r} is not a switch; switches: "
                                  f"{', '.join(self.topology.switches)}"
                                  f"{did_you_mean(name, self.topology.switches)}")
            self._check_programmable(name, f"load_balancing({scheme!r})")
        if not switches:
            kinds = dict(zip(self.topology.device_names(), self.topology.device_kinds()))
            switches = tuple(s for s in self.topology.switches if kinds[s].programmable)
            warnings.warn(f"Scenario.load_balancing({scheme!r}) names no switch: it applies to "
                          f"all {len(switches)} switches", stacklevel=2)
        for name in switches:
            self.switch_load_balancing[name] = scheme

    def configure_port(self, switch: str, toward: str, **fields: Any) -> None:
        """Give the port(s) of ``switch`` facing device ``toward`` their own queue settings:
        any of ``PORT_FIELDS`` (``SwitchConfig`` fields with their units: buffer, ECN
        thresholds, where ECN is decided, header priority); the rest of the switch keeps
        ``scenario.switch``'s. E.g. RED marking only on the ports towards the hosts."""
        if switch not in self.topology.switches:
            raise ConfigError(f"configure_port: {switch!r} is not a switch; switches: "
                              f"{', '.join(self.topology.switches) or '(none)'}")
        if not any({l.a, l.b} == {switch, toward} for l in self.topology.links):
            peers = sorted({l.b if l.a == switch else l.a for l in self.topology.links
                            if switch in (l.a, l.b)})
            raise ConfigError(f"configure_port: {switch!r} has no port towards {toward!r}; "
                              f"it faces: {', '.join(peers)}")
        bad = sorted(set(fields) - set(PORT_FIELDS))
        if bad or not fields:
            what = f"{bad[0]!r} is not a port field" if bad else "no port field given"
            raise ConfigError(f"configure_port({switch!r}, {toward!r}): {what}; valid: "
                              f"{', '.join(PORT_FIELDS)}"
                              f"{did_you_mean(bad[0], PORT_FIELDS) if bad else ''}")
        merged = {**self.port_overrides.get((switch, toward), {}), **fields}
        self.port_switch_config(switch, toward, merged)        # validate now
        self.port_overrides[(switch, toward)] = merged

    def port_switch_config(self, switch: str, toward: str, fields: dict[str, Any]) -> SwitchConfig:
        """The switch's config with one port's overrides, validated (names the port)."""
        try:
            return SwitchConfig.make(**{**self.switch.model_dump(), **fields})
        except ConfigError as exc:
            raise ConfigError(f"port of {switch} towards {toward}: {exc}") from None

    def _fault(self, fault: LinkFault) -> None:
        fault.check(len(self.topology.links))
        self.faults.append(fault)

    def link_down(self, link: int, at_ns: float) -> None:
        """Link ``link`` (index into topology.links) fails at ``at_ns``."""
        self._fault(LinkFault(at_ns, "down", link))

    def link_up(self, link: int, at_ns: float) -> None:
        """Link ``link`` (index into topology.links) comes back up at ``at_ns``."""
        self._fault(LinkFault(at_ns, "up", link))

    def degrade_link(self, link: int, rate_gbps: int, at_ns: float) -> None:
        """Link ``link`` runs at ``rate_gbps`` from ``at_ns`` on (routes are unchanged)."""
        self._fault(LinkFault(at_ns, "rate", link, rate_gbps=rate_gbps))

    def reshape(self, at_ns: float, swaps: list[tuple[int, int]]) -> None:
        """Optical re-shape at ``at_ns``: for each (i, j), links i and j exchange far ends
        (a-b, c-d become a-d, c-b)."""
        if not swaps:
            raise ConfigError(f"reshape at_ns={at_ns}: no link pairs given (swaps=[(i, j), ...])")
        for i, j in swaps:
            self._fault(LinkFault(at_ns, "swap", i, other=j))

    def host_program(self, node: int | str) -> HostProgram:
        """The program of host ``node`` (node id or host name), created empty on first use."""
        node = self._check_node(node, "host program")
        if node not in self.host_programs:
            # one tuple of host names shared by every program (a copy each was 512 MiB at
            # 8,192 hosts)
            names = self.__dict__.get("_host_names")
            if names is None or len(names) != self.n_hosts:
                names = self.__dict__["_host_names"] = tuple(self.topology.hosts)
            self.host_programs[node] = HostProgram(node, self.host.qps, _mark_index=self.mark_index,
                                                   _callbacks=self.callbacks, _hosts=names)
        return self.host_programs[node]

    def write_host_memory(self, node: int | str, addr: int, data) -> None:
        """Initial contents of a host's memory (e.g. the buffer a host will send); ``node`` is
        a node id or a host name."""
        node = self._check_node(node, "host memory")
        raw = np.ascontiguousarray(data).tobytes()
        if addr < 0 or addr + len(raw) > self.host.memory_bytes:
            raise ConfigError(f"host {self.topology.host_label(node)} memory write at "
                              f"addr={addr} of {len(raw)} B exceeds HostConfig.memory_bytes="
                              f"{self.host.memory_bytes}")
        self.host_memory.append((node, addr, raw))

    def capture(self, *links: int) -> None:
        """Record the frames of these links (indices into topology.links; none = all links)."""
        chosen = links or tuple(range(len(self.topology.links)))
        for i in chosen:
            if not 0 <= i < len(self.topology.links):
                raise ConfigError(f"capture link={i}; valid links are 0..{len(self.topology.links) - 1}")
        self.capture_links = sorted(set(self.capture_links) | set(chosen))

    def trace(self, links: bool = False, buffer_records: int = 1 << 16) -> None:
        """Record a timeline of the run (``result.trace``, see ``spin.results.timeline``): handler
        runs per HPU, DMA transfers, host program steps, messages and, with ``links``, every
        frame on every link."""
        self.tracing = TraceOptions(links=links, buffer_records=buffer_records)

    def programs(self) -> list[HandlerProgram]:
        """Programs the engine is compiled for, in dispatch order."""
        seen: list[HandlerProgram] = list(self.engine_programs or [])
        for c in self.contexts:
            if not any(same_program(c.program, p) for p in seen):
                if self.engine_programs is not None:
                    raise ConfigError(f"program {c.program.name!r} is installed but missing from "
                                      f"Scenario.engine_programs "
                                      f"({', '.join(p.name for p in self.engine_programs)})")
                seen.append(c.program)
        return seen

    def run(self, pcap_dir: str | Path | None = None, quiet: bool = True) -> RunResult:
        """Build and run this scenario in this process (``spin.runtime.simulation``); the one
        place a description reaches the runtime, imported only when called."""
        from ..runtime.simulation import Simulation
        return Simulation(self, quiet=quiet).run(pcap_dir=pcap_dir, quiet=quiet)

    def with_debug_handlers(self) -> "Scenario":
        """A copy whose handlers run as plain Python inside the compiled engine
        (``EngineConfig.debug``): print, pdb and tracebacks naming the failing line work, and
        results are the same as compiled."""
        from dataclasses import replace
        return replace(self, engine=self.engine.model_copy(update={"debug": True}))
