"""Scenario files: a whole run described in TOML, loaded into a ``Scenario`` plus ``RunOptions``.

Schema (every table is optional except ``[topology]``; unknown keys are errors)::

    name = "ping-pong"                  # free text, shown in reports
    description = "..."

    [topology]
    kind = "star"                       # a kind of spin.topologies (`spin topo --list`):
                                        # $topology_kinds
    hosts = 2                           # every other key is a parameter of that builder
    # kind = "fat_tree"
    # k = 8                             # 4..16, even; host_rate_gbps, edge_agg_rate_gbps, ...
    # custom: devices in order (hosts get node ids 0, 1, ... in the order listed) and links,
    # each link optionally overriding [link] fields:
    # devices = [{name = "h0", kind = "host"}, {name = "s0", kind = "switch", role = "leaf"}]
    # links = [{a = "h0", b = "s0"}, {a = "h1", b = "s0", rate_gbps = 100}, ...]

    [link]      # spin.config.LinkConfig fields:   rate_gbps, latency_ns, loss_rate (the default of every
                #   link whose tier has no rate or latency parameter of its own)
    [nic]       # spin.config.NicConfig fields:    hpus, hpu_clock_mhz, pcie_rate_gbytes_per_s, ...
    [nic.transport]  # spin.config.TransportConfig: kind ($transports), entropy
                #   ($entropies), ev_set_size, reps_freeze_us, and every transport's
                #   own keys (ack_every_packets, rto_us, dcqcn_*, ...), which keep working here
    [nic.transport.rc]  # the preferred place of a transport's own keys: its table, checked by
                #   the transport (a key of another transport's table is an error); the table
                #   of the kind in use applies, the others are only checked. Keys by table:
$transport_tables
    [host]      # spin.config.HostConfig fields:   memory_bytes, send_overhead_ns, qps, ...
    [switch]    # spin.config.SwitchConfig fields: latency_ns, port_buffer_bytes, ...,
                #   load_balancing (a port-selection scheme of switch_emulator.lb, default "ecmp")
    [engine]    # spin.config.EngineConfig fields: mtu_bytes ($mtus), ...

    [[program]]                         # a handler program, built by calling a factory
    name = "pong"                       # the name [[context]] refers to
    factory = "handlers.ping_pong:ping_pong_program"   # "module:function" returning a HandlerProgram,
                                        # declared @spin.program_factory (docs/security.md)
    args = { reply_qp = 2 }             # keyword arguments of the factory

    [[context]]                         # install a program on a device (an execution context)
    node = 1                            # node id or host name ("h1"), or a switch name ("s0")
    program = "pong"
    match_qp = 1                        # optional match fields: match_qp, match_rkey, match_src,
                                        # match_dst (node ids or host names), match_udp_dport,
                                        # match_header_type (first byte of a non-RoCE UDP payload)

    [[multicast]]                       # a port group of a switch for spin_multicast; groups
    switch = "s0"                       # get ids 0, 1, ... in the order declared
    ports = [1, 2, 3]

    [[fault]]                           # change the fabric at a virtual time: kind = "down",
    at_ns = 50000                       # "up", "rate" (with rate_gbps) or "swap" (link and
    kind = "down"                       # other exchange far ends: an optical re-shape); routes
    link = 4                            # follow after switch.route_convergence_ns

    [[host_program]]                    # what a host does, in order (one table per node)
    node = 0
    ops = [
      { op = "send", dst = 1, nbytes = 512, qp = 1, local_addr = 0, remote_addr = 4096, rkey = 0 },
      { op = "wait_recv", qp = 2, count = 1 },        # wait for `count` more messages on qp
      { op = "wait_event", count = 1 },               # wait for handler-raised host events
      { op = "compute", ns = 1000.0 },                # host busy for ns nanoseconds
      { op = "reduce", dst_addr = 0, src_addr = 65536, count = 16384, dtype = "int32" },
      # ... operator = "sum" | "max" | "min" | "prod" | "band" | "bor" | "bxor" (default "sum")
      # ... or function = "mymod:op" (op(dst, src) -> new dst, numpy; @spin.scenario_function),
      #     ps_per_byte = 400.0
      { op = "mark", label = "done" },                # record the virtual time here
      { op = "repeat", times = 8, ops = [ ... ] },    # the nested ops, `times` times
    ]

    [[memory]]                          # initial host memory
    node = 0
    addr = 0
    dtype = "int32"                     # int8..int64, uint8..uint64, float32, float64
    values = [1, 2, 3]                  # either explicit values ...
    # fill = "arange" | "random" | "zeros", count = 16384, seed = 0    # ... or a fill

    [capture]
    links = "all"                       # or a list of link indices; written by `spin run --pcap`

    [workers]
    count = 1                           # worker processes (`spin run --workers` overrides)
    assign = { h0 = 0, s0 = 1 }         # optional device name -> worker id

    [loadbalancing]                     # a named scheme (spin.loadbalancing.schemes()):
    scheme = "drill"                    # `spin lb --list`: every port-selection scheme of the
                                        # switches (switch_emulator.lb), then the senders'
                                        # (spin.loadbalancing.SENDER_SCHEMES); sets the [switch]
                                        # (and [nic]) fields of the scheme; [switch] may tune
                                        # it (flowlet_gap_ns) but not contradict it

    [workload]                          # an AI traffic pattern as host programs (spin.workloads)
    kind = "permutation"                # a kind of spin.workloads:
                                        # $workload_kinds
    message_bytes = 65536               # common: message_bytes, iterations, start_skew_ns, seed,
    iterations = 2                      # qp, fill, label; all_to_all: phases; incast: senders,
                                        # receiver; htsim_cm: file (relative to this file)

    [[endpoint]]                        # a host served by an external program (spin.endpoint)
    host = "h3"                         # a host without host program or execution context
    url = "tcp://127.0.0.1:5600"        # the fabric listens there; the program connects
    mode = "lockstep"                   # or "realtime": virtual time paced to the wall clock
    # realtime_factor = 1e4             # wall s per virtual s; max_lag_ms = 500, on_lag =
    #                                   # "error" | "warn"; attach_timeout_s, reply_timeout_s;
    #                                   # key_file (CurveZMQ, required beyond loopback)

    [[check]]                           # verified after a single-worker run
    node = 0
    addr = 65536
    dtype = "int32"
    count = 16384                       # optional with expect = "npy" (the file's length)
    expect = "sum"                      # "sum" | "copy" | "values" | "npy" | "function"
    sources = [{ node = 0, addr = 0 }, { node = 1, addr = 0 }]   # initial memory regions (sum/copy)
    # values = [...]                    # for expect = "values"
    # file = "expected.npy"             # for expect = "npy" (relative to this file; same dtype)
    # function = "mymod:expected"       # for expect = "function": fn(actual array) returns the
    #                                   # expected array, or True/False (spin.describe.checks);
    #                                   # declared @spin.scenario_function

Each handler of a program declared in ``[[program]]`` is compiled on its own and cached by its
source: scenario files that use the same handlers share their compiled code, and the engine is
compiled once per spin version whatever the programs.
Factory modules must be importable (an installed package such as ``handlers``, a module on
``PYTHONPATH``, or a ``.py`` file next to the scenario file).

Errors are ``ConfigError``s naming the file, the field path (``host_program[2].ops[0].op``), the
offending value and, where there is a finite set, the valid choices.

The ``$$names`` above are filled in from the registries when this text is read
(``help(spin.tools.scenario_schema)`` shows them), so a name is written only where it is declared.
"""
from __future__ import annotations

