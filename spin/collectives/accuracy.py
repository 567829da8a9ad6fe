"""Is an allreduce result right? int32 sums wrap and are associative, so every algorithm must
equal numpy's sum bit for bit. Floating-point sums depend on the order of additions, which
differs by algorithm (ring adds block b in the order b+1, b+2, ...; recursive doubling adds
pairs of partial sums), so floats are compared with the exact (float64) sum within the
worst-case error of n-1 rounded additions: |err| <= (n-1) u sum|x_i| (Higham, Accuracy and
Stability, ch. 4), u = 2^-24 (float32), 2^-11 (float16), 2^-8 (bfloat16). Every rank must also
hold the same bits. An algorithm that rounds differently registers its own bound (the switch's
16-bit sums: ``switch.native_float_bound``).
"""
from __future__ import annotations

import numpy as np

from .common import bf16_to_float32

UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SMALLEST_SUBNORMAL = {"float32": 2.0 ** -149, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}
CHECK_COLUMNS = 1 << 16


def as_float64(values: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values (bfloat16 as bits) as float64, exactly."""
    if dtype == "bfloat16":
        return bf16_to_float32(values).astype(np.float64)
    return np.asarray(values).astype(np.float64)


def check_result(inputs: np.ndarray, results: list[np.ndarray], dtype: str,
                 bound=None) -> tuple[bool, float]:
    """(every rank equals the reference, the largest absolute error) as the module docstring says;
    ``bound(x, dtype)`` replaces the float bound (x: float64 inputs, one row per rank)."""
    first = results[0]
    same = all(np.array_equal(r.view(np.uint8), first.view(np.uint8)) for r in results)
    if dtype == "int32":
        ref = np.sum(inputs, axis=0, dtype=np.int32)
        err = np.abs(first.astype(np.int64) - ref.astype(np.int64))
        return same and bool(np.array_equal(first, ref)), float(err.max(initial=0))
    n, ok, worst = inputs.shape[0], True, 0.0
    for lo in range(0, inputs.shape[1], CHECK_COLUMNS):     # float64 copies of a slice at a time
        x = as_float64(inputs[:, lo:lo + CHECK_COLUMNS], dtype)
        limit = (bound(x, dtype) if bound is not None
                 else (n - 1) * UNIT_ROUNDOFF[dtype] * np.abs(x).sum(axis=0)
                 + n * SMALLEST_SUBNORMAL[dtype])
        err = np.abs(as_float64(first[lo:lo + CHECK_COLUMNS], dtype) - x.sum(axis=0))
        ok = ok and bool(np.all(err <= limit))
        worst = max(worst, float(err.max(initial=0)))
    return same and ok, worst
