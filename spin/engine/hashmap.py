"""Open-addressing int64 -> int64 map in two arrays, for (device, peer, QP) lookups in the engine.

Linear probing with backward-shift deletion: no tombstones, so lookups stay short however many
messages come and go (tombstones would make every miss scan the whole table after a while).
Keys are non-negative; -1 marks an empty bucket.
"""
from spin.jit import njit

EMPTY = -1


@njit(cache=True, inline="always", _nrt=False)
def _home(key, mask):
    # shifts and xors only: folds the (device, peer, QP) fields of the key together, and never
    # overflows (so plain-Python runs under NUMBA_DISABLE_JIT behave the same, without warnings)
    h = key ^ (key >> 24) ^ (key >> 48)
    h ^= (h >> 7) ^ (h >> 13)
    return h & mask


@njit(cache=True, inline="always", _nrt=False)
def _find(keys, key):
    """Bucket holding ``key``, or -1."""
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    while True:
        k = keys[i]
        if k == key:
            return i
        if k == EMPTY:
            return -1
        i = (i + 1) & mask


@njit(cache=True, _nrt=False)
def map_get(keys, vals, key):
    i = _find(keys, key)
    return -1 if i < 0 else vals[i]


@njit(cache=True, _nrt=False)
def map_put(keys, vals, key, val):
    mask = keys.shape[0] - 1
    i = _home(key, mask)
    for _ in range(keys.shape[0]):
        k = keys[i]
        if k == key or k == EMPTY:
            keys[i] = key
            vals[i] = val
            return
        i = (i + 1) & mask
    raise MemoryError("spin engine: lookup table full")


@njit(cache=True, _nrt=False)
def map_delete(keys, vals, key):
    i = _find(keys, key)
    if i < 0:
        return
    mask = keys.shape[0] - 1
    # backward-shift the rest of the probe run into the hole
    j = i
    while True:
        j = (j + 1) & mask
        kj = keys[j]
        if kj == EMPTY:
            break
        h = _home(kj, mask)
        # keep kj where it is if its home lies cyclically in (i, j]
        if (i <= j and i < h <= j) or (i > j and (h > i or h <= j)):
            continue
        keys[i] = kj
        vals[i] = vals[j]
        i = j
    keys[i] = EMPTY
