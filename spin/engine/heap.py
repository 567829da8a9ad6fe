"""Min-heap of pending events ordered by (time_ps, key), in preallocated arrays.

The key is unique per event (creator device and its own sequence number), so the pop order is a
total order that does not depend on how devices are partitioned among workers.

Why it is shaped this way (a perf profile of the 8-host star had ``pop_event`` at about 28 % of
the loop with a binary heap of event ids that compared times through ``st.ev``): most runs keep
a few dozen events pending, so a sift-down is a chain of dependent loads and compares, one per
level. The heap is 4-ary (half the levels), each entry carries its event's time and key next to
its id in four words of a flat vector (``st.heap[4 i + HP_*]``: an index is a shift, and the four
children of an entry are two cache lines), and the ``HEAP_SPARE`` entries past the last one
always hold the sentinel time 2^63 - 1, so a sift-down compares all four children without asking
which exist and picks the smallest with selects, not branches.
"""
import numpy as np

from . import state as S
from .freelist import give_free, take_free
from spin.jit import njit

_SENTINEL = np.iinfo(np.int64).max


@njit(cache=True, _nrt=False)
def push_event(st, time_ps, creator_dev, kind, dev, a, b):
    """Schedule an event; the creator device's sequence number makes the key unique."""
    seq = st.dev[creator_dev, S.D_SEQ]
    st.dev[creator_dev, S.D_SEQ] = seq + 1
    push_event_keyed(st, time_ps, (np.int64(creator_dev) << 40) | seq, kind, dev, a, b)


@njit(cache=True, _nrt=False)
def push_event_keyed(st, time_ps, key, kind, dev, a, b):
    """Schedule an event whose key was fixed elsewhere (a frame arriving from another worker)."""
    eid = take_free(st.sc, S.SC_EV_FREE_TOP, st.ev_free)
    if eid < 0:
        raise MemoryError("spin engine: event pool exhausted (raise EngineConfig.max_events_pending)")
    ev = st.ev[eid]
    ev[S.E_TIME] = time_ps
    ev[S.E_KEY] = key
    ev[S.E_KIND] = kind
    ev[S.E_DEV] = dev
    ev[S.E_A] = a
    ev[S.E_B] = b
    sc = st.sc
    h = st.heap
    i = sc[S.SC_HEAP_N]
    sc[S.SC_HEAP_N] = i + 1
    h[_at(i + S.HEAP_SPARE)] = _SENTINEL   # entries n .. n + SPARE - 1 stay sentinels
    while i > 0:
        p = (i - 1) >> 2
        o = _at(p)
        pt = h[o]
        if pt < time_ps or (pt == time_ps and h[o + S.HP_KEY] < key):
            break
        d = _at(i)
        h[d] = pt
        h[d + S.HP_KEY] = h[o + S.HP_KEY]
        h[d + S.HP_EVENT] = h[o + S.HP_EVENT]
        i = p
    d = _at(i)
    h[d] = time_ps
    h[d + S.HP_KEY] = key
    h[d + S.HP_EVENT] = eid


@njit(cache=True, inline="always", _nrt=False)
def _at(i):
    """Word offset of entry ``i`` (the mask tells LLVM it is not negative, which drops Numba's
    negative-index wraparound from every access)."""
    return (i << 2) & 0x7FFFFFFFFFFFFFFC   # HEAP_COLS = 4 words per entry


@njit(cache=True, inline="always", _nrt=False)
def _before(t0, k0, t1, k1):
    """Entry (t1, k1) comes before (t0, k0), without a branch."""
    return (t1 < t0) | ((t1 == t0) & (k1 < k0))


@njit(cache=True, inline="always", _nrt=False)
def next_time(st):
    """Time of the earliest pending event (the heap must not be empty)."""
    return st.heap[S.HP_TIME]


@njit(cache=True, _nrt=False)
def pop_event(st):
    """Remove the earliest event and return its id; the caller frees it with free_event."""
    sc = st.sc
    h = st.heap
    top = h[S.HP_EVENT]
    n = sc[S.SC_HEAP_N] - 1
    sc[S.SC_HEAP_N] = n
    o = _at(n)
    t = h[o]
    k = h[o + S.HP_KEY]
    e = h[o + S.HP_EVENT]
    h[o] = _SENTINEL     # the old last entry joins the spare sentinels
    i = 0
    c = 1
    while c < n:
        # the smallest of the four children (sentinels where they do not exist), by selects
        b0 = _at(c)
        b1 = b0 + S.HEAP_COLS
        b2 = b1 + S.HEAP_COLS
        b3 = b2 + S.HEAP_COLS
        t0 = h[b0]
        k0 = h[b0 + S.HP_KEY]
        t1 = h[b1]
        k1 = h[b1 + S.HP_KEY]
        t2 = h[b2]
        k2 = h[b2 + S.HP_KEY]
        t3 = h[b3]
        k3 = h[b3 + S.HP_KEY]
        first = _before(t0, k0, t1, k1)
        ta = t1 if first else t0
        ka = k1 if first else k0
        ja = np.int64(first)
        second = _before(t2, k2, t3, k3)
        tb = t3 if second else t2
        kb = k3 if second else k2
        jb = 2 + np.int64(second)
        last = _before(ta, ka, tb, kb)
        ct = tb if last else ta
        ck = kb if last else ka
        c += jb if last else ja
        if t < ct or (t == ct and k < ck):
            break
        d = _at(i)
        h[d] = ct
        h[d + S.HP_KEY] = ck
        h[d + S.HP_EVENT] = h[_at(c) + S.HP_EVENT]
        i = c
        c = 4 * i + 1
    if n > 0:
        d = _at(i)
        h[d] = t
        h[d + S.HP_KEY] = k
        h[d + S.HP_EVENT] = e
    return top


@njit(cache=True, _nrt=False)
def free_event(st, eid):
    give_free(st.sc, S.SC_EV_FREE_TOP, st.ev_free, eid)
