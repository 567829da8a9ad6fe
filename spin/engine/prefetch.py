"""Software prefetch of what the next event will touch, while the current one runs.

At thousands of hosts the rows one packet event touches (its event row, its port's row, its
frame's length and headers) are rarely in the caches: each event waited on a few misses in a
row, which made the cost per event grow with the fabric. The next event is known before the
current one runs (the top of the near heap), and so are its kind and arguments once its row is
in cache; the rows of the event after it are among the top's four children. So while event i
runs, the rows event i + 1 needs and the event rows of i + 2's candidates are fetched: by the
time they are used they are in cache, and their misses overlap with event i's work instead of
following it. Prefetches are hints: they change no result.

In a small fabric the rows stay in cache and the prefetches are pure overhead (3-7 % of the
events/s of a 2- to 128-host run); they pay from about 512 hosts (30 % more events/s at
1,024). ``EngineConfig.prefetch`` chooses; ``"auto"`` prefetches from ``PREFETCH_AUTO_HOSTS``.
"""
from . import state as S
from .hints import LINE_BYTES, prefetch, prefetch_lines as _lines, row_address as _row
from .ports import ring_address
from spin.jit import njit

# the port columns every hop reads: the row's first lines, through TX_EVENT (spin.engine.layout)
_PORT_HOT_BYTES = (S.PT_TX_EVENT + 1) * 8
# the frame bytes a hop parses: Ethernet, IPv4, UDP, BTH and RETH or AETH (spin.wire.roce)
_HEADER_BYTES = 2 * LINE_BYTES
# "auto" prefetches from this many hosts (bench/bench_scale.py and fabrics of 256-1,024 hosts:
# neutral to 2 % slower at 256-432 hosts, faster from 512)
PREFETCH_AUTO_HOSTS = 512


def prefetching(setting: str, n_hosts: int) -> bool:
    """Whether a fabric of ``n_hosts`` prefetches under ``EngineConfig.prefetch = setting``."""
    return setting == "on" or (setting == "auto" and n_hosts >= PREFETCH_AUTO_HOSTS)


@njit(cache=True, _nrt=False)
def prefetch_next_events(st):
    """Prefetch the rows the next event (the heap's top, whose own row an earlier call
    prefetched) will touch, and the event rows of the top's children (the next one after)."""
    h = st.heap
    n = st.sc[S.SC_HEAP_N]
    if n == 0:
        return
    nxt = h[S.HP_EVENT]
    kind = st.ev[nxt, S.E_KIND]
    a = st.ev[nxt, S.E_A]
    b = st.ev[nxt, S.E_B]
    if kind == S.EV_TX_DONE or kind == S.EV_ENQUEUE or (kind == S.EV_ARRIVE and a >= 0):
        _lines(_row(st.port, a), _PORT_HOT_BYTES)
        # the device's first line: its kind, and the sequence number every event it schedules
        # takes
        prefetch(_row(st.dev, st.ev[nxt, S.E_DEV]))
    if kind == S.EV_ARRIVE or kind == S.EV_ENQUEUE:
        prefetch(_row(st.slot_meta, b))
        _lines(_row(st.pool, b), min(_HEADER_BYTES, st.pool.shape[1]))
    elif kind == S.EV_TX_DONE:
        # the frame sent, its place in the port's ring and the frame after it: what the pop
        # and the next start read (left by start_tx and enqueue_frame; stale hints only cost
        # a useless fetch)
        hint = st.ev[nxt, S.E_HINT]
        prefetch(_row(st.slot_meta, hint & 0xFFFFFFFF))
        pos = (hint >> 32) - 1
        if pos >= 0:
            prefetch(ring_address(st.port_q, a, pos))
            prefetch(ring_address(st.port_q, a, pos + 1))
        after = st.ev[nxt, S.E_HINT_AFTER] - 1
        if after >= 0:
            prefetch(_row(st.slot_meta, after))
            prefetch(_row(st.pool, after))   # its IP header's ECN bits, if marked on dequeue
    for c in range(1, min(n, 5)):
        prefetch(_row(st.ev, h[c * S.HEAP_COLS + S.HP_EVENT]))
