"""IEEE binary16 and bfloat16 from and to float32, in Numba, for handlers that add 16-bit floats
in float32 and round once (the NIC ring, the switch aggregation). Rounding is to nearest even,
as numpy's ``astype(np.float16)`` and ``spin.collectives.common.float32_to_bf16``; a bfloat16
widens exactly by shifting its bits 16 places up (its value as float32 bits)."""
import math

from spin.jit import njit


@njit(cache=True, _nrt=False)
def f16_value(h):
    """IEEE binary16 bits -> their value (float64, exact)."""
    ex = (h >> 10) & 0x1F
    man = h & 0x3FF
    if ex == 0:
        v = man * 2.0 ** -24
    elif ex == 31:
        v = math.inf if man == 0 else math.nan
    else:
        v = (1024 + man) * 2.0 ** (ex - 25)
    return -v if (h & 0x8000) else v


@njit(cache=True, _nrt=False)
def f16_bits(b):
    """float32 bits -> IEEE binary16 bits, round to nearest even."""
    sign = (b >> 16) & 0x8000
    ex = (b >> 23) & 0xFF
    man = b & 0x7FFFFF
    if ex == 0xFF:
        return sign | 0x7C00 | (0x200 if man != 0 else 0)
    e = ex - 112
    if e >= 31:
        return sign | 0x7C00
    if e <= 0:
        if e < -10:
            return sign
        m = man | 0x800000
        shift = 14 - e
        r = m >> shift
        rem = m & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (r & 1) != 0):
            r += 1
        return sign | r
    r = (e << 10) | (man >> 13)
    rem = man & 0x1FFF
    if rem > 0x1000 or (rem == 0x1000 and (r & 1) != 0):
        r += 1
    return sign | r


@njit(cache=True, _nrt=False)
def bf16_bits(b):
    """float32 bits -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN."""
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
