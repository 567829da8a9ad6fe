"""Handler programs and execution contexts: what a user declares to offload work to a NIC.

A *handler program* is up to three plain Python functions (header, payload, completion), each
``f(ctx, pkt, mem) -> int``, plus the layout of the handler memory they share and their cost in
HPU cycles. An *execution context* installs a program on one NIC with a match rule and its own
instance of the handler memory. Programs are compiled once per fabric; any number of execution
contexts may share one.
"""
from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import ConfigError, HandlerError
from .handler_sandbox import check_sandbox

HANDLER_PARAMS = ("ctx", "pkt", "mem")
# Default handler cost: 40 cycles, about what PsPIN measured for its ping-pong payload handler
# (29 instructions, 38 ns warm at 1 GHz; spcl/pspin docs/examples.md). Handlers that touch every
# byte should declare a per-byte cost.
DEFAULT_HANDLER_CYCLES = 40


MAX_HANDLER_CYCLES = 60_000_000_000        # cycles of one invocation; the engine keeps ps in int64
MAX_HANDLER_CYCLES_PER_BYTE = 1_000_000


@dataclass(frozen=True)
class HandlerCost:
    """Cycles an HPU spends on one invocation: ``cycles + cycles_per_byte * payload bytes``."""

    cycles: int = DEFAULT_HANDLER_CYCLES
    cycles_per_byte: float = 0.0

    def __post_init__(self) -> None:
        where = f"HandlerCost(cycles={self.cycles!r}, cycles_per_byte={self.cycles_per_byte!r})"
        if isinstance(self.cycles, bool) or not isinstance(self.cycles, numbers.Integral) \
                or not 0 <= self.cycles <= MAX_HANDLER_CYCLES:
            raise ConfigError(f"{where}: cycles must be an integer 0..{MAX_HANDLER_CYCLES:,} "
                              f"(about a minute of a 1 GHz core)")
        if isinstance(self.cycles_per_byte, bool) \
                or not isinstance(self.cycles_per_byte, numbers.Real) \
                or not math.isfinite(self.cycles_per_byte) \
                or not 0 <= self.cycles_per_byte <= MAX_HANDLER_CYCLES_PER_BYTE:
            raise ConfigError(f"{where}: cycles_per_byte must be a number "
                              f"0..{MAX_HANDLER_CYCLES_PER_BYTE:,}")

    @property
    def millicycles_per_byte(self) -> int:
        return int(round(self.cycles_per_byte * 1000))


def handler(cycles: int = DEFAULT_HANDLER_CYCLES, cycles_per_byte: float = 0.0):
    """Decorator attaching a cost to a handler function (the function itself is unchanged)."""
    cost = HandlerCost(cycles, cycles_per_byte)

    def mark(fn: Callable) -> Callable:
        fn.__spin_cost__ = cost
        return fn
    return mark


def _python_function(fn: Callable) -> Callable:
    return getattr(fn, "py_func", fn)  # accept functions Numba already wraps (their py_func)


def check_handler(fn: Callable | None, kind: str, program: str) -> None:
    """Fail early, naming the handler and what is wrong with it."""
    if fn is None:
        return
    py = _python_function(fn)
    if not callable(py) or not inspect.isfunction(py):
        raise HandlerError(f"{kind} handler of program {program!r} must be a Python function, "
                           f"got {fn!r}")
    name = py.__qualname__
    params = list(inspect.signature(py).parameters.values())
    bad_kind = [p.name for p in params if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) != 3 or bad_kind:
        got = ", ".join(p.name for p in params) or "no parameters"
        raise HandlerError(f"{kind} handler {name!r} of program {program!r} must take exactly "
                           f"(ctx, pkt, mem); it takes ({got})")
    if "<locals>" in name or "<lambda>" in name:
        raise HandlerError(f"{kind} handler {name!r} of program {program!r} must be defined at "
                           f"module level so its compiled entry can import it")
    check_sandbox(py, kind, program)


@dataclass(frozen=True, eq=False)
class HandlerProgram:
    """Header/payload/completion handlers plus the handler memory they share.

    ``memory`` is the initial handler memory of each execution context (copied per context):
    a numpy array of any dtype and shape (a structured scalar becomes a 1-element array).
    """

    name: str
    header: Callable | None = None
    payload: Callable | None = None
    completion: Callable | None = None
    memory: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    header_cost: HandlerCost | None = None
    payload_cost: HandlerCost | None = None
    completion_cost: HandlerCost | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"HandlerProgram.name must be a non-empty string, got {self.name!r}")
        for kind in ("header", "payload", "completion"):
            check_handler(getattr(self, kind), kind, self.name)
        if self.header is None and self.payload is None and self.completion is None:
            raise HandlerError(f"program {self.name!r} has no handler")
        mem = np.asarray(self.memory)
        if mem.ndim == 0:
            mem = mem.reshape(1)
        object.__setattr__(self, "memory", np.ascontiguousarray(mem))

    def handlers(self) -> list[Callable | None]:
        return [self.header, self.payload, self.completion]

    def cost(self, kind: int) -> HandlerCost:
        fn = self.handlers()[kind]
        declared = (self.header_cost, self.payload_cost, self.completion_cost)[kind]
        if declared is not None:
            return declared
        return getattr(fn, "__spin_cost__", None) or HandlerCost()


def same_program(a: HandlerProgram, b: HandlerProgram) -> bool:
    """Programs are interchangeable for the engine when they run the same handlers on handler
    memory of the same dtype and rank (contents and sizes may differ per instance)."""
    return (a is b) or (a.handlers() == b.handlers() and a.memory.dtype == b.memory.dtype
                        and a.memory.ndim == b.memory.ndim)


@dataclass(frozen=True, eq=False)
class ExecutionContext:
    """A program installed on a device: ``node`` is a host's node id (its NIC) or any device's
    name (a host or a switch). A message belongs to the first execution context of that device
    (in installation order) whose set match fields all equal the packet's: ``match_qp`` and
    ``match_rkey`` (RoCE BTH/RETH), ``match_src``/``match_dst`` (node ids from the IPv4
    addresses), ``match_udp_dport`` and ``match_header_type`` (the first byte of a UDP payload
    that is not RoCE: project headers, e.g. in-network aggregation, start with a type byte).
    Unset fields match anything."""

    node: int | str
    program: HandlerProgram
    match_qp: int | None = None
    match_rkey: int | None = None
    match_src: int | None = None
    memory: np.ndarray | None = None   # initial contents overriding program.memory
    match_dst: int | None = None
    match_udp_dport: int | None = None
    match_header_type: int | None = None

    def match_row(self) -> tuple[int, ...]:
        """Match fields in engine column order (qp, rkey, src, dst, udp dport, header type),
        -1 for unset."""
        return tuple(-1 if v is None else int(v) for v in (
            self.match_qp, self.match_rkey, self.match_src, self.match_dst,
            self.match_udp_dport, self.match_header_type))

    def initial_memory(self) -> np.ndarray:
        base = self.program.memory
        if self.memory is None:
            return base.copy()
        mem = np.asarray(self.memory)
        if mem.dtype != base.dtype or mem.shape != base.shape:
            raise ConfigError(f"execution context on node {self.node}: memory has dtype "
                              f"{mem.dtype} shape {mem.shape}, program {self.program.name!r} "
                              f"declares dtype {base.dtype} shape {base.shape}")
        return mem.copy()
