"""Fixed-size frame slots: the engine moves slot indices, never frame bytes, inside a worker."""
import numba as nb

from . import state as S


@nb.njit(cache=True)
def alloc_slot(st):
    """Take a free slot; running out is a configuration problem, so it raises instead of dropping
    (a drop here would depend on how devices are spread over workers)."""
    sc = st.sc
    top = sc[S.SC_SLOT_FREE_TOP]
    if top <= 0:
        raise MemoryError("spin engine: frame buffer pool exhausted (raise EngineConfig.buffer_slots)")
    top -= 1
    sc[S.SC_SLOT_FREE_TOP] = top
    in_use = st.slot_free.shape[0] - top
    if in_use > sc[S.SC_SLOTS_IN_USE_MAX]:
        sc[S.SC_SLOTS_IN_USE_MAX] = in_use
    return st.slot_free[top]


@nb.njit(cache=True)
def free_slot(st, slot):
    sc = st.sc
    st.slot_free[sc[S.SC_SLOT_FREE_TOP]] = slot
    sc[S.SC_SLOT_FREE_TOP] += 1


@nb.njit(cache=True)
def copy_bytes(dst, dst_off, src, src_off, n):
    """Byte copy that compiles fast and vectorises (numba slice assignment compiles slowly)."""
    for i in range(n):
        dst[dst_off + i] = src[src_off + i]
