"""Host programs: the message-level API a host runs (post a send, wait for messages or events,
compute, reduce in host memory, mark a time). Built in Python, executed by the engine."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .engine import state as S
from .errors import ConfigError
from .units import ns as ns_to_ps


@dataclass(frozen=True)
class HostCall:
    """What a ``HostProgram.call`` callback sees: its node, the virtual time, and the host's
    memory as a writable uint8 array."""

    node: int
    now_ps: int
    memory: np.ndarray


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

    def _qp(self, qp: int) -> int:
        if not 0 <= qp < self.n_qps:
            raise ConfigError(f"host {self.node}: qp={qp} outside 0..{self.n_qps - 1} "
                              f"(HostConfig.qps)")
        return qp

    def send(self, dst: int, nbytes: int, *, qp: int = 0, local_addr: int = 0,
             remote_addr: int = 0, rkey: int = 0) -> "HostProgram":
        """Post an RDMA WRITE of ``nbytes`` from ``local_addr`` to ``dst``'s ``remote_addr``."""
        if nbytes < 0:
            raise ConfigError(f"host {self.node}: send nbytes={nbytes} must be >= 0")
        self.ops.append([S.OP_SEND, dst, self._qp(qp), nbytes, local_addr, remote_addr, rkey, 0])
        return self

    def wait_recv(self, qp: int = 0, count: int = 1) -> "HostProgram":
        """Block until ``count`` more messages have been delivered on ``qp``."""
        if count < 1:
            raise ConfigError(f"host {self.node}: wait_recv count={count} must be >= 1")
        total = self._expected_recv.get(qp, 0) + count
        self._expected_recv[qp] = total
        self.ops.append([S.OP_WAIT_RECV, self._qp(qp), total, count, 0, 0, 0, 0])
        return self

    def wait_event(self, count: int = 1) -> "HostProgram":
        """Block until ``count`` more handler-raised host events arrived."""
        if count < 1:
            raise ConfigError(f"host {self.node}: wait_event count={count} must be >= 1")
        self._expected_events += count
        self.ops.append([S.OP_WAIT_EVENT, self._expected_events, count, 0, 0, 0, 0, 0])
        return self

    def compute(self, ns: float) -> "HostProgram":
        if ns < 0:
            raise ConfigError(f"host {self.node}: compute ns={ns} must be >= 0")
        self.ops.append([S.OP_COMPUTE, ns_to_ps(ns), 0, 0, 0, 0, 0, 0])
        return self

    def reduce(self, dst_addr: int, src_addr: int, count: int, dtype: str | np.dtype) -> "HostProgram":
        """``dst[i] += src[i]`` over ``count`` elements in host memory, charged per byte."""
        name = np.dtype(dtype).name
        if name not in S.DTYPE_CODES:
            raise ConfigError(f"host {self.node}: reduce dtype={name!r}; valid choices: "
                              f"{', '.join(S.DTYPE_CODES)}")
        self.ops.append([S.OP_REDUCE, dst_addr, src_addr, count, S.DTYPE_CODES[name], 0, 0, 0])
        return self

    def call(self, fn) -> "HostProgram":
        """Run ``fn(host: HostCall)`` in Python at this point of the program, in virtual time:
        it may read and write this host's memory (check received data, prepare the next
        buffer). Costs no virtual time; use ``compute`` to charge it. ``fn`` must be a
        module-level function so multi-process runs can import it."""
        import inspect
        if not callable(fn) or "<locals>" in getattr(fn, "__qualname__", "<locals>"):
            raise ConfigError(f"host {self.node}: call({fn!r}) needs a module-level function")
        if len(inspect.signature(fn).parameters) != 1:
            raise ConfigError(f"host {self.node}: call({fn.__qualname__}) must take one "
                              f"argument (a spin.host_program.HostCall)")
        assert self._callbacks is not None
        self._callbacks.append(fn)
        self.ops.append([S.OP_CALL, len(self._callbacks) - 1, 0, 0, 0, 0, 0, 0])
        return self

    def mark(self, label: str) -> "HostProgram":
        """Record the virtual time at which the program reaches this point."""
        assert self._mark_index is not None
        idx = self._mark_index.setdefault(label, len(self._mark_index))
        self.ops.append([S.OP_MARK, idx, 0, 0, 0, 0, 0, 0])
        return self
