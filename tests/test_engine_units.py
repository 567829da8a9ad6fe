"""Unit tests of the engine's data structures against plain-Python references."""
import heapq

import numpy as np
import pytest

from spin.engine import state as S
from spin.engine.hashmap import map_delete, map_get, map_put
from spin.engine.heap import free_event, pending_events, pop_event, push_event
from spin.engine.state import StateSizes, allocate_state


def test_hashmap_matches_a_dict_under_random_churn():
    rng = np.random.default_rng(0)
    keys, vals = np.full(64, -1, np.int64), np.zeros(64, np.int64)
    ref: dict[int, int] = {}
    for step in range(20_000):
        k = int(rng.integers(0, 60))
        op = int(rng.integers(0, 3))
        if op == 0 and len(ref) < 40:
            map_put(keys, vals, k, step)
            ref[k] = step
        elif op == 1:
            map_delete(keys, vals, k)
            ref.pop(k, None)
        for q in range(0, 60, 7):
            assert map_get(keys, vals, q) == ref.get(q, -1)


def _small_state(calendar_shift: int = 10):
    z = StateSizes(calendar_shift=calendar_shift, n_devs=4, n_ports=4, n_nodes=2, n_switches=1, n_ecs=0, n_progs=0,
                   n_host_ops=1, host_mem_total=64, max_hpus=1, max_qp=1, n_marks=1,
                   slot_bytes=64, n_slots=8, queue_frames=4, max_events=4096,
                   max_rx_messages=16, max_tx_messages=16, txq_cap=4, msglog_cap=1,
                   txlog_cap=1, capture_frames=4, outbox_frames=4)
    return allocate_state(z)


def test_heap_pops_in_time_then_key_order():
    st = _small_state()
    rng = np.random.default_rng(1)
    ref = []
    for i in range(3000):
        t = int(rng.integers(0, 50))
        dev = int(rng.integers(0, 4))
        key = (dev << 40) | int(st.dev[dev, S.D_SEQ])
        push_event(st, t, dev, 1, dev, i, 0)
        heapq.heappush(ref, (t, key, i))
    while ref:
        t, key, i = heapq.heappop(ref)
        eid = pop_event(st)
        assert (st.ev[eid, S.E_TIME], st.ev[eid, S.E_KEY], st.ev[eid, S.E_A]) == (t, key, i)
        free_event(st, eid)
    assert pending_events(st) == 0


def test_heap_interleaved_and_full():
    """Pushes and pops interleaved at random, and a heap filled to the event pool's last row:
    the spare sentinel row past the last entry never lets a stale entry or a missing child
    change the order. Only the spare entries start as sentinels; the rest of both heaps'
    vectors starts as untouched zeros, which no push or pop may read."""
    st = _small_state()
    spare = S.HEAP_SPARE * S.HEAP_COLS
    for h in (st.heap, st.far):
        assert (h[:spare] == np.iinfo(np.int64).max).all() and not h[spare:].any()
    rng = np.random.default_rng(7)
    ref = []
    for i in range(20000):
        if ref and rng.random() < 0.48:
            t, key, j = heapq.heappop(ref)
            eid = pop_event(st)
            assert (st.ev[eid, S.E_TIME], st.ev[eid, S.E_KEY], st.ev[eid, S.E_A]) == (t, key, j)
            free_event(st, eid)
        else:
            t = int(rng.integers(0, 40))
            dev = int(rng.integers(0, 4))
            key = (dev << 40) | int(st.dev[dev, S.D_SEQ])
            push_event(st, t, dev, 1, dev, i, 0)
            heapq.heappush(ref, (t, key, i))
        assert pending_events(st) == len(ref)
        if ref:
            assert st.heap[S.HP_TIME] == ref[0][0]
    while ref:
        eid = pop_event(st)
        assert st.ev[eid, S.E_A] == heapq.heappop(ref)[2]
        free_event(st, eid)
    capacity = st.ev.shape[0]
    times = rng.integers(0, 1 << 40, capacity)
    for i, t in enumerate(times):
        push_event(st, int(t), 0, 1, 0, i, 0)
    assert pending_events(st) == capacity
    popped = []
    for _ in range(capacity):
        eid = pop_event(st)
        popped.append(st.ev[eid, S.E_TIME])
        free_event(st, eid)
    assert popped == sorted(times.tolist())


@pytest.mark.parametrize("shift", [4, 9, 20])
def test_calendar_matches_a_heap_across_buckets_and_horizon(shift):
    """Times spread over the current bucket, the calendar's later buckets (wrapping around its
    2^16 buckets) and far beyond its horizon, pushed and popped interleaved as a run does
    (never into the past): the pop order is exactly (time, key), and the earliest pending event
    is always at the top of the near heap."""
    st = _small_state(shift)
    rng = np.random.default_rng(shift)
    width, horizon = 1 << shift, S.CAL_BUCKETS << shift
    ref, now = [], 0
    for i in range(30000):
        if ref and rng.random() < 0.5:
            t, key, j = heapq.heappop(ref)
            eid = pop_event(st)
            assert (st.ev[eid, S.E_TIME], st.ev[eid, S.E_KEY], st.ev[eid, S.E_A]) == (t, key, j)
            now = t
            free_event(st, eid)
        else:
            span = [width, 8 * width, horizon, 3 * horizon][int(rng.integers(0, 4))]
            t = now + int(rng.integers(0, span))
            dev = int(rng.integers(0, 4))
            key = (dev << 40) | int(st.dev[dev, S.D_SEQ])
            if len(ref) < st.ev.shape[0]:
                push_event(st, t, dev, 1, dev, i, 0)
                heapq.heappush(ref, (t, key, i))
        assert pending_events(st) == len(ref)
        if ref:
            assert (st.heap[S.HP_TIME], st.heap[S.HP_KEY]) == ref[0][:2]
    assert st.sc[S.SC_CAL_N] + st.sc[S.SC_FAR_N] > 0 or not ref


def test_calendar_jumps_over_idle_time():
    """One event far in the future and nothing else: it comes to the top at once, and the
    calendar does not walk bucket by bucket to reach it."""
    st = _small_state(4)
    push_event(st, 10**15, 0, 1, 0, 7, 0)
    assert st.heap[S.HP_TIME] == 10**15 and pending_events(st) == 1
    eid = pop_event(st)
    assert st.ev[eid, S.E_A] == 7 and pending_events(st) == 0


def test_engine_state_stays_narrow():
    """Every array of the engine state costs each Python -> engine call and compile time (see
    the comment at ``spin.engine.state.MAX_STATE_ARRAYS``): new values go into table columns."""
    assert len(S.FIELDS) == len(set(S.FIELDS)) <= S.MAX_STATE_ARRAYS
