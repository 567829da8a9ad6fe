"""Open-addressing int64 -> int64 map in two arrays, for (device, peer, QP) lookups in the engine.

Keys are non-negative; -1 marks an empty bucket and -2 a deleted one.
"""
import numba as nb
import numpy as np

EMPTY = -1
DELETED = -2


@nb.njit(cache=True, inline="always")
def _hash(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(20)) & mask


@nb.njit(cache=True)
def map_get(keys, vals, key):
    mask = keys.shape[0] - 1
    i = _hash(key, mask)
    while True:
        k = keys[i]
        if k == key:
            return vals[i]
        if k == EMPTY:
            return -1
        i = (i + 1) & mask


@nb.njit(cache=True)
def map_put(keys, vals, key, val):
    mask = keys.shape[0] - 1
    i = _hash(key, mask)
    first_free = -1
    for _ in range(keys.shape[0]):
        k = keys[i]
        if k == key:
            vals[i] = val
            return
        if k == DELETED and first_free < 0:
            first_free = i
        if k == EMPTY:
            if first_free < 0:
                first_free = i
            keys[first_free] = key
            vals[first_free] = val
            return
        i = (i + 1) & mask
    if first_free >= 0:
        keys[first_free] = key
        vals[first_free] = val
        return
    raise MemoryError("spin engine: lookup table full")


@nb.njit(cache=True)
def map_delete(keys, vals, key):
    mask = keys.shape[0] - 1
    i = _hash(key, mask)
    while True:
        k = keys[i]
        if k == key:
            keys[i] = DELETED
            return
        if k == EMPTY:
            return
        i = (i + 1) & mask
