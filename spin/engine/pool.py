"""Fixed-size frame slots: the engine moves slot indices, never frame bytes, inside a worker."""
import numpy as np

from . import state as S
from ..wire.roce import write_icrc
from .freelist import give_free, take_free
from spin.jit import njit


@njit(cache=True, inline="always", _nrt=False)
def slot_bytes_for_mtu(mtu_bytes):
    """A frame slot holding an MTU of payload and its headers, in whole cache lines: the longest
    frame a slot holds (the engine checks injected frames against it, the builder sizes slots
    with it)."""
    return (mtu_bytes + 128 + 63) // 64 * 64


@njit(cache=True, _nrt=False)
def alloc_slot(st):
    """Take a free slot; running out is a configuration problem, so it raises instead of dropping
    (a drop here would depend on how devices are spread over workers)."""
    sc = st.sc
    slot = take_free(sc, S.SC_SLOT_FREE_TOP, st.slot_free)
    if slot < 0:
        raise MemoryError("spin engine: frame buffer pool exhausted (raise EngineConfig.buffer_slots)")
    in_use = st.slot_free.shape[0] - sc[S.SC_SLOT_FREE_TOP]
    if in_use > sc[S.SC_SLOTS_IN_USE_MAX]:
        sc[S.SC_SLOTS_IN_USE_MAX] = in_use
    st.slot_meta[slot, S.SM_ICRC] = ICRC_VALID  # built by this engine: right by construction
    return slot


ICRC_EXTERNAL = 0   # came from outside the engine: verify it on receipt
ICRC_VALID = 1      # built here, ICRC written
ICRC_PENDING = 2    # built here, ICRC not computed yet (see ensure_icrc)


@njit(cache=True, _nrt=False)
def ensure_icrc(st, slot):
    """Write a deferred ICRC before anyone can observe the frame's bytes (a capture, another
    worker, a handler's ``spin_frame``). Frames that stay inside the engine never need it: they
    are not corrupted in flight and receivers here trust them. A header slot has no payload to
    cover: its frame's ICRC is never written, and no engine checks it (``SC_CHECK_ICRC`` is off
    with header slots)."""
    if st.slot_meta[slot, S.SM_ICRC] == ICRC_PENDING and st.sc[S.SC_HEADER_SLOTS] == 0:
        write_icrc(st.pool[slot], st.slot_meta[slot, S.SM_LEN])
        st.slot_meta[slot, S.SM_ICRC] = ICRC_VALID


@njit(cache=True, _nrt=False)
def free_slot(st, slot):
    give_free(st.sc, S.SC_SLOT_FREE_TOP, st.slot_free, slot)


@njit(cache=True, _nrt=False)
def copy_bytes(dst, dst_off, src, src_off, n):
    """Copy n bytes, 8 at a time (a byte loop does not vectorise: ~5x slower per KiB; numba
    slice assignment compiles slowly). Unaligned 64-bit access is fine on the targets we run."""
    n8 = n >> 3
    if n8 > 0:
        d = dst[dst_off:dst_off + 8 * n8].view(np.uint64)
        s = src[src_off:src_off + 8 * n8].view(np.uint64)
        for i in range(n8):
            d[i] = s[i]
    for i in range(8 * n8, n):
        dst[dst_off + i] = src[src_off + i]
