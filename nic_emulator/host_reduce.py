"""Element-wise reductions a host program runs in its own memory (``HostProgram.reduce``):
``dst[i] = dst[i] OP src[i]`` for the MPI predefined operators, so the host-based baseline of any
reducing handler is one op, charged per byte like a streaming add.

Semantics are numpy's: integers wrap (two's complement), ``max``/``min`` propagate NaN as
``np.maximum``/``np.minimum`` do, float32 stays float32. Bitwise operators take integer dtypes
only (``spin.describe.host_program`` rejects the others before a run).
"""
import numpy as np

from spin.engine import state as S
from spin.jit import njit

# operator name -> code carried in the host op (MPI_SUM, MPI_MAX, ... without the prefix)
REDUCE_OPS = {"sum": 0, "max": 1, "min": 2, "prod": 3, "band": 4, "bor": 5, "bxor": 6}
BITWISE_OPS = ("band", "bor", "bxor")
_SUM, _MAX, _MIN, _PROD = 0, 1, 2, 3
_BAND, _BOR, _BXOR = 4, 5, 6


@njit(cache=True, _nrt=False)
def _arith(d, s, op):
    """sum, max, min, prod on arrays of any numeric dtype."""
    n = d.shape[0]
    if op == _SUM:
        for i in range(n):
            d[i] += s[i]
    elif op == _MAX:
        for i in range(n):
            a, b = d[i], s[i]
            d[i] = a if (a >= b or a != a) else b
    elif op == _MIN:
        for i in range(n):
            a, b = d[i], s[i]
            d[i] = a if (a <= b or a != a) else b
    elif op == _PROD:
        for i in range(n):
            d[i] *= s[i]
    else:
        raise ValueError("spin host reduce: unknown operator code")


@njit(cache=True, _nrt=False)
def _integer(d, s, op):
    """Every operator on integer arrays (bitwise ones exist only here)."""
    n = d.shape[0]
    if op == _BAND:
        for i in range(n):
            d[i] &= s[i]
    elif op == _BOR:
        for i in range(n):
            d[i] |= s[i]
    elif op == _BXOR:
        for i in range(n):
            d[i] ^= s[i]
    else:
        _arith(d, s, op)


@njit(cache=True, _nrt=False)
def reduce_elementwise(st, dev, dst_addr, src_addr, n, dtype_code, op):
    """``dst = dst OP src`` over ``n`` elements of host memory; returns the input bytes read from
    ``src`` (what the host's per-byte reduce cost is charged on)."""
    base = st.dev[dev, S.D_HOST_MEM_OFF]
    size = st.dev[dev, S.D_HOST_MEM_SIZE]
    width = 4 if dtype_code == 0 or dtype_code == 2 else 8
    if dst_addr < 0 or src_addr < 0 or dst_addr + n * width > size or src_addr + n * width > size:
        raise IndexError("spin host reduce: range outside host memory")
    if (dst_addr % width) != 0 or (src_addr % width) != 0:
        raise ValueError("spin host reduce: addresses must be aligned to the element size")
    d8 = st.host_mem[base + dst_addr: base + dst_addr + width * n]
    s8 = st.host_mem[base + src_addr: base + src_addr + width * n]
    if dtype_code == 0:
        _integer(d8.view(np.int32), s8.view(np.int32), op)
    elif dtype_code == 1:
        _integer(d8.view(np.int64), s8.view(np.int64), op)
    elif dtype_code == 2:
        _arith(d8.view(np.float32), s8.view(np.float32), op)
    else:
        _arith(d8.view(np.float64), s8.view(np.float64), op)
    return n * width
