"""Allreduce by aggregation in the switches, with SwitchML's semantics (``handlers/switchml.py``
in the switches, ``handlers/switchml_worker.py`` on the workers' NICs).

Each rank's NIC streams its vector through a window of switch slots, one packet of k = MTU/w
elements of w bytes per slot (header in the RETH VA, ``spin.wire.switchml``); the switches of
the job's tree (``switch_tree``) add the children's packets and send one partial up; the root
multicasts the sum down; each NIC writes it over its input (in place, as MPI_IN_PLACE) and
raises one host event at the end. The host only posts the start (a message to its own node,
which the NIC turns around through its loopback, so it crosses no link and cannot be lost) and
waits: host CPU is two message overheads. Lost contributions and results are resent on a
NIC-side timer (``spin_set_timer``; ``handlers/switchml_worker.py``).

Jobs: ``SwitchMLJob`` describes one (its number selects its slot range in every switch it
crosses); ``install_jobs`` sets up any number of them on one scenario, sharing the switches'
memory, and returns per job the host-program steps to call (both live in ``switchml_jobs``,
below this module and the quantized and HammingMesh variants, and are re-exported here). ``build`` is the registry's
builder (one job over all ranks): int32 sums exactly; float32 is summed natively in the switch
(as SHARP and Flare do) or, with ``mode="quantized"``, converted to int32 at the workers with
SwitchML's block exponents (``spin.collectives.quantize``); float16 and bfloat16 travel as
16-bit elements (twice the elements per packet, half the wire bytes of float32 for a count),
are summed in float32 in the switches and rounded to 16 bits once per switch that adds (the
partials go up the tree as 16-bit too: ``switch_result_bound``). Float sums are added in
child order at every switch (``handlers/switchml.py``), so a float result is the same bits
under loss and retransmissions as without, for any worker count. On a HammingMesh ``build``
runs the paper's row then column reductions instead of one tree (``hamming_mesh_allreduce``;
its ``scheme`` argument picks).

Host memory (same on every rank): ``[0, S)`` data, in and out; then one MTU per 128 slots of
window for the start message; quantized mode adds the block exponents and the int32 copy.
"""
from __future__ import annotations

import numpy as np

from ..config import EngineConfig, SwitchConfig
from ..errors import ConfigError
from ..wire import switchml as SW
from .accuracy import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, as_float64
from .accuracy import check_result as check_exact
from .common import AllreducePlan, align, check_args, check_memory, itemsize, write_inputs
from .hamming_mesh_allreduce import add_row_column_steps, resolve_scheme
from .quantize import add_quantized_steps, error_bound, quantized_bytes
from .switchml_jobs import (DEFAULT_WINDOW, MAX_MTU, MIN_MTU, PART_SLOTS,  # noqa: F401
                            SwitchMLJob, SwitchMLSetup, install_jobs, kick_bytes)

NAME = "switch"
# The registry's workers retransmit after 100 us: a frame dropped anywhere (a full switch
# message table, a lossy link) then costs time, not the run. SwitchML's own default is 10 ms,
# tuned for DPDK hosts; runs here last microseconds to milliseconds of virtual time.
DEFAULT_TIMEOUT_US = 100.0
MODES = ("native", "quantized")


DTYPES = tuple(SW.SUM_TYPES)    # int32, float32, float16, bfloat16: what the switch adds


def run_configs(n: int, window: int = DEFAULT_WINDOW) -> dict:
    """Engine room for ``n`` ranks streaming ``window`` packets each: every packet in flight is
    a transmit message at its NIC, a frame in the buffer pool, pending events, and a message
    held by a switch until its handler finished (a switch holds at most its children's windows;
    the widest switch of a k = 16 fat tree has 16 children). Sized from n so that small jobs keep
    the defaults and 1024 ranks fit (about 2.2 GB of frame buffers at MTU 4 KiB)."""
    base, base_sw = EngineConfig(), SwitchConfig()
    packets = n * window
    return {"engine": EngineConfig(max_tx_messages=max(base.max_tx_messages, 2 * packets),
                                   max_rx_messages=max(base.max_rx_messages, 2 * packets),
                                   buffer_slots=max(base.buffer_slots, 4 * packets),
                                   max_events_pending=max(base.max_events_pending, 8 * packets)),
            "switch": SwitchConfig(max_inflight_messages=max(base_sw.max_inflight_messages,
                                                             2 * min(n, 64) * window))}


