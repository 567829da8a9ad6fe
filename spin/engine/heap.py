"""Pending events ordered by (time_ps, key): a calendar of buckets in front of two 4-ary heaps.

The key is unique per event (creator device and its own sequence number), so the pop order is a
total order that does not depend on how devices are partitioned among workers.

Why a calendar (a perf profile of htsim's 1,024-host scenario had ``pop_event`` first among
engine functions, and the loop 2.3x slower per event than at 128 hosts): a large fabric keeps
one pending event per packet in flight, 10^5 to 10^6 of them, and a heap of that size is 9-10
levels of mostly cache-missing loads per pop and per push. Almost every event is scheduled a
link latency or a serialisation time ahead, so events are bucketed by time instead: bucket
``(t >> CAL_SHIFT) % CAL_BUCKETS`` holds the events of one ``2^CAL_SHIFT`` ps interval within
the calendar's horizon (``CAL_BUCKETS`` buckets ahead of ``CAL_BASE``) as a list of blocks of
events (``st.calb``, ten (time, key, id) entries a block). Only the current bucket's events are
in the near heap ``st.heap``, a few dozen entries that stay in cache; a bucket is moved into it
when the heap runs dry, found through a bitmap of non-empty buckets. Events beyond the horizon
(timers) wait in the far heap ``st.far`` and move into the calendar as it reaches them.
Invariant: whenever any event is pending, the earliest one is at the top of ``st.heap``, so
``next_time`` and ``SC_HEAP_N > 0`` mean what they meant with one heap. The bucket width is
chosen per fabric from its expected event density (``calendar_shift``) so that a bucket holds
tens of events.

The heaps are shaped for the same reason as before (a profile of the 8-host star): 4-ary (half
the levels), each entry carries its event's time and key next to its id in four words of a flat
vector (``h[4 i + HP_*]``: an index is a shift, four children are two cache lines), and the
``HEAP_SPARE`` entries past the last one always hold the sentinel time 2^63 - 1, so a
sift-down compares all four children without asking which exist, with selects, not branches.
"""
import numpy as np

from . import state as S
from .freelist import give_free, take_free
from .hints import prefetch, prefetch_lines, row_address
from spin.jit import njit

_SENTINEL = np.iinfo(np.int64).max
_MASK = S.CAL_BUCKETS - 1
# a bucket's entry in st.cal: its head block, and in the high bits that block's fill count
_FILL_SHIFT = 32
_BLOCK_MASK = (np.int64(1) << _FILL_SHIFT) - 1


@njit(cache=True, _nrt=False)
def push_event(st, time_ps, creator_dev, kind, dev, a, b):
    """Schedule an event; the creator device's sequence number makes the key unique. Returns
    its row in ``st.ev``."""
    seq = st.dev[creator_dev, S.D_SEQ]
    st.dev[creator_dev, S.D_SEQ] = seq + 1
    return push_event_keyed(st, time_ps, (np.int64(creator_dev) << 40) | seq, kind, dev, a, b)


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
    shift = sc[S.SC_CAL_SHIFT]
    base = sc[S.SC_CAL_BASE]
    if time_ps < base + (np.int64(1) << shift):
        _heap_push(st.heap, sc, S.SC_HEAP_N, time_ps, key, eid)
        return eid
    if time_ps < base + (np.int64(S.CAL_BUCKETS) << shift):
        _bucket_add(st, (time_ps >> shift) & _MASK, time_ps, key, eid)
        sc[S.SC_CAL_N] += 1
    else:
        _heap_push(st.far, sc, S.SC_FAR_N, time_ps, key, eid)
    if sc[S.SC_HEAP_N] == 0:
        _refill(st)   # it was the only pending event: bring it to the top
    return eid


@njit(cache=True, inline="always", _nrt=False)
def next_time(st):
    """Time of the earliest pending event (the heap must not be empty)."""
    return st.heap[S.HP_TIME]


@njit(cache=True, _nrt=False)
def pop_event(st):
    """Remove the earliest event and return its id; the caller frees it with free_event."""
    sc = st.sc
    eid = _heap_pop(st.heap, sc, S.SC_HEAP_N)
    if sc[S.SC_HEAP_N] == 0 and (sc[S.SC_CAL_N] > 0 or sc[S.SC_FAR_N] > 0):
        _refill(st)
    return eid


@njit(cache=True, _nrt=False)
def free_event(st, eid):
    give_free(st.sc, S.SC_EV_FREE_TOP, st.ev_free, eid)


