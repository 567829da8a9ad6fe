"""Binary min-heap of events ordered by (time_ps, key), in preallocated arrays.

The key is unique per event (creator device and its own sequence number), so the pop order is a
total order that does not depend on how devices are partitioned among workers.
"""
import numba as nb
import numpy as np

from . import state as S
from .freelist import give_free, take_free


@nb.njit(cache=True, _nrt=False)
def push_event(st, time_ps, creator_dev, kind, dev, a, b):
    """Schedule an event; the creator device's sequence number makes the key unique."""
    seq = st.dev[creator_dev, S.D_SEQ]
    st.dev[creator_dev, S.D_SEQ] = seq + 1
    push_event_keyed(st, time_ps, (np.int64(creator_dev) << 40) | seq, kind, dev, a, b)


@nb.njit(cache=True, _nrt=False)
def push_event_keyed(st, time_ps, key, kind, dev, a, b):
    """Schedule an event whose key was fixed elsewhere (a frame arriving from another worker)."""
    eid = take_free(st.sc, S.SC_EV_FREE_TOP, st.ev_free)
    if eid < 0:
        raise MemoryError("spin engine: event pool exhausted (raise EngineConfig.max_events_pending)")
    st.ev[eid, S.E_TIME] = time_ps
    st.ev[eid, S.E_KEY] = key
    st.ev[eid, S.E_KIND] = kind
    st.ev[eid, S.E_DEV] = dev
    st.ev[eid, S.E_A] = a
    st.ev[eid, S.E_B] = b
    _sift_up_insert(st, eid)


@nb.njit(cache=True, _nrt=False)
def _sift_up_insert(st, eid):
    sc = st.sc
    i = sc[S.SC_HEAP_N]
    sc[S.SC_HEAP_N] = i + 1
    heap = st.heap
    heap[i] = eid
    t = st.ev[eid, S.E_TIME]
    k = st.ev[eid, S.E_KEY]
    while i > 0:
        p = (i - 1) >> 1
        pe = heap[p]
        pt = st.ev[pe, S.E_TIME]
        if pt < t or (pt == t and st.ev[pe, S.E_KEY] < k):
            break
        heap[i] = pe
        i = p
    heap[i] = eid


@nb.njit(cache=True, _nrt=False)
def pop_event(st):
    """Remove the earliest event and return its id; the caller frees it with free_event."""
    sc = st.sc
    heap = st.heap
    top = heap[0]
    n = sc[S.SC_HEAP_N] - 1
    sc[S.SC_HEAP_N] = n
    if n > 0:
        last = heap[n]
        t = st.ev[last, S.E_TIME]
        k = st.ev[last, S.E_KEY]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            ce = heap[c]
            ct = st.ev[ce, S.E_TIME]
            if c + 1 < n:
                de = heap[c + 1]
                dt = st.ev[de, S.E_TIME]
                if dt < ct or (dt == ct and st.ev[de, S.E_KEY] < st.ev[ce, S.E_KEY]):
                    c = c + 1
                    ce = de
                    ct = dt
            if t < ct or (t == ct and k < st.ev[ce, S.E_KEY]):
                break
            heap[i] = ce
            i = c
        heap[i] = last
    return top


@nb.njit(cache=True, _nrt=False)
def free_event(st, eid):
    give_free(st.sc, S.SC_EV_FREE_TOP, st.ev_free, eid)
