"""Software prefetch of what the next event will touch, while the current one runs.

At thousands of hosts the rows one packet event touches (its event row, its port's row, its
frame's length and headers) are rarely in the caches: each event waited on a few misses in a
row, which made the cost per event grow with the fabric. The next event is known before the
current one runs (the top of the near heap), and so are its kind and arguments once its row is
in cache; the rows of the event after it are among the top's four children. So while event i
runs, the rows event i + 1 needs and the event rows of i + 2's candidates are fetched: by the
time they are used they are in cache, and their misses overlap with event i's work instead of
following it. Prefetches are hints: they change no result.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import state as S
from .ports import ring_address
from spin.jit import njit

_LINE = 64
# the port columns every hop reads: the row's first lines, through TRIM_DSCP (spin.engine.layout)
_PORT_HOT_BYTES = (S.PT_TRIM_DSCP + 1) * 8
# the frame bytes a hop parses: Ethernet, IPv4, UDP, BTH and RETH or AETH (spin.wire.roce)
_HEADER_BYTES = 2 * _LINE


@intrinsic
def prefetch(typingctx, address):
    """Hint the processor to bring the cache line at integer ``address`` into all cache levels
    for reading (``llvm.prefetch``); no effect on results, no fault on any address."""
    sig = types.void(address)

    def codegen(context, builder, signature, args):
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        ptr = builder.inttoptr(args[0], byte_ptr)
        # read, highest temporal locality, data cache
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, inline="always", _nrt=False)
def _row(a, i):
    """Address of row ``i`` of the C-contiguous 2-D array ``a``."""
    return np.int64(a.ctypes.data) + i * a.shape[1] * a.itemsize


@njit(cache=True, inline="always", _nrt=False)
def _lines(address, nbytes):
    for off in range(0, nbytes, _LINE):
        prefetch(address + off)


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
        # and the next start read (left by start_tx; stale hints only cost a useless fetch)
        hint = st.ev[nxt, S.E_HINT]
        prefetch(_row(st.slot_meta, hint & 0xFFFFFFFF))
        if hint >> 32 > 0:
            prefetch(_row(st.slot_meta, (hint >> 32) - 1))
        pos = st.ev[nxt, S.E_HINT_POS]
        if pos >= 0:
            prefetch(ring_address(st.port_q, a, pos))
            prefetch(ring_address(st.port_q, a, pos + 1))
    for c in range(1, min(n, 5)):
        prefetch(_row(st.ev, h[c * S.HEAP_COLS + S.HP_EVENT]))
