"""Host programs: the message-level API a host runs (post a send, wait for messages or events,
compute, reduce in host memory, mark a time). Built in Python, executed by the engine."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Callable

import numpy as np

from .checks import import_object
from ..engine import state as S
from ..engine.layout import HOST_OPS as _OP
from ..errors import ConfigError
from ..units import ns as ns_to_ps

MAX_COMPUTE_NS = 1e12   # one compute op of up to 1000 s: int64 picoseconds stay exact


# dtypes a function operator may reduce beyond the engine's own (16-bit floats, bfloat16 bits)
FUNCTION_DTYPES = (*S.DTYPE_CODES, "float16", "uint16")


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype) -> str:
    """numpy's name of ``dtype``, cached: a ring of 1024 ranks adds a million reduce ops."""
    return np.dtype(dtype).name


@functools.lru_cache(maxsize=None)
def _layout(variant: str) -> tuple[int, dict[str, int]]:
    """A host op's code and the word of each of its fields, by lower-case name."""
    return _OP.codes[variant], {f.lower(): 1 + i for i, f in enumerate(_OP.fields[variant])}


def _record(variant: str, **values: int) -> list[int]:
    """``HOST_OPS.record`` with the fields' words looked up once per variant: a 1,024-rank
    training step adds over a million ops, and finding each field by name took most of
    their time."""
    code, words = _layout(variant)
    row = [0] * S.HOST_OP_WIDTH
    row[0] = code
    try:
        for f, v in values.items():
            row[words[f]] = int(v)
    except KeyError:
        return _OP.record(variant, **values)         # raises, naming the field
    return row


@functools.lru_cache(maxsize=1)
def _reduce_ops():
    from nic_emulator.host_reduce import BITWISE_OPS, REDUCE_OPS
    return BITWISE_OPS, REDUCE_OPS


