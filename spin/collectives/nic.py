"""NIC-offloaded ring allreduce (``handlers/nic_allreduce.py``): each rank's host posts its
vector to its own NIC, block by block in the order the ring needs them, and waits for one event;
the NIC streams it in with pipelined DMA and the NICs reduce, forward and write the result.

Variants differ only in handler memory (their handlers compile once for all):

* ``nic``: dense values, int32 / float32 / float16 / bfloat16. Block b is summed in the host
  ring's order, so results equal ``ring``'s bit for bit.
* ``nic-int8``: float32 data, every hop after the first sends int8 values with a float32 scale
  per packet (scale = max|x| / 127). Error: each of the n-1 re-quantizations of a partial P
  adds at most max|P| / 254 per element of its packet (see ``int8_error_bound``).
* ``nic-sparse`` / ``nic-sparse-hash``: int32 / float32, every hop after the first sends
  Flare's (uint16 index, value) pairs of the non-zeros of its packet's range (dense when pairs
  are not shorter); aggregation in dense storage or in a hash table per HPU.

The first hop of every block carries the host's dense values (a host posts plain memory);
``link_bytes`` of a run counts it, so the wire savings reported are end to end.

Host memory layout (every rank): ``[0, S)`` the input, overwritten by the result. Handler
memory per NIC holds one MTU slot per packet of the vector (the host's values until the
neighbour's partial meets them, then what the NIC sent, for loss recovery), so it is about S
plus a few KiB per HPU: emulator memory, larger than a real NIC's SRAM (PsPIN: 4 MiB of L2)
for large vectors; a NIC with less would bound the blocks in flight. Everything runs on QP
``qp`` (the execution context matches it), so no other traffic may use that QP on the ranks'
NICs during the allreduce.

Loss: with ``timeout_ns`` > 0 the handlers recover lost frames hop by hop (a NACK to the left
neighbour when nothing arrived for a timer period; the left resends from its slot), so a
lossy run costs what it lost plus a timer period per loss along a chain, not a schedule.
"""
from __future__ import annotations

import numpy as np

from ..config import EngineConfig, NicConfig
from ..errors import ConfigError
from ..handler import ExecutionContext
from .common import (AllreducePlan, align, block_counts, check_args, check_memory, itemsize,
                     offsets, write_inputs)

VARIANTS = {"nic": "dense", "nic-int8": "int8", "nic-sparse": "sparse",
            "nic-sparse-hash": "sparse_hash"}
MODE_DTYPES = {"dense": ("int32", "float32", "float16", "bfloat16"), "int8": ("float32",),
               "sparse": ("int32", "float32"), "sparse_hash": ("int32", "float32")}
SPARSE_DENSITY = 0.01     # fraction of non-zeros in the inputs measure() gives sparse variants
HASH_SLOTS = 64           # per HPU: 512 B of keys and values (Flare's hash storage)
INFLIGHT_MESSAGES = 8192  # NicConfig.max_inflight_messages of measured runs (see run_configs)
LOSS_TIMEOUT_NS = 5_000.0  # the handlers' loss timer in lossy runs (loss_recovery)


