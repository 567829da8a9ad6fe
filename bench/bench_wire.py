"""Cost of the RoCEv2 wire hot path per frame, called from Numba code as the engine calls it.

Usage: python bench/bench_wire.py [--payload BYTES] [--slots N] [--reps R]

"hot" reuses one slot (frame stays in L1); "pool" cycles over N slots of a buffer pool
(N x 2 KiB), closer to an engine touching many in-flight frames. Figures are medians of R runs.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from spin.wire import drops
from spin.wire import (
    NUM_PARSED_FIELDS, OP_WRITE_MIDDLE, OP_WRITE_ONLY, compute_icrc, finalize_roce_frame,
    parse_frame, write_roce_headers,
)
from spin.wire.crc32 import crc32

SLOT_BYTES = 2048


@numba.njit
def _build_all(pool, n, plen, opcode):
    total = 0
    for i in range(n):
        f = pool[i % pool.shape[0]]
        off = write_roce_headers(f, 1, 2, i & 0xFFFF, opcode, 7, i, False, 4096, 9, plen, plen, i)
        total += finalize_roce_frame(f, off, plen)
    return total


@numba.njit
def _headers_all(pool, n, plen, opcode):
    total = 0
    for i in range(n):
        total += write_roce_headers(pool[i % pool.shape[0]], 1, 2, i & 0xFFFF, opcode, 7, i,
                                    False, 4096, 9, plen, plen, i)
    return total


@numba.njit
def _finalize_all(pool, n, off, plen):
    total = 0
    for i in range(n):
        total += finalize_roce_frame(pool[i % pool.shape[0]], off, plen)
    return total


@numba.njit
def _icrc_all(pool, n, flen):
    acc = 0
    for i in range(n):
        acc ^= compute_icrc(pool[i % pool.shape[0]], flen)
    return acc


@numba.njit
def _parse_all(pool, n, flen, check_icrc, out):
    bad = 0
    for i in range(n):
        if parse_frame(pool[i % pool.shape[0]], flen, check_icrc, out) != drops.OK:
            bad += 1
    return bad


@numba.njit
def _crc_all(pool, n, nbytes):
    acc = 0
    for i in range(n):
        acc ^= crc32(pool[i % pool.shape[0]], 0, nbytes)
    return acc


def _time(fn, *args, calls: int, reps: int) -> float:
    fn(*args)                                          # compile / warm up
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(*args)
        samples.append((time.perf_counter_ns() - t0) / calls)
    return float(np.median(samples))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--payload", type=int, default=1024, help="payload bytes per frame")
    ap.add_argument("--slots", type=int, default=4096, help="buffer-pool slots for 'pool'")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    plen = a.payload
    pool = np.random.default_rng(0).integers(0, 256, (a.slots, SLOT_BYTES), dtype=np.uint8)
    hot = np.zeros((1, SLOT_BYTES), dtype=np.uint8)
    out = np.zeros(NUM_PARSED_FIELDS, dtype=np.int64)
    hot_n = 200_000

    def rebuild() -> int:
        flen = _build_all(pool, a.slots, plen, OP_WRITE_MIDDLE) // a.slots
        hot[0] = pool[0]
        return flen

    flen = rebuild()
    off = flen - 4 - plen - (4 - plen % 4) % 4
    if _parse_all(pool, a.slots, flen, True, out) != 0:
        raise SystemExit("benchmark frames failed to parse")
    print(f"RoCEv2 RDMA WRITE MIDDLE frame: {plen} B payload, {flen} B frame "
          f"(numba {numba.__version__}); ns per frame, median of {a.reps} runs")
    print(f"{'operation':44s} {'hot':>11s} {'pool':>11s}")
    rows = [
        ("write_roce_headers", _headers_all, lambda p, n: (p, n, plen, OP_WRITE_MIDDLE)),
        ("write_roce_headers (ONLY, with RETH)", _headers_all,
         lambda p, n: (p, n, plen, OP_WRITE_ONLY)),
        ("finalize_roce_frame (pad, IP csum, ICRC)", _finalize_all,
         lambda p, n: (p, n, off, plen)),
        ("compute_icrc", _icrc_all, lambda p, n: (p, n, flen)),
        ("parse_frame(check_icrc=True)", _parse_all, lambda p, n: (p, n, flen, True, out)),
        ("parse_frame(check_icrc=False)", _parse_all, lambda p, n: (p, n, flen, False, out)),
        (f"crc32 over {flen - 4} B (reference)", _crc_all, lambda p, n: (p, n, flen - 4)),
    ]
    for name, fn, mk in rows:
        rebuild()                                      # a previous row may have rewritten slots
        h = _time(fn, *mk(hot, hot_n), calls=hot_n, reps=a.reps)
        p = _time(fn, *mk(pool, a.slots), calls=a.slots, reps=a.reps)
        print(f"{name:44s} {h:8.1f} ns {p:8.1f} ns")
    rebuild()
    k = 20_000
    t0 = time.perf_counter_ns()
    for _ in range(k):
        parse_frame(hot[0], flen, True, out)
    print(f"{'parse_frame(check_icrc=True) from Python':44s} "
          f"{(time.perf_counter_ns() - t0) / k:8.1f} ns  (includes dispatch)")


if __name__ == "__main__":
    main()