@dataclass(frozen=True)
class HostCall:
    """What a ``HostProgram.call`` callback sees: its node, the virtual time, and the host's
    memory as a writable uint8 array."""

    node: int
    now_ps: int
    memory: np.ndarray


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _check_module_level(where: str, fn, what: str) -> None:
    """Callbacks travel to worker processes by reference: lambdas and closures cannot."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not callable(fn) or not name or "<" in name:
        raise ConfigError(f"{where}: {what}({fn!r}) needs a module-level function")


def operator_of(spec, source: str) -> "str | Callable":
    """The ``op`` of a scenario file's reduce op: its ``operator`` name, or the function named by
    ``function`` ("module:function", importable or next to the scenario file ``source``)."""
    if spec.function is None:
        return spec.operator
    if "operator" in spec.model_fields_set:
        raise ConfigError(f"operator = {spec.operator!r} and function = {spec.function!r}: give "
                          f"one of them")
    src = Path(source)
    try:
        return import_object(spec.function, src.resolve().parent if src.is_file() else None)
    except ValueError as exc:
        raise ConfigError(f"function = {spec.function!r}: {exc}") from None


@dataclass(frozen=True)
class ElementwiseReduce:
    """A host-program call applying ``fn(dst, src) -> new dst`` to two host-memory regions."""

    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    dst_addr: int
    src_addr: int
    count: int
    dtype: str

    def __call__(self, host: HostCall) -> None:
        width = np.dtype(self.dtype).itemsize
        mem = host.memory
        end = max(self.dst_addr, self.src_addr) + self.count * width
        if min(self.dst_addr, self.src_addr) < 0 or end > mem.size:
            raise ConfigError(f"reduce op={_name(self.fn)}: [{self.dst_addr}, {self.src_addr}] "
                              f"+ {self.count} x {self.dtype} outside host memory of {mem.size} B")
        dst = mem[self.dst_addr:self.dst_addr + self.count * width].view(self.dtype)
        src = mem[self.src_addr:self.src_addr + self.count * width].view(self.dtype)
        out = np.asarray(self.fn(dst.copy(), src.copy()))
        if out.shape != dst.shape:
            raise ConfigError(f"reduce op={_name(self.fn)} returned shape {out.shape}, expected "
                              f"({self.count},) {self.dtype} elements")
        dst[:] = out.astype(self.dtype, copy=False)


@dataclass
class HostProgram:
    """Ops of one host, in order. Cumulative receive counts are tracked here so that
    ``wait_recv(qp, count)`` reads as "wait for ``count`` more messages"."""

    node: int
    n_qps: int
    ops: list[list[int]] = field(default_factory=list)
    _expected_recv: dict[int, int] = field(default_factory=dict)
    _expected_events: int = 0
    _mark_index: dict[str, int] | None = None
    _callbacks: list | None = None
    _array: np.ndarray | None = field(default=None, repr=False, compare=False)
    # every host's name, by node id (from the topology): names in errors, names as destinations
    _hosts: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:
        """One line: the host and how many ops of each kind (a ring of 1024 ranks has six
        thousand ops per host)."""
        names = {code: name.removeprefix("OP_").lower() for name, code in vars(S).items()
                 if name.startswith("OP_") and isinstance(code, int)}
        kinds: dict[str, int] = {}
        for op in self.ops:
            kind = names.get(op[0], str(op[0]))
            kinds[kind] = kinds.get(kind, 0) + 1
        shown = ", ".join(f"{k} x{n}" for k, n in kinds.items())
        return f"HostProgram(host {self.label}, {len(self.ops)} ops{': ' + shown if shown else ''})"

    @property
    def label(self) -> str:
        """This host as errors name it: ``'h1' (node 1)`` (``1`` without a topology)."""
        return f"{self._hosts[self.node]!r} (node {self.node})" if self._hosts else str(self.node)

    @property
    def _where(self) -> str:
        """The op being added, for errors: ``host 'h0' (node 0) op 3``."""
        return f"host {self.label} op {len(self.ops)}"

    def _destination(self, dst: int | str) -> int:
        """Node id of a send's destination given as node id or host name; a ConfigError
        naming this host, the op's index and the valid hosts otherwise."""
        if type(dst) is int and 0 <= dst < len(self._hosts):
            return dst                  # the common case, before the slower checks below
        if isinstance(dst, str) and dst in self._hosts:
            return self._hosts.index(dst)
        n = len(self._hosts)
        if isinstance(dst, Integral) and not isinstance(dst, bool) and (not n or 0 <= dst < n):
            return int(dst)
        hosts = ", ".join(f"{h} (node {i})" for i, h in enumerate(self._hosts[:16]))
        more = f", ... ({n} in all)" if n > 16 else ""
        raise ConfigError(f"{self._where} (send): dst={dst!r} is not a host; give a node id "
                          f"0..{n - 1} or a host name: {hosts}{more}")

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_array": None}     # workers rebuild it; do not ship it twice

    def op_array(self) -> np.ndarray:
        """The ops as the engine's int64 rows (kept until the next op is added: a 1024-rank
        ring has six thousand ops per host, converted once for checks, partitioning and the
        engine state)."""
        if self._array is None or len(self._array) != len(self.ops):
            self._array = np.asarray(self.ops, np.int64).reshape(len(self.ops), S.HOST_OP_WIDTH)
        return self._array

    def _qp(self, qp: int) -> int:
        if not 0 <= qp < self.n_qps:
            raise ConfigError(f"{self._where}: qp={qp} outside 0..{self.n_qps - 1} "
                              f"(HostConfig.qps)")
        return qp

    def send(self, dst: int | str, nbytes: int, *, qp: int = 0, local_addr: int = 0,
             remote_addr: int = 0, rkey: int = 0) -> "HostProgram":
        """Post an RDMA WRITE of ``nbytes`` from ``local_addr`` to ``dst``'s ``remote_addr``;
        ``dst`` is a node id or a host name."""
        dst = self._destination(dst)
        if nbytes < 0:
            raise ConfigError(f"{self._where} (send): nbytes={nbytes} must be >= 0")
        self.ops.append(_record("SEND", dst=dst, qp=self._qp(qp), nbytes=nbytes,
                                   local_addr=local_addr, remote_addr=remote_addr, rkey=rkey))
        return self

    def wait_recv(self, qp: int = 0, count: int = 1) -> "HostProgram":
        """Block until ``count`` more messages have been delivered on ``qp``."""
        if count < 1:
            raise ConfigError(f"{self._where}: wait_recv count={count} must be >= 1")
        total = self._expected_recv.get(qp, 0) + count
        self._expected_recv[qp] = total
        self.ops.append(_record("WAIT_RECV", qp=self._qp(qp), total=total, count=count))
        return self

    def wait_event(self, count: int = 1) -> "HostProgram":
        """Block until ``count`` more handler-raised host events arrived."""
        if count < 1:
            raise ConfigError(f"{self._where}: wait_event count={count} must be >= 1")
        self._expected_events += count
        self.ops.append(_record("WAIT_EVENT", total=self._expected_events, count=count))
        return self

    def compute(self, ns: float) -> "HostProgram":
        """Keep the host's CPU busy for ``ns`` nanoseconds (application work between messages)."""
        if not 0 <= ns <= MAX_COMPUTE_NS:   # NaN and inf fail too
            raise ConfigError(f"{self._where}: compute ns={ns} must be a time in "
                              f"0..{MAX_COMPUTE_NS:.0e} ns (1000 s)")
        self.ops.append(_record("COMPUTE", duration_ps=ns_to_ps(ns)))
        return self

    def reduce(self, dst_addr: int, src_addr: int, count: int, dtype: str | np.dtype,
               op: str | Callable[[np.ndarray, np.ndarray], np.ndarray] = "sum", *,
               ps_per_byte: float | None = None) -> "HostProgram":
        """``dst[i] = dst[i] OP src[i]`` over ``count`` elements in host memory: the host-based
        variant of a reducing handler in one op.

        ``op`` is an MPI operator name (``nic_emulator.host_reduce.REDUCE_OPS``: sum, max, min,
        prod, and bitwise band, bor, bxor on integers), charged ``HostConfig.reduce_ps_per_byte``
        per input byte; or a module-level function ``op(dst, src) -> new dst`` on numpy arrays,
        run through ``call`` and charged the declared ``ps_per_byte``; a function may also take
        16-bit types (float16, or bfloat16 stored as uint16), which the engine has no code for."""
        name = _dtype_name(dtype)
        if callable(op) and name in FUNCTION_DTYPES:
            return self._reduce_with(op, dst_addr, src_addr, count, name, ps_per_byte)
        if name not in S.DTYPE_CODES:
            raise ConfigError(f"{self._where}: reduce dtype={name!r}; valid choices: "
                              f"{', '.join(S.DTYPE_CODES)} (functions also: float16, uint16)")
        BITWISE_OPS, REDUCE_OPS = _reduce_ops()
        if op not in REDUCE_OPS:
            raise ConfigError(f"{self._where}: reduce op={op!r}; valid choices: "
                              f"{', '.join(REDUCE_OPS)} or a function op(dst, src) -> dst")
        if op in BITWISE_OPS and name not in ("int32", "int64"):
            raise ConfigError(f"{self._where}: reduce op={op!r} with dtype={name!r}; bitwise "
                              f"operators take dtype int32 or int64")
        if ps_per_byte is not None:
            raise ConfigError(f"{self._where}: reduce op={op!r} with ps_per_byte="
                              f"{ps_per_byte}: built-in operators cost "
                              f"HostConfig.reduce_ps_per_byte; ps_per_byte is for functions")
        self.ops.append(_record("REDUCE", dst_addr=dst_addr, src_addr=src_addr, count=count,
                                   dtype=S.DTYPE_CODES[name], operator=REDUCE_OPS[op]))
        return self

    def _reduce_with(self, fn, dst_addr: int, src_addr: int, count: int, dtype: str,
                     ps_per_byte: float | None) -> "HostProgram":
        if ps_per_byte is None or not ps_per_byte >= 0:
            raise ConfigError(f"{self._where}: reduce op={_name(fn)} needs ps_per_byte >= 0 "
                              f"(its host CPU cost per input byte), got {ps_per_byte}")
        _check_module_level(self._where, fn, "reduce op")
        nbytes = count * np.dtype(dtype).itemsize
        self._add_call(ElementwiseReduce(fn, dst_addr, src_addr, count, dtype))
        return self.compute(nbytes * ps_per_byte / 1000)

    def call(self, fn: Callable[[HostCall], None]) -> "HostProgram":
        """Run ``fn(host: HostCall)`` in Python at this point of the program, in virtual time:
        it may read and write this host's memory (check received data, prepare the next
        buffer). Costs no virtual time; use ``compute`` to charge it. ``fn`` must be a
        module-level function so multi-process runs can import it."""
        import inspect
        _check_module_level(self._where, fn, "call")
        if len(inspect.signature(fn).parameters) != 1:
            raise ConfigError(f"{self._where}: call({fn.__qualname__}) must take one "
                              f"argument (a spin.describe.host_program.HostCall)")
        return self._add_call(fn)

    def _add_call(self, fn) -> "HostProgram":
        assert self._callbacks is not None
        self._callbacks.append(fn)
        self.ops.append(_record("CALL", callback=len(self._callbacks) - 1))
        return self

    def mark(self, label: str) -> "HostProgram":
        """Record the virtual time at which the program reaches this point."""
        assert self._mark_index is not None
        idx = self._mark_index.setdefault(label, len(self._mark_index))
        self.ops.append(_record("MARK", index=idx))
        return self