# --- the calendar ------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def _bucket_add(st, idx, time_ps, key, eid):
    """Add event ``eid`` to bucket ``idx``: into its head block, or a new head block when the
    bucket is empty or its head block full (the order inside a bucket does not matter: the
    near heap orders it). The block keeps the event's time and key beside its id, so loading
    the bucket reads no event row; and the head's fill count lives in ``st.cal`` with the
    head, so adding only writes to the block: a store that misses the cache does not stall
    the way reading the block's count did (two fifths of this function's time)."""
    cal = st.cal
    calb = st.calb
    head = cal[idx]
    if head < 0 or head >> _FILL_SHIFT == S.CALB_CAPACITY:
        blk = _take_block(st.sc, calb)
        calb[blk, S.CALB_NEXT] = head & _BLOCK_MASK if head >= 0 else -1
        if head < 0:
            cal[S.CAL_BUCKETS + (idx >> 6)] |= np.int64(1) << (idx & 63)
        n = np.int64(0)
    else:
        blk = head & _BLOCK_MASK
        n = head >> _FILL_SHIFT
    w = S.CALB_ENTRIES + n * S.CALB_ENTRY
    calb[blk, w] = time_ps
    calb[blk, w + 1] = key
    calb[blk, w + 2] = eid
    cal[idx] = ((n + 1) << _FILL_SHIFT) | blk


@njit(cache=True, inline="always", _nrt=False)
def _take_block(sc, calb):
    """A block for a bucket: one freed earlier, else the first never used."""
    new = sc[S.SC_CALB_FREE]
    if new >= 0:
        sc[S.SC_CALB_FREE] = calb[new, S.CALB_NEXT]
        return new
    new = sc[S.SC_CALB_FRESH]
    if new >= calb.shape[0]:
        raise MemoryError("spin engine: event calendar blocks exhausted (raise "
                          "EngineConfig.max_events_pending)")
    sc[S.SC_CALB_FRESH] = new + 1
    return new


@njit(cache=True, _nrt=False)
def _refill(st):
    """The near heap is empty and events are pending: move the calendar on to the next
    non-empty bucket (jumping straight to the far heap's earliest event when no bucket holds
    one) and load that bucket into the near heap, until the heap holds the earliest event."""
    sc = st.sc
    shift = sc[S.SC_CAL_SHIFT]
    while sc[S.SC_HEAP_N] == 0 and (sc[S.SC_CAL_N] > 0 or sc[S.SC_FAR_N] > 0):
        if sc[S.SC_CAL_N] == 0:
            sc[S.SC_CAL_BASE] = (st.far[S.HP_TIME] >> shift) << shift
        else:
            cur = (sc[S.SC_CAL_BASE] >> shift) & _MASK
            nxt = _next_bucket(st.cal, cur)
            sc[S.SC_CAL_BASE] += ((nxt - cur) & _MASK) << shift
            _load_bucket(st, nxt)
        _admit_far(st)


@njit(cache=True, inline="always", _nrt=False)
def _next_bucket(cal, cur):
    """The first non-empty bucket after ``cur``, cyclically (the caller knows one exists)."""
    words = S.CAL_WORDS
    start = (cur + 1) & _MASK
    w = start >> 6
    bits = cal[S.CAL_BUCKETS + w] & (np.int64(-1) << (start & 63))
    for _ in range(words + 1):
        if bits != 0:
            return (w << 6) + _lowest_bit(bits)
        w = (w + 1) % words
        bits = cal[S.CAL_BUCKETS + w]
    raise RuntimeError("spin engine: event calendar bitmap lost an event")


@njit(cache=True, inline="always", _nrt=False)
def _lowest_bit(x):
    """Index of the lowest set bit of a non-zero int64."""
    low = x & -x
    i = 0
    if low & 0xFFFFFFFF == 0:
        i += 32
        low >>= 32
    if low & 0xFFFF == 0:
        i += 16
        low >>= 16
    if low & 0xFF == 0:
        i += 8
        low >>= 8
    if low & 0xF == 0:
        i += 4
        low >>= 4
    if low & 0x3 == 0:
        i += 2
        low >>= 2
    if low & 0x1 == 0:
        i += 1
    return i