import sys
import types
from string import Template
from typing import Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field

from ..bounds import count as count_field, size_bytes, time_ns
from ..config import (ENTROPIES, TRANSPORTS, EngineConfig, HostConfig, LinkConfig, NicConfig,
                     SwitchConfig)
from ..topologies import TOPOLOGIES


def _render(doc: str) -> str:
    """The schema text with the registries' names in place of its ``$names``."""
    from ..workloads import WORKLOADS

    def choices(names, sep: str = " | ") -> str:
        return sep.join(f'"{n}"' if isinstance(n, str) else str(n) for n in names)
    from ..transports import transport_params

    def keys(kind: str) -> str:
        model = transport_params(kind)
        return ", ".join(model.model_fields) if model is not None else "none"
    tables = "\n".join(f"                #     [nic.transport.{t}]: {keys(t)}"
                        for t in TRANSPORTS.names())
    return Template(doc).substitute(
        transport_tables=tables,
        topology_kinds=", ".join(TOPOLOGIES.names()), workload_kinds=", ".join(WORKLOADS.names()),
        transports=choices(TRANSPORTS.names()), entropies=choices(ENTROPIES.names()),
        mtus=choices(get_args(EngineConfig.model_fields["mtu_bytes"].annotation), "|"))


_SCHEMA_TEXT = __doc__


class _RenderedOnRead(types.ModuleType):
    """This module, its docstring rendered when read (``help``, the reference pages), so that
    a run, which never reads it, does not import the workload registry for it."""

    @property
    def __doc__(self) -> str:
        return _render(_SCHEMA_TEXT)


sys.modules[__name__].__class__ = _RenderedOnRead

MEMORY_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64")
REDUCE_DTYPES = ("int32", "int64", "float32", "float64")
Node = Union[int, str]


class _Spec(BaseModel):
    # strict: TOML has types, so `node = true` or `nbytes = "8"` is a mistake to name, not a
    # value to convert (true would be host 1)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class TopologySpec(BaseModel):
    """``kind`` names a builder in ``spin.topologies``; the other keys are its parameters,
    validated by that builder's registry entry (names, ranges and choices in the errors)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)
    kind: str

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class WorkloadSpec(BaseModel):
    """``kind`` names a builder in ``spin.workloads``; the other keys are its parameters,
    validated by that builder's registry entry."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)
    kind: str

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LoadBalancingSpec(_Spec):
    """``scheme`` names an entry of ``spin.loadbalancing.schemes()``; it sets the switch (and
    NIC) fields that make the scheme."""

    scheme: str = Field(min_length=1)


class ProgramSpec(_Spec):
    name: str = Field(min_length=1)
    factory: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    args: dict[str, Any] = Field(default_factory=dict)


