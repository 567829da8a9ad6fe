"""NIC-offloaded ring allreduce (``handlers/nic_allreduce.py``): each rank's host posts its block
to its right neighbour and waits for one event; the NICs reduce, forward and write the result.

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
memory per NIC holds a copy of the host's vector (read once, in chunks, as the ring needs it),
so it is about S plus a few KiB per HPU: emulator memory, larger than a real NIC's SRAM
(PsPIN: 4 MiB of L2) for large vectors; a NIC with less would read a window at a time. Host posts use
QP ``qp`` and NIC-sent packets ``qp + 1``; the execution context matches the left neighbour as
source, so no other traffic from that neighbour may run on the NIC during the allreduce.
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
CHUNK_PACKETS = 32        # the host's vector is read into handler memory 32 packets at a time
REPOSTS = 8               # reposts of each block in lossy runs (loss_recovery)


def run_configs(n: int) -> dict:
    """Scenario configs a run needs: deep NIC receive queues. The model has no backpressure
    from a NIC's ingress (no PFC from NIC to switch), so packets that arrive faster than the
    HPUs fold them wait in open-message slots: sparse packets are short and arrive faster
    than HPUs add a 256-element range, which overflowed PsPIN's 256 message queues at 32 MiB."""
    return {"nic": NicConfig(max_inflight_messages=INFLIGHT_MESSAGES),
            "engine": EngineConfig(max_rx_messages=max(1 << 14, INFLIGHT_MESSAGES * n))}


def loss_recovery(n: int, nbytes: int) -> tuple[dict, dict]:
    """Loss recovery of the NIC variants: hosts repost their blocks (the handlers skip what
    they already did and regenerate what went downstream). The first repost comes after a few
    times the lossless run's length at 100 Gb/s (2 S of ring traffic plus 2 us per hop), the
    next ones at the same spacing: REPOSTS reposts survive REPOSTS - 1 losses of one block's
    chain. Reposts are sent whether or not anything was lost, and a host waits for its result
    after the last one (only the block's origin can regenerate it, and it cannot tell that a
    rank downstream lost it): a lossy run's time includes the whole schedule."""
    interval_ns = 4 * (2 * nbytes * 8 / 100 + 2_000 * n) + 20_000
    return {}, {"repost_after_ns": tuple(interval_ns * k
                                                     for k in range(1, REPOSTS + 1))}


def plan_memory(n: int, count: int, dtype: str) -> int:
    return align(count * itemsize(dtype))


def programs() -> list:
    """The handler programs every variant runs (the engine is compiled for these)."""
    from handlers.nic_allreduce import nic_allreduce_program
    return [nic_allreduce_program()]


def build_variant(name: str, scenario, count: int, dtype: str = "float32", *, hosts=None,
                  inputs=None, qp: int = 0, repost_after_ns: tuple[float, ...] = (),
                  hash_slots: int = HASH_SLOTS, chunk_packets: int = CHUNK_PACKETS) -> AllreducePlan:
    """Install the NIC allreduce ``name`` (a key of VARIANTS) on ``scenario``.

    ``repost_after_ns``: each host posts its block again at these delays after its first post,
    an application-level retransmission: the handlers ignore what they have already done and
    regenerate what went downstream, so packets lost before a repost are recovered."""
    from handlers.nic_allreduce import allreduce_memory, nic_allreduce_program
    mode = VARIANTS[name]
    hosts = check_args(scenario, count, dtype, hosts)
    if dtype not in MODE_DTYPES[mode]:
        raise ConfigError(f"{name} allreduce dtype={dtype!r}; valid choices: "
                          f"{', '.join(MODE_DTYPES[mode])}")
    if chunk_packets < 1:
        raise ConfigError(f"{name} allreduce chunk_packets={chunk_packets}: must be >= 1")
    if hash_slots < 1 or hash_slots & (hash_slots - 1):
        raise ConfigError(f"{name} allreduce hash_slots={hash_slots}: must be a power of two")
    if qp < 0 or qp + 2 > scenario.host.qps:
        raise ConfigError(f"{name} allreduce needs qps {qp}..{qp + 1}; HostConfig.qps="
                          f"{scenario.host.qps} (raise it or lower qp)")
    n, w = len(hosts), itemsize(dtype)
    mtu = scenario.engine.mtu_bytes
    if mtu % 4:
        raise ConfigError(f"{name} allreduce: EngineConfig.mtu_bytes={mtu} must be a multiple "
                          f"of 4 (packets hold whole elements)")
    counts = block_counts(count, n)
    off = offsets(counts)
    plan = AllreducePlan(name, hosts, count, dtype, 0, 0, 0, plan_memory(n, count, dtype),
                         (qp, qp + 1))
    check_memory(scenario, plan)
    for rank, host in enumerate(hosts):
        mem = allreduce_memory(n=n, rank=rank, right=hosts[(rank + 1) % n], fwd_qp=qp + 1,
                               dtype=dtype, mode=mode, count=count, data_addr=0, mtu=mtu,
                               hpus=scenario.nic.hpus, hash_slots=hash_slots,
                               chunk_packets=chunk_packets,
                               pcie_latency_ns=scenario.nic.pcie_latency_ns,
                               pcie_rate_gbytes_per_s=scenario.nic.pcie_rate_gbytes_per_s,
                               hpu_clock_mhz=scenario.nic.hpu_clock_mhz)
        scenario.install(ExecutionContext(host, nic_allreduce_program(mem),
                                          match_src=hosts[(rank - 1) % n]))
    progs = [scenario.host_program(h) for h in hosts]
    for p in progs:
        p.mark(plan.start_mark)
    for rank, p in enumerate(progs):
        if counts[rank] == 0:
            continue
        addr = off[rank] * w
        p.send(hosts[(rank + 1) % n], counts[rank] * w, qp=qp, local_addr=addr,
               remote_addr=addr)
        waited = 0.0
        for t in sorted(repost_after_ns):
            p.compute(t - waited)
            waited = t
            p.send(hosts[(rank + 1) % n], counts[rank] * w, qp=qp, local_addr=addr,
                   remote_addr=addr)
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
