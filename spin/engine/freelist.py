"""Free lists: a stack of free indices in an array, its height in a scalar slot of ``st.sc``.

Every preallocated pool of the engine (events, frame slots, messages) uses one; running dry is a
sizing problem, reported by the caller with the config field to raise.
"""
from spin.jit import njit


@njit(cache=True, inline="always", _nrt=False)
def take_free(sc, top_slot, free):
    """The next free index, or -1 when the pool is empty (the caller raises naming its config
    field: messages must be constants when compiled without the Numba runtime)."""
    top = sc[top_slot]
    if top <= 0:
        return -1
    top -= 1
    sc[top_slot] = top
    return free[top]


@njit(cache=True, inline="always", _nrt=False)
def give_free(sc, top_slot, free, index):
    free[sc[top_slot]] = index
    sc[top_slot] += 1
