"""The handler call boundary: how the engine calls a handler it was not compiled with.

The engine is compiled once per spin version; handlers are compiled apart, each into its own
small module (``spin.engine.handler_build``). The engine reaches a handler through the address
of its *entry*, a Numba function with one fixed signature, stored in the program table
(``st.prog[p, PR_ENTRY + kind]``). ``invoke_entry`` turns that integer back into a function
pointer and calls it with Numba's own calling convention, so an exception raised in the handler
(a bounds check, a ``spin_*`` refusal, or a Python exception in debug mode) propagates to the
engine's caller exactly as if the call were static.

Why this and not the alternatives (measured, see ``docs/engine.md``): a static ``if prog == k``
switch inlines handlers (about 1 ns) but makes every handler set a new engine to compile
(24 s and up); first-class function values cost 8-30 ns per call and do not cache; a C
``cfunc`` cannot raise. The indirect call costs a few ns and keeps exceptions.

The entry takes one argument, the address of the *call block*: a row of ``st.cur`` where the
engine writes the context's scalars and the address and length of each array the handler may
see. Passing Numba's array structs instead (about 80 scalars for the context, payload and
memory) cost 21 ns per call; the block costs about 3 ns. The entry rebuilds the arrays
(``unpack_call``), views the memory bytes with the program's dtype and shape, and calls the
handler, so the engine knows neither.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from . import state as S
from .handler_context import (
    HC_COLS,
    HC_EXTRA_CYCLES,
    HC_ICRC,
    HC_PEND_N,
    HC_STAGE_N,
    HandlerContext,
)
from .layout import CALL_WORDS, MEMORY_DIMS
from .pool import ICRC_VALID
from spin.jit import njit

MAX_MEMORY_DIMS = MEMORY_DIMS   # ranks of handler memory an entry can rebuild (st.ec EC_MEM_DIMS)

# Words of the call block (``st.cur[CUR_CALL:]``, CALL_WORDS of them: spin.engine.layout): the
# context's scalars, then each array as its address and length. Fixed-shape arrays (``ctl``, ``pend``, ``msg_state``) need no length.
CB_SCALARS = 0        # 15 words: the HandlerContext scalars, in field order
N_SCALARS = 15
CB_CTL = 15
CB_PEND = 16
CB_STAGE = 17         # address, length
CB_HOST_MEM = 19      # address, length
CB_MSG_STATE = 21
CB_FRAME = 22         # address, length
CB_PKT = 24           # address, length
CB_MEM = 26           # address, length in bytes
CB_DIMS = 28          # address of the memory's shape (MAX_MEMORY_DIMS words of its st.ec row)

_I64 = types.int64
_BYTES = types.Array(types.uint8, 1, "C")
_WORDS = types.Array(types.int64, 1, "C")

CONTEXT_TYPE = types.NamedTuple(
    [_I64] * N_SCALARS + [_WORDS, types.Array(types.int64, 2, "C"), _BYTES, _BYTES, _WORDS,
                          _BYTES],
    HandlerContext)
PAYLOAD_TYPE = _BYTES
ENTRY_ARGS = (_I64,)          # the address of the call block
ENTRY_SIGNATURE = _I64(*ENTRY_ARGS)


def _array_at(address, shape, dtype, readonly: bool):
    dims_types = [shape] if isinstance(shape, types.Integer) else list(shape)
    ndim = len(dims_types)
    array_type = types.Array(dtype.dtype, ndim, "C", readonly=readonly)

    def codegen(context, builder, sig, args):
        address_v, shape_v, _ = args
        values = [shape_v] if ndim == 1 and isinstance(sig.args[1], types.Integer) \
            else cgutils.unpack_tuple(builder, shape_v, ndim)
        dims = [context.cast(builder, v, t, types.intp) for v, t in zip(values, dims_types)]
        intp = context.get_value_type(types.intp)
        element = context.get_data_type(array_type.dtype)
        itemsize = intp(context.get_abi_sizeof(element))
        strides = [None] * ndim
        step = itemsize
        for i in range(ndim - 1, -1, -1):
            strides[i] = step
            step = builder.mul(step, dims[i])
        ary = make_array(array_type)(context, builder)
        data = builder.inttoptr(context.cast(builder, address_v, sig.args[0], types.intp),
                                element.as_pointer())
        populate_array(ary, data=data, shape=dims, strides=strides, itemsize=itemsize,
                       meminfo=None)
        return ary._getvalue()
    return array_type(address, shape, dtype), codegen


@intrinsic
def array_at(typingctx, address, shape, dtype):
    """A C-contiguous array of ``dtype`` and ``shape`` (an int or a tuple of ints) over the
    memory at integer ``address``, owned by nobody: a view the caller guarantees is alive."""
    return _array_at(address, shape, dtype, readonly=False)


@intrinsic
def readonly_array_at(typingctx, address, shape, dtype):
    """``array_at``, typed read-only: code that writes to it does not compile."""
    return _array_at(address, shape, dtype, readonly=True)


@intrinsic
def invoke_entry(typingctx, address, block):
    """Call the handler entry at ``address`` with the call block at ``block``; its int64
    result. An exception raised in the entry propagates to this function's caller."""
    sig = _I64(address, block)

    def codegen(context, builder, signature, args):
        fnty = context.call_conv.get_function_type(_I64, list(ENTRY_ARGS))
        fnptr = builder.inttoptr(args[0], fnty.as_pointer())
        block_v = context.cast(builder, args[1], signature.args[1], _I64)
        status, result = context.call_conv.call_function(builder, fnptr, _I64, ENTRY_ARGS,
                                                         [block_v])
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return result
    return sig, codegen


