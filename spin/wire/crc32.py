"""CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) in Numba, slicing-by-16.

Pure Numba rather than zlib through ctypes so that callers stay ``cache=True``-compilable and
inlinable. The table is a module-level numpy array, which Numba freezes into the compiled code.
Arithmetic is kept in int64 (Numba turns ``uint64 op int64`` into float64). Results equal
``zlib.crc32``; about 0.4 ns per byte on a 1 KiB buffer (``bench/bench_wire.py``).
"""

from __future__ import annotations

import numpy as np
from spin.jit import njit

CRC32_POLY_REFLECTED = 0xEDB88320


def _make_table() -> np.ndarray:
    """``t[k, b]``: CRC contribution of byte ``b`` followed by ``k`` zero bytes (slicing-by-16).
    Computed over all 256 bytes at once: every start builds it."""
    t = np.zeros((16, 256), dtype=np.uint32)
    c = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        c = (c >> 1) ^ np.where(c & 1, np.uint32(CRC32_POLY_REFLECTED), np.uint32(0))
    t[0] = c
    for k in range(1, 16):
        t[k] = (t[k - 1] >> 8) ^ t[0, t[k - 1] & 0xFF]
    return t


CRC32_TABLE = _make_table()
CRC32_TABLE.flags.writeable = False


@njit(cache=True, inline="always")
def _le32(data: np.ndarray, i: int) -> int:
    return (np.int64(data[i]) | (np.int64(data[i + 1]) << 8)
            | (np.int64(data[i + 2]) << 16) | (np.int64(data[i + 3]) << 24))


@njit(cache=True, inline="always")
def _t(k: int, v: int) -> int:
    return np.int64(CRC32_TABLE[k, v & 0xFF])


@njit(cache=True, inline="always")
def crc32_byte(crc: int, b: int) -> int:
    """Advance the internal (pre-inverted) CRC state by one byte."""
    return (crc >> 8) ^ np.int64(CRC32_TABLE[0, (crc ^ b) & 0xFF])


@njit(cache=True)
def crc32_update(crc: int, data: np.ndarray, start: int, stop: int) -> int:
    """Advance the internal CRC state over ``data[start:stop]`` (uint8), sixteen bytes per step."""
    i = start
    crc = np.int64(crc)
    while i + 16 <= stop:
        a = crc ^ _le32(data, i)
        b = _le32(data, i + 4)
        c = _le32(data, i + 8)
        d = _le32(data, i + 12)
        crc = (_t(15, a) ^ _t(14, a >> 8) ^ _t(13, a >> 16) ^ _t(12, a >> 24)
               ^ _t(11, b) ^ _t(10, b >> 8) ^ _t(9, b >> 16) ^ _t(8, b >> 24)
               ^ _t(7, c) ^ _t(6, c >> 8) ^ _t(5, c >> 16) ^ _t(4, c >> 24)
               ^ _t(3, d) ^ _t(2, d >> 8) ^ _t(1, d >> 16) ^ _t(0, d >> 24))
        i += 16
    while i < stop:
        crc = crc32_byte(crc, np.int64(data[i]))
        i += 1
    return crc


@njit(cache=True)
def crc32(data: np.ndarray, start: int, stop: int) -> int:
    """CRC-32 of ``data[start:stop]``; equals ``zlib.crc32(bytes(data[start:stop]))``."""
    return crc32_update(0xFFFFFFFF, data, start, stop) ^ 0xFFFFFFFF