@njit(cache=True, _nrt=False)
def _load_bucket(st, idx):
    """Move every event of bucket ``idx`` (the current one now) into the near heap, from its
    blocks alone: reading each event's time and key from its row cost a cache miss per event
    (three quarters of this function's time at 1,024 hosts, when the blocks held ids only).
    The rows are prefetched instead: the loop reads each as its event comes up."""
    cal = st.cal
    calb = st.calb
    sc = st.sc
    head = cal[idx]
    cal[idx] = -1
    cal[S.CAL_BUCKETS + (idx >> 6)] &= ~(np.int64(1) << (idx & 63))
    blk = head & _BLOCK_MASK
    n = head >> _FILL_SHIFT
    moved = 0
    while True:
        nxt = calb[blk, S.CALB_NEXT]
        if nxt >= 0:   # fetched while this block's events go into the heap
            prefetch_lines(row_address(calb, nxt), S.CALB_WORDS * 8)
        for j in range(n):
            w = S.CALB_ENTRIES + j * S.CALB_ENTRY
            eid = calb[blk, w + 2]
            prefetch(row_address(st.ev, eid))
            _heap_push(st.heap, sc, S.SC_HEAP_N, calb[blk, w], calb[blk, w + 1], eid)
        moved += n
        calb[blk, S.CALB_NEXT] = sc[S.SC_CALB_FREE]
        sc[S.SC_CALB_FREE] = blk
        if nxt < 0:
            break
        blk = nxt
        n = S.CALB_CAPACITY   # the blocks behind the head are full
    sc[S.SC_CAL_N] -= moved
    # the next bucket is usually the next one loaded: fetch its head block while this one's
    # events run
    after = cal[(idx + 1) & _MASK]
    if after >= 0:
        prefetch_lines(row_address(calb, after & _BLOCK_MASK), S.CALB_WORDS * 8)


@njit(cache=True, _nrt=False)
def _admit_far(st):
    """Move far events that the calendar's horizon now reaches into their buckets (or into the
    near heap, for the current bucket)."""
    sc = st.sc
    shift = sc[S.SC_CAL_SHIFT]
    base = sc[S.SC_CAL_BASE]
    near_end = base + (np.int64(1) << shift)
    horizon = base + (np.int64(S.CAL_BUCKETS) << shift)
    while sc[S.SC_FAR_N] > 0 and st.far[S.HP_TIME] < horizon:
        t = st.far[S.HP_TIME]
        key = st.far[S.HP_KEY]
        eid = _heap_pop(st.far, sc, S.SC_FAR_N)
        if t < near_end:
            _heap_push(st.heap, sc, S.SC_HEAP_N, t, key, eid)
        else:
            _bucket_add(st, (t >> shift) & _MASK, t, key, eid)
            sc[S.SC_CAL_N] += 1


# --- 4-ary heaps ---------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def _at(i):
    """Word offset of entry ``i`` (the mask tells LLVM it is not negative, which drops Numba's
    negative-index wraparound from every access)."""
    return (i << 2) & 0x7FFFFFFFFFFFFFFC   # HEAP_COLS = 4 words per entry


@njit(cache=True, inline="always", _nrt=False)
def _before(t0, k0, t1, k1):
    """Entry (t1, k1) comes before (t0, k0), without a branch."""
    return (t1 < t0) | ((t1 == t0) & (k1 < k0))


@njit(cache=True, _nrt=False)
def _heap_push(h, sc, n_slot, time_ps, key, eid):
    i = sc[n_slot]
    sc[n_slot] = i + 1
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


@njit(cache=True, _nrt=False)
def _heap_pop(h, sc, n_slot):
    """Remove the top entry of heap ``h`` (``sc[n_slot]`` entries) and return its event id."""
    top = h[S.HP_EVENT]
    n = sc[n_slot] - 1
    sc[n_slot] = n
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


def calendar_shift(n_ports: int, frame_bytes: int, rate_gbps: float,
                   events_per_bucket: int = 32) -> int:
    """log2 of the bucket width, ps, for a fabric of ``n_ports`` directed ports: with every port
    busy, each frame that crosses a hop makes about three events (enqueue, transmit done,
    arrival) per serialisation time, so a bucket of this width holds about
    ``events_per_bucket``; a fabric with less traffic just skips empty buckets. Clamped to
    16 ps .. 16 us."""
    ser_ps = max(frame_bytes * 8000.0 / max(rate_gbps, 1e-3), 1.0)
    width_ps = events_per_bucket * ser_ps / (3.0 * max(n_ports, 1))
    return int(min(max(np.floor(np.log2(max(width_ps, 1.0))), 4), 24))


def pending_events(st) -> int:
    """Events pending anywhere: the near heap, the calendar's buckets and the far heap."""
    return int(st.sc[S.SC_HEAP_N] + st.sc[S.SC_CAL_N] + st.sc[S.SC_FAR_N])