@njit(cache=True, inline="always", _nrt=False)
def address_of(a):
    """The address of array ``a``'s first element, for a call block (handlers, schemes and
    transports compiled apart)."""
    return np.int64(a.ctypes.data)


@njit(cache=True, inline="always", _nrt=False)
def prepare_call(st, kind, dev, m, slot, start, hpu, msg_offset, psn, frame_len, pkt, hmem, ec):
    """Reset the invocation's counters and write the call block of one handler invocation
    (``m``: its message row; ``slot``: its frame, -1 in a completion handler); return the
    block's address. The handler sees only these arrays: its host's memory (empty on a switch),
    its message's state, its frame, its payload, its context's handler memory and its own
    command tables, never the engine's."""
    ctl = st.pend[S.MAX_PENDING_ACTIONS]
    ctl[HC_EXTRA_CYCLES] = 0
    ctl[HC_PEND_N] = 0
    ctl[HC_STAGE_N] = 0
    b = st.cur[S.CUR_CALL:S.CUR_CALL + CALL_WORDS]
    device_kind = st.dev[dev, S.D_KIND]
    b[0] = kind
    b[1] = device_kind
    b[2] = st.dev[dev, S.D_NODE]
    b[3] = hpu
    b[4] = start
    b[5] = st.msg[m, S.M_SRC]
    b[6] = st.msg[m, S.M_QP]
    b[7] = psn
    b[8] = msg_offset
    b[9] = st.msg[m, S.M_LEN]
    b[10] = st.msg[m, S.M_VA]
    b[11] = st.msg[m, S.M_RKEY]
    b[12] = st.sc[S.SC_MTU]
    b[13] = st.sc[S.SC_N_NODES]
    b[14] = st.dev[dev, S.D_NPORTS]
    if device_kind == S.DEV_NIC:
        b[CB_HOST_MEM] = address_of(st.host_mem) + st.dev[dev, S.D_HOST_MEM_OFF]
        b[CB_HOST_MEM + 1] = st.dev[dev, S.D_HOST_MEM_SIZE]
    else:
        b[CB_HOST_MEM] = address_of(st.host_mem)
        b[CB_HOST_MEM + 1] = 0
    b[CB_MSG_STATE] = address_of(st.msg_state) + m * S.MSG_STATE_WORDS * 8
    if slot >= 0:
        b[CB_FRAME] = address_of(st.pool) + slot * st.pool.shape[1]
        b[CB_FRAME + 1] = frame_len
        ctl[HC_ICRC] = st.slot_meta[slot, S.SM_ICRC]
    else:
        b[CB_FRAME] = address_of(st.pool)
        b[CB_FRAME + 1] = 0
        ctl[HC_ICRC] = ICRC_VALID
    b[CB_PKT] = address_of(pkt)
    b[CB_PKT + 1] = pkt.shape[0]
    b[CB_MEM] = address_of(hmem) + st.ec[ec, S.EC_MEM_OFF]
    b[CB_MEM + 1] = st.ec[ec, S.EC_MEM_BYTES]
    b[CB_DIMS] = address_of(st.ec) + (ec * st.ec.shape[1] + S.EC_MEM_DIMS) * 8
    return address_of(b)


@njit(cache=True, _nrt=False)
def init_call_block(st):
    """Write the words of the call block that never change: the addresses of the command
    tables and of the staging bytes (once per state, before the first handler runs)."""
    b = st.cur[S.CUR_CALL:S.CUR_CALL + CALL_WORDS]
    b[CB_CTL] = address_of(st.pend[S.MAX_PENDING_ACTIONS])
    b[CB_PEND] = address_of(st.pend)
    stage_bytes = S.MAX_PENDING_ACTIONS * st.pool.shape[1]
    b[CB_STAGE] = address_of(st.host_mem) + st.host_mem.shape[0] - stage_bytes
    b[CB_STAGE + 1] = stage_bytes


@njit(cache=True, inline="always", _nrt=False)
def unpack_call(block):
    """The handler's view of a call block: (ctx, pkt, handler memory bytes, memory shape)."""
    b = array_at(block, CALL_WORDS, np.int64)
    ctx = HandlerContext(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
        b[14],
        array_at(b[CB_CTL], HC_COLS, np.int64),
        array_at(b[CB_PEND], (S.MAX_PENDING_ACTIONS, HC_COLS), np.int64),
        array_at(b[CB_STAGE], b[CB_STAGE + 1], np.uint8),
        array_at(b[CB_HOST_MEM], b[CB_HOST_MEM + 1], np.uint8),
        array_at(b[CB_MSG_STATE], S.MSG_STATE_WORDS, np.int64),
        array_at(b[CB_FRAME], b[CB_FRAME + 1], np.uint8))
    pkt = array_at(b[CB_PKT], b[CB_PKT + 1], np.uint8)
    mem = array_at(b[CB_MEM], b[CB_MEM + 1], np.uint8)
    dims = array_at(b[CB_DIMS], MAX_MEMORY_DIMS, np.int64)
    return ctx, pkt, mem, dims


def entry_address(dispatcher) -> int:
    """Native address of a compiled entry (Numba's calling convention, not a C wrapper). The
    dispatcher must stay alive as long as the address is used: its library holds the code."""
    cres = dispatcher.overloads[ENTRY_ARGS]
    return int(cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