def run_configs(n: int, nbytes: int = 0) -> dict:
    """Scenario configs a run needs: deep NIC receive queues, and egress queues and frame
    buffers for a block of partials. The model has no backpressure from a NIC's ingress (no
    PFC from NIC to switch), so packets that arrive faster than the HPUs fold them wait in
    open-message slots: sparse packets are short and arrive faster than HPUs add a
    256-element range, which overflowed PsPIN's 256 message queues at 32 MiB. And a NIC's
    link is busy with its own block while its left neighbour's partials of the next one
    arrive: up to a block of sends (S/n) waits in its egress queue when the ring turns from
    reduce-scatter to allgather, plus PCIe's surplus over the link (~8 % of S). Each of those
    frames may also wait as a pending event (a send scheduled for when its HPU finishes: the
    int8 and sparse variants are HPU-bound and ran out of events at 64 MiB)."""
    base = EngineConfig()
    frames = -(-nbytes // base.mtu_bytes)
    backlog = frames // n + frames // 8 + 1024
    return {"nic": NicConfig(max_inflight_messages=INFLIGHT_MESSAGES),
            "engine": EngineConfig(max_rx_messages=max(1 << 14, INFLIGHT_MESSAGES * n),
                                   queue_frames=max(base.queue_frames, backlog),
                                   buffer_slots=max(base.buffer_slots, 2 * n * backlog),
                                   max_events_pending=max(base.max_events_pending,
                                                          4 * n * backlog))}


def loss_recovery(n: int, nbytes: int) -> tuple[dict, dict]:
    """Loss recovery of the NIC variants: the handlers' per-hop NACKs on a timer of
    LOSS_TIMEOUT_NS (5 µs: above a hop's round trip, ~2-4 µs on a fat tree, so a tick
    that saw no arrival means a loss, not a slow neighbour)."""
    return {}, {"timeout_ns": LOSS_TIMEOUT_NS}


def plan_memory(n: int, count: int, dtype: str) -> int:
    return align(count * itemsize(dtype))


def programs() -> list:
    """The handler programs every variant runs (the engine is compiled for these)."""
    from handlers.nic_allreduce import nic_allreduce_program
    return [nic_allreduce_program()]


def build_variant(name: str, scenario, count: int, dtype: str = "float32", *, hosts=None,
                  inputs=None, qp: int = 0, timeout_ns: float = 0.0,
                  hash_slots: int = HASH_SLOTS) -> AllreducePlan:
    """Install the NIC allreduce ``name`` (a key of VARIANTS) on ``scenario``.

    ``timeout_ns``: the handlers' loss timer (0: none, for lossless fabrics); lost frames are
    NACKed to the left neighbour after a timer period without arrivals and resent from its
    slot."""
    from handlers.nic_allreduce import allreduce_memory, local_address, nic_allreduce_program
    mode = VARIANTS[name]
    hosts = check_args(scenario, count, dtype, hosts)
    if dtype not in MODE_DTYPES[mode]:
        raise ConfigError(f"{name} allreduce dtype={dtype!r}; valid choices: "
                          f"{', '.join(MODE_DTYPES[mode])}")
    if hash_slots < 1 or hash_slots & (hash_slots - 1):
        raise ConfigError(f"{name} allreduce hash_slots={hash_slots}: must be a power of two")
    if not timeout_ns >= 0:
        raise ConfigError(f"{name} allreduce timeout_ns={timeout_ns}: must be >= 0 (0: no "
                          f"loss timer)")
    if qp < 0 or qp + 1 > scenario.host.qps:
        raise ConfigError(f"{name} allreduce needs qp {qp}; HostConfig.qps="
                          f"{scenario.host.qps} (raise it or lower qp)")
    n, w = len(hosts), itemsize(dtype)
    mtu = scenario.engine.mtu_bytes
    if mtu % 4:
        raise ConfigError(f"{name} allreduce: EngineConfig.mtu_bytes={mtu} must be a multiple "
                          f"of 4 (packets hold whole elements)")
    counts = block_counts(count, n)
    off = offsets(counts)
    plan = AllreducePlan(name, hosts, count, dtype, 0, 0, 0, plan_memory(n, count, dtype),
                         (qp,))
    check_memory(scenario, plan)
    for rank, host in enumerate(hosts):
        mem = allreduce_memory(n=n, rank=rank, left=hosts[(rank - 1) % n],
                               right=hosts[(rank + 1) % n], qp=qp, dtype=dtype, mode=mode,
                               count=count, data_addr=0, mtu=mtu, hpus=scenario.nic.hpus,
                               hash_slots=hash_slots, timeout_ns=timeout_ns)
        scenario.install(ExecutionContext(host, nic_allreduce_program(mem), match_qp=qp))
    progs = [scenario.host_program(h) for h in hosts]
    for p in progs:
        p.mark(plan.start_mark)
    for rank, (host, p) in enumerate(zip(hosts, progs)):
        for s in range(n):                  # the blocks in the order the ring consumes them
            block = (rank - s) % n
            if counts[block]:
                addr = off[block] * w
                p.send(host, counts[block] * w, qp=qp, local_addr=addr,
                       remote_addr=local_address(addr))
    for p in progs:
        p.wait_event(1)
        p.mark(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan


def builder(name: str):
    """``build(scenario, count, dtype, ...)`` of variant ``name`` for the Algorithm registry."""
    def build(scenario, count: int, dtype: str = "float32", **kwargs) -> AllreducePlan:
        return build_variant(name, scenario, count, dtype, **kwargs)
    build.__name__ = build.__qualname__ = f"build_{name.replace('-', '_')}"
    return build


def int8_error_bound(inputs: np.ndarray, mtu: int = 1024) -> np.ndarray:
    """Per element: n-1 quantizations of partials P (|P| <= sum_i |x_i|), each off by at most
    half a step, max|P| / 254 over its packet, plus n float32 roundings of the sums."""
    x = np.abs(inputs.astype(np.float64))
    n, count = x.shape
    mag = x.sum(axis=0)
    per = mtu // 4
    bound = np.empty(count)
    counts = block_counts(count, n)
    for lo, c in zip(offsets(counts), counts):
        for s in range(lo, lo + c, per):
            e = min(s + per, lo + c)
            bound[s:e] = mag[s:e].max()
    return (n - 1) * bound / 254 * (1 + 2.0 ** -20) + n * 2.0 ** -24 * mag + 2.0 ** -140


def check_int8(inputs: np.ndarray, results: list[np.ndarray], dtype: str) -> tuple[bool, float]:
    """Every rank holds the same bits, within ``int8_error_bound`` of the exact sum."""
    first = results[0]
    same = all(np.array_equal(r.view(np.uint8), first.view(np.uint8)) for r in results)
    err = np.abs(first.astype(np.float64) - inputs.astype(np.float64).sum(axis=0))
    return same and bool(np.all(err <= int8_error_bound(inputs))), float(err.max(initial=0))