def programs() -> list:
    """The handler programs a switch allreduce installs (the engine is compiled for these)."""
    from handlers.switchml import switchml_switch_program
    from handlers.switchml_worker import switchml_worker_program
    return [switchml_switch_program(), switchml_worker_program()]


def plan_memory(n: int, count: int, dtype: str, mode: str = "native",
                window: int = DEFAULT_WINDOW) -> int:
    """Host bytes the layout needs: data, the start message, and in quantized mode the block
    exponents and the int32 copy."""
    base = align(itemsize(dtype) * count) + align(kick_bytes(window))
    return base + (quantized_bytes(count, MIN_MTU // 4) if mode == "quantized" else 0)


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None, qp: int = 0,
          mode: str = "native", window: int = DEFAULT_WINDOW, job: int = 0,
          timeout_us: float = DEFAULT_TIMEOUT_US, drop_ppm: int = 0, drop_result_ppm: int = 0,
          scheme: str = "auto") -> AllreducePlan:
    """Add an in-switch allreduce of ``count`` elements per rank to ``scenario``: int32,
    float32 (``mode`` "native": the switch adds float32; "quantized": SwitchML's block-exponent
    int32), float16 or bfloat16 (16 bits on the wire, added in float32 in the switch). The
    retransmission and drop options are ``install_jobs``'s; the timer runs by default
    (``DEFAULT_TIMEOUT_US``). ``scheme``: ``hamming_mesh_allreduce.SCHEMES``; ``auto``
    reduces along rows then columns on a HammingMesh and runs one tree elsewhere.

    Large fabrics need engine room for a window of packets per rank: ``EngineConfig``
    ``max_tx_messages`` and ``buffer_slots`` above ranks x window, and ``SwitchConfig``
    ``max_inflight_messages`` above what a switch holds at once (every contribution is a
    message until its handler finished), else frames are dropped and retransmitted."""
    hosts = check_args(scenario, count, dtype, hosts)
    if mode not in MODES:
        raise ConfigError(f"switch allreduce mode={mode!r}; valid choices: {', '.join(MODES)}")
    if mode == "quantized" and dtype not in ("float32", "int32"):
        raise ConfigError(f"switch allreduce mode='quantized' with dtype={dtype!r}: quantized "
                          f"mode converts float32 only (16-bit floats are summed natively)")
    quantized = mode == "quantized" and dtype == "float32"
    scheme = resolve_scheme(scenario.topology, scheme, hosts, quantized)
    data = 0
    kick = align(itemsize(dtype) * count)
    extra = align(kick + kick_bytes(window))
    plan = AllreducePlan(NAME if not quantized else f"{NAME}-quantized", hosts, count, dtype,
                         data, data, kick,
                         plan_memory(len(hosts), count, dtype, "quantized" if quantized
                                     else "native", window), (qp,))
    check_memory(scenario, plan)
    progs = [scenario.host_program(h) for h in hosts]
    for p in progs:
        p.mark(plan.start_mark)
    opts = dict(qp=qp, timeout_us=timeout_us, drop_ppm=drop_ppm, drop_result_ppm=drop_result_ppm)
    if quantized:
        add_quantized_steps(scenario, progs, hosts, count, data, kick, extra, job, window, opts)
    else:
        op = SW.SUM_TYPES[dtype]
        if scheme != "tree":
            add_row_column_steps(scenario, progs, hosts, count, data, kick, op, window, job,
                                 scheme == "row-column-split", opts)
        else:
            spec = SwitchMLJob(job, hosts, count, data, kick, op, window)
            setup = install_jobs(scenario, [spec], **opts)
            for p in progs:
                setup.start(p, spec)
    for p in progs:
        p.mark(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan


def switch_result_bound(inputs: np.ndarray, dtype: str, mode: str = "native", k: int = 0,
                        levels: int | None = None) -> np.ndarray:
    """Largest error per element the switch allreduce may make against the exact sum, for the
    inputs as stored (bfloat16 as bits): 0 for int32; quantized as ``quantize.error_bound``
    with blocks of ``k`` elements; native floats as ``native_float_bound`` with ``levels``
    (``rounding_levels`` of the job's tree; default n-1, the most any tree has)."""
    if dtype == "int32":
        return np.zeros(inputs.shape[1])
    if mode == "quantized":
        return error_bound(inputs, k)
    return native_float_bound(as_float64(inputs, dtype), dtype, levels)


def native_float_bound(x: np.ndarray, dtype: str, levels: int | None = None) -> np.ndarray:
    """Error bound of the switch's float sum of ``x`` (float64, one row per rank).

    float32: any order of n-1 rounded additions, (n-1) u A + n s (``accuracy.check_result``),
    with A = sum |x_i| and s the smallest subnormal. The switches add in one fixed order (child
    order at every switch), which is one of them: every run gives the same result.

    float16 / bfloat16: widening to float32 is exact; a switch adds its c children in float32
    (c-1 additions, relative error u32 = 2^-24 each; additions in float32's subnormal range are
    exact) and rounds the sum once to 16 bits (relative u16, 2^-11 / 2^-8, or absolute s/2 in
    the subnormal range; exact at a one-child switch). Summed over the tree: the float32
    additions number n-1 in all, and each input passes through at most L roundings (L =
    ``levels``), so |err| <= g (g32 + L u16) A + n s, with g32 = (n-1) u32 / (1 - (n-1) u32)
    and g = (1 + u16)^L (1 + g32) the growth of the partials' magnitudes (Higham, ch. 3-4).
    Overflow to infinity (float16 beyond 65504) is not bounded."""
    n = x.shape[0]
    size = np.abs(x).sum(axis=0)
    tiny = n * SMALLEST_SUBNORMAL[dtype]
    u32 = UNIT_ROUNDOFF["float32"]
    if dtype == "float32":
        return (n - 1) * u32 * size + tiny
    rounds = n - 1 if levels is None else levels
    u = UNIT_ROUNDOFF[dtype]
    g32 = (n - 1) * u32 / (1 - (n - 1) * u32)
    return (1 + u) ** rounds * (1 + g32) * (g32 + rounds * u) * size + tiny


def rounding_levels(tree: dict) -> int:
    """Most 16-bit roundings on a rank's way to the result in ``tree`` (``SwitchMLSetup.trees``):
    the switches with two or more children above it (a one-child switch rounds exactly)."""
    per_host: dict[int, int] = {}
    for node in tree.values():
        if len(node.children) >= 2:
            for _kind, _node, hosts in node.children:
                for h in hosts:
                    per_host[h] = per_host.get(h, 0) + 1
    return max(per_host.values(), default=0)


def build_quantized(scenario, count: int, dtype: str = "float32", **options) -> AllreducePlan:
    """``build`` in SwitchML's own float mode (the registry's ``switch-quantized``)."""
    return build(scenario, count, dtype, mode="quantized", **options)


def plan_memory_quantized(n: int, count: int, dtype: str) -> int:
    return plan_memory(n, count, dtype, "quantized")


def check_quantized(inputs: np.ndarray, results: list[np.ndarray],
                    dtype: str) -> tuple[bool, float]:
    """Every rank the same bits, within ``quantize.error_bound`` of the exact sum for blocks of
    the largest packet (MAX_MTU/4 elements: a block exponent over more elements is coarser,
    so the bound holds for any MTU)."""
    first = results[0]
    same = all(np.array_equal(r.view(np.uint8), first.view(np.uint8)) for r in results)
    err = np.abs(first.astype(np.float64) - inputs.astype(np.float64).sum(axis=0))
    bound = switch_result_bound(inputs, dtype, "quantized", MAX_MTU // 4)
    return same and bool(np.all(err <= bound)), float(err.max(initial=0))


def check_result(inputs: np.ndarray, results: list[np.ndarray], dtype: str) -> tuple[bool, float]:
    """``accuracy.check_result`` with the switch's float bound (any tree: L = n-1)."""
    return check_exact(inputs, results, dtype, bound=native_float_bound)
