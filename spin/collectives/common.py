"""What every allreduce builder shares: element types, the split of a vector into blocks, the
folding of a non-power-of-two rank count into a power of two, and the plan a builder returns.

Host memory of every rank is laid out the same way (same addresses on every host), so a plan
names one result address for all ranks:

    [0, S)                 data: the rank's input, overwritten by the result (MPI_IN_PLACE)
    [S, S + scratch)       receive scratch, one disjoint region per step that receives

A message only ever lands in scratch of its own step or in data that no pending send of the
receiver still reads (argued per algorithm), so no message overwrites data still needed.
Reductions are ``HostProgram.reduce`` ops: int32/float32 run the engine's operators; the 16-bit
types run a numpy operator through the function path, charged the same
``HostConfig.reduce_ps_per_byte`` per input byte, so every baseline pays the host cost model.
With ``Scenario.payload = "generated"`` no host keeps the bytes, so a reduction is its time
alone: a ``compute`` of exactly what the reduce op is charged (the virtual times match a stored
run's to the picosecond), and the run allocates no host memory: a collective too large to
store (512 ranks of 64 MiB need 32 GiB of inputs alone) can still be timed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import NicConfig, TransportConfig
from ..errors import ConfigError, HostMemoryError

# name -> (storage dtype in host memory, bytes per element)
DTYPES = {"int32": "int32", "float32": "float32", "float16": "float16", "bfloat16": "uint16"}
ALIGN_BYTES = 64          # buffers start on cache-line boundaries
START_MARK, END_MARK = "start", "end"


def check_dtype(dtype: str) -> str:
    """``dtype`` if it is one of DTYPES, else a ConfigError listing them."""
    if dtype not in DTYPES:
        raise ConfigError(f"allreduce dtype={dtype!r}; valid choices: {', '.join(DTYPES)}")
    return dtype


def itemsize(dtype: str) -> int:
    """Bytes per element as stored in host memory."""
    return np.dtype(DTYPES[check_dtype(dtype)]).itemsize


def align(nbytes: int) -> int:
    """``nbytes`` rounded up to ALIGN_BYTES, so every buffer starts aligned for any element."""
    return -(-nbytes // ALIGN_BYTES) * ALIGN_BYTES


def block_counts(count: int, parts: int) -> list[int]:
    """``count`` elements in ``parts`` blocks differing by at most one (the first get more), as
    MPI implementations split a vector that does not divide evenly."""
    base, extra = divmod(count, parts)
    return [base + (1 if b < extra else 0) for b in range(parts)]


def offsets(counts: list[int]) -> list[int]:
    """Prefix sums: where each block starts, then the total."""
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out + [acc]


# -- 16-bit sums (module level: worker processes import them by name) --------------------------
# Each pairwise add is computed in float32 and rounded once to the 16-bit format. Both formats
# have p <= 11 significand bits and float32 has 24 >= 2p + 2, so this double rounding is
# innocuous: the result is the correctly rounded 16-bit sum (Figueroa, SIGNUM 1995).

def sum_float16(dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """dst + src in IEEE binary16, correctly rounded."""
    with np.errstate(over="ignore"):          # overflow to infinity is IEEE's answer
        return (dst.astype(np.float32) + src.astype(np.float32)).astype(np.float16)


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as the float32 values they denote (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even; NaN stays a quiet NaN (truncation could turn it into infinity)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    return np.where(np.isnan(x), np.uint32(0x7FC0), rounded).astype(np.uint16)


def sum_bfloat16(dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """dst + src on bfloat16 bit patterns, correctly rounded."""
    with np.errstate(over="ignore"):
        return float32_to_bf16(bf16_to_float32(dst) + bf16_to_float32(src))


_SUM16 = {"float16": sum_float16, "bfloat16": sum_bfloat16}


@dataclass(frozen=True)
class AllreducePlan:
    """What a builder laid out: enough for a test or the CLI to read results back and time them.

    ``result_addr`` holds ``count`` elements of ``storage_dtype`` on every rank's host after the
    run; ``start_mark``/``end_mark`` are marks every rank records (time = latest end - earliest
    start). ``memory_bytes`` is the host memory the layout needs (``HostConfig.memory_bytes``)."""

    algorithm: str
    hosts: tuple[int, ...]
    count: int
    dtype: str
    input_addr: int
    result_addr: int
    scratch_addr: int
    memory_bytes: int
    qps: tuple[int, ...]
    start_mark: str = START_MARK
    end_mark: str = END_MARK

    @property
    def storage_dtype(self) -> str:
        return DTYPES[self.dtype]

    @property
    def nbytes(self) -> int:
        """S: bytes per rank (nccl-tests' size)."""
        return self.count * itemsize(self.dtype)

    @property
    def n(self) -> int:
        return len(self.hosts)

    def reads(self) -> list[tuple[int, int, int, str]]:
        """(node, addr, count, dtype) of every rank's result, for ``spin.testing.run``."""
        return [(h, self.result_addr, self.count, self.storage_dtype) for h in self.hosts]


def reduce_ps(nbytes: int, ps_per_byte: float) -> int:
    """What a host reduce of ``nbytes`` of input is charged (ps), rounded as the engine rounds
    it (``nic_emulator.host``: milli-picoseconds per byte, rounded up)."""
    return (nbytes * int(round(ps_per_byte * 1000)) + 999) // 1000


class Builder:
    """Emits one rank's ops with the plan's element type: ``reduce`` picks the engine operator or
    the 16-bit function, zero-length transfers are skipped on both sides (both know the sizes),
    and addresses are element offsets into the shared layout."""

    def __init__(self, scenario, plan_hosts: tuple[int, ...], dtype: str, qp_base: int,
                 n_qps: int):
        self.sc = scenario
        self.hosts = plan_hosts
        self.dtype = dtype
        self.width = itemsize(dtype)
        self.qp_base = qp_base
        if qp_base < 0 or qp_base + n_qps > scenario.host.qps:
            raise ConfigError(f"allreduce needs qps {qp_base}..{qp_base + n_qps - 1}; "
                              f"HostConfig.qps={scenario.host.qps} (raise it or lower qp)")
        self.progs = [scenario.host_program(h) for h in plan_hosts]

    def send(self, rank: int, to_rank: int, step: int, src: int, dst: int, count: int) -> None:
        """Post ``count`` elements from ``src`` to ``to_rank``'s ``dst`` on the step's QP."""
        if count > 0:
            self.progs[rank].send(self.hosts[to_rank], count * self.width, qp=self.qp_base + step,
                                  local_addr=src, remote_addr=dst)

    def recv(self, rank: int, step: int, count: int) -> None:
        """Wait for the step's message of ``count`` elements (nothing if it is empty)."""
        if count > 0:
            self.progs[rank].wait_recv(qp=self.qp_base + step)

    def reduce(self, rank: int, dst: int, src: int, count: int) -> None:
        """dst += src over ``count`` elements (byte addresses); with generated payload, the
        reduction's time only (see the module's docstring)."""
        if count <= 0:
            return
        prog = self.progs[rank]
        if self.sc.payload == "generated":
            nbytes, rate = count * self.width, self.sc.host.reduce_ps_per_byte
            # the function path charges its compute unrounded, the engine's op rounded up
            prog.compute(nbytes * rate / 1000 if self.dtype in _SUM16
                         else reduce_ps(nbytes, rate) / 1000)
        elif self.dtype in _SUM16:
            prog.reduce(dst, src, count, DTYPES[self.dtype], op=_SUM16[self.dtype],
                        ps_per_byte=self.sc.host.reduce_ps_per_byte)
        else:
            prog.reduce(dst, src, count, self.dtype, op="sum")

    def mark_all(self, label: str) -> None:
        """Every rank records ``label`` at this point of its program."""
        for p in self.progs:
            p.mark(label)


@dataclass(frozen=True)
class Fold:
    """Non-power-of-two n, as MPICH does it: with p = 2**floor(log2 n) and r = n - p, each even
    rank below 2r hands its vector to the odd rank above it and sits out; the p survivors run
    the power-of-two algorithm under new ranks, and the odd ranks hand the result back."""

    n: int

    @property
    def p(self) -> int:
        """Survivors: the largest power of two <= n."""
        return 1 << (self.n.bit_length() - 1)

    @property
    def extra(self) -> int:
        """Ranks that sit out."""
        return self.n - self.p

    def new_rank(self, rank: int) -> int:
        """The rank among the p survivors, or -1 for a rank that sits out."""
        if rank < 2 * self.extra:
            return -1 if rank % 2 == 0 else rank // 2
        return rank - self.extra

    def old_rank(self, new: int) -> int:
        """The rank of survivor ``new``."""
        return 2 * new + 1 if new < self.extra else new + self.extra


def reliable_transport(n: int, nbytes: int) -> tuple[dict, dict]:
    """Loss recovery of the host algorithms: their messages ride the RoCEv2 reliable
    connection (``TransportConfig(kind="rc")``: ACK/NAK, go-back-N, timeouts)."""
    return {"nic": NicConfig(transport=TransportConfig(kind="rc"))}, {}


def check_args(scenario, count: int, dtype: str, hosts) -> tuple[int, ...]:
    """The ranks' hosts (default: every host), after checking dtype, hosts and count."""
    check_dtype(dtype)
    hosts = tuple(range(scenario.n_hosts)) if hosts is None else tuple(int(h) for h in hosts)
    if len(hosts) < 2 or len(set(hosts)) != len(hosts):
        raise ConfigError(f"allreduce hosts={list(hosts)}: need at least 2 distinct hosts")
    for h in hosts:
        if not 0 <= h < scenario.n_hosts:
            raise ConfigError(f"allreduce host {h}: valid hosts are 0..{scenario.n_hosts - 1}")
    if count < 1:
        raise ConfigError(f"allreduce count={count}: need at least 1 element")
    return hosts


def write_inputs(scenario, plan: AllreducePlan, inputs) -> None:
    """Place rank i's input (row i of ``inputs``, in the plan's storage dtype) at input_addr."""
    data = np.asarray(inputs)
    want = (plan.n, plan.count)
    if data.shape != want or data.dtype != np.dtype(plan.storage_dtype):
        raise ConfigError(f"allreduce inputs: shape {data.shape} dtype {data.dtype}; expected "
                          f"{want} {plan.storage_dtype} (one row per rank)")
    for rank, host in enumerate(plan.hosts):
        scenario.write_host_memory(host, plan.input_addr, data[rank])


def check_memory(scenario, plan: AllreducePlan) -> None:
    """Refuse a layout that does not fit the scenario's host memory, naming what it needs."""
    if plan.memory_bytes > scenario.host.memory_bytes:
        raise HostMemoryError(f"{plan.algorithm} allreduce of {plan.nbytes} B on {plan.n} "
                              f"ranks needs HostConfig.memory_bytes >= {plan.memory_bytes}; it "
                              f"is {scenario.host.memory_bytes}", plan.memory_bytes)


def scratch_regions_memory(n: int, count: int, dtype: str) -> int:
    """Host memory of a ``block_layout``: the data, then one scratch region per other rank."""
    w = itemsize(dtype)
    return align(count * w) + max(n - 1, 0) * align(max(block_counts(count, n)) * w)


@dataclass(frozen=True)
class BlockLayout:
    """Where an all-reduce that moves one block per rank keeps its bytes (the ring and the
    direct algorithm): the data at ``data``, block ``p`` at ``data + offsets[p] * width``,
    and ``n - 1`` scratch regions of ``region`` bytes from ``scratch`` for incoming blocks."""

    plan: AllreducePlan
    n: int
    width: int
    counts: list[int]
    offsets: list[int]
    data: int
    scratch: int
    region: int


def block_layout(scenario, name: str, count: int, dtype: str, hosts,
                 qps: tuple[int, ...]) -> BlockLayout:
    """The checked plan and layout of a block-per-rank all-reduce of ``count`` elements."""
    hosts = check_args(scenario, count, dtype, hosts)
    n, w = len(hosts), itemsize(dtype)
    counts = block_counts(count, n)
    data, scratch = 0, align(count * w)
    plan = AllreducePlan(name, hosts, count, dtype, data, data, scratch,
                         scratch_regions_memory(n, count, dtype), qps)
    check_memory(scenario, plan)
    return BlockLayout(plan, n, w, counts, offsets(counts), data, scratch,
                       align(max(counts) * w))