class ContextSpec(_Spec):
    node: Node
    program: str
    match_qp: int | None = count_field(None, low=0)
    match_rkey: int | None = Field(None, ge=0, lt=2**32)
    match_src: Node | None = None
    match_dst: Node | None = None
    match_udp_dport: int | None = Field(None, ge=0, le=65535)
    match_header_type: int | None = Field(None, ge=0, le=255)


class MulticastSpec(_Spec):
    switch: str = Field(min_length=1)
    ports: list[int] = Field(min_length=1, max_length=65_536)


class FaultSpec(_Spec):
    at_ns: float = time_ns()
    kind: Literal["down", "up", "rate", "swap"]
    link: int = count_field(low=0)
    other: int | None = count_field(None, low=0)
    rate_gbps: int | None = Field(None, gt=0, le=1600)


class HostProgramSpec(_Spec):
    node: Node
    ops: list[Any]


class SendOp(_Spec):
    op: Literal["send"]
    dst: Node
    nbytes: int = size_bytes()
    qp: int = count_field(0, low=0)
    local_addr: int = size_bytes(0)
    remote_addr: int = size_bytes(0)
    rkey: int = Field(0, ge=0, lt=2**32)


class WaitRecvOp(_Spec):
    op: Literal["wait_recv"]
    qp: int = count_field(0, low=0)
    count: int = count_field(1)


class WaitEventOp(_Spec):
    op: Literal["wait_event"]
    count: int = count_field(1)


class ComputeOp(_Spec):
    op: Literal["compute"]
    ns: float = Field(ge=0, le=1e12, allow_inf_nan=False)  # up to 1000 s of compute


class ReduceOp(_Spec):
    op: Literal["reduce"]
    dst_addr: int = size_bytes()
    src_addr: int = size_bytes()
    count: int = count_field()
    dtype: Literal["int32", "int64", "float32", "float64"]
    operator: Literal["sum", "max", "min", "prod", "band", "bor", "bxor"] = "sum"
    function: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    ps_per_byte: float | None = Field(None, ge=0, le=1e9, allow_inf_nan=False)


class MarkOp(_Spec):
    op: Literal["mark"]
    label: str = Field(min_length=1)


class RepeatOp(_Spec):
    op: Literal["repeat"]
    times: int = count_field()
    ops: list[Any]


OPS: dict[str, type[_Spec]] = {"send": SendOp, "wait_recv": WaitRecvOp, "wait_event": WaitEventOp,
                               "compute": ComputeOp, "reduce": ReduceOp, "mark": MarkOp,
                               "repeat": RepeatOp}


class MemorySpec(_Spec):
    node: Node
    addr: int = size_bytes()
    dtype: Literal["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64"]
    values: list[int | float] | None = None
    fill: Literal["arange", "random", "zeros"] | None = None
    count: int | None = count_field(None)
    seed: int = Field(0, ge=0, lt=2**32)


class CaptureSpec(_Spec):
    links: Literal["all"] | list[int] = "all"


class WorkersSpec(_Spec):
    count: int = count_field(1)
    assign: dict[str, int] | None = None


class EndpointTableSpec(_Spec):
    host: str
    url: str
    mode: Literal["lockstep", "realtime"] = "lockstep"
    realtime_factor: float = Field(1e4, gt=0, le=1e12, allow_inf_nan=False)
    max_lag_ms: float = Field(500.0, gt=0, le=1e9, allow_inf_nan=False)
    on_lag: Literal["error", "warn"] = "error"
    attach_timeout_s: float = Field(120.0, gt=0, le=1e6, allow_inf_nan=False)
    reply_timeout_s: float = Field(300.0, gt=0, le=1e6, allow_inf_nan=False)
    key_file: str | None = None


class RegionSpec(_Spec):
    node: Node
    addr: int = size_bytes()


class CheckSpec(_Spec):
    node: Node
    addr: int = size_bytes()
    dtype: Literal["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64"]
    count: int | None = count_field(None)
    expect: Literal["sum", "copy", "values", "npy", "function"]
    sources: list[RegionSpec] | None = None
    values: list[int | float] | None = None
    file: str | None = Field(None, min_length=1)
    function: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


# top-level key -> (model, is an array of tables)
SECTIONS: dict[str, tuple[type[BaseModel], bool]] = {
    "topology": (TopologySpec, False), "link": (LinkConfig, False), "nic": (NicConfig, False),
    "host": (HostConfig, False), "switch": (SwitchConfig, False), "engine": (EngineConfig, False),
    "program": (ProgramSpec, True), "context": (ContextSpec, True),
    "host_program": (HostProgramSpec, True), "memory": (MemorySpec, True),
    "capture": (CaptureSpec, False), "workers": (WorkersSpec, False), "check": (CheckSpec, True),
    "multicast": (MulticastSpec, True), "fault": (FaultSpec, True),
    "workload": (WorkloadSpec, False), "loadbalancing": (LoadBalancingSpec, False),
    "endpoint": (EndpointTableSpec, True),
}
TOP_KEYS = ("name", "description") + tuple(SECTIONS)
