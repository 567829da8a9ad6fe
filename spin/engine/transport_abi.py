"""The call boundary of a NIC transport compiled apart (``spin.transport_api``).

A transport's functions take the whole engine state (``st``): they open connections, emit
frames, schedule events with the engine's own functions. Compiled apart, they still get it, by
reference: the engine passes the address of its state tuple (the one ``state_ref`` keeps in
``run_until``'s frame) in the call block, and the entry turns it back into a ``StateRef`` of the
same type, so the transport's code, and every engine function it calls, compiles exactly as
inside the engine and works on the same arrays. The call block (``st.cur[CUR_TR_CALL:]``) holds
that address, the call's scalars, the parsed-header row and the frame, and receives the
results; an entry reads its arguments before calling and writes its results last, so a call
the transport causes inside another (a loopback delivery) cannot mix them up.
"""
from __future__ import annotations

import functools

from numba import types
from numba.extending import intrinsic

from .layout import TRANSPORT_CALL_WORDS
from .state_ref import StateRef

TB_STATE = 0     # address of the engine's state tuple
TB_DEV = 1       # the NIC
TB_NOW = 2       # virtual time, ps
TB_A = 3         # the function's other scalars, in contract order (conn, psn, opcode, timer...)
TB_B = 4
TB_C = 5
TB_OUT = 6       # address, length: the parsed header row (int64)
TB_FRAME = 8     # address, length: the frame's bytes (uint8)
TB_RESULT = 10   # the function's results, six words at most (find_message's)
assert TB_RESULT + 6 <= TRANSPORT_CALL_WORDS


@intrinsic
def state_address(typingctx, st):
    """The address of the state tuple a ``StateRef`` points to, as an int64."""
    if not isinstance(st, StateRef):
        return None

    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.int64))
    return types.int64(st), codegen


@functools.lru_cache(maxsize=None)
def state_at_for(tuple_type: types.BaseNamedTuple):
    """An intrinsic ``state_at(address)``: the ``StateRef`` of ``tuple_type`` at ``address``."""
    ref_type = StateRef(tuple_type)

    @intrinsic
    def state_at(typingctx, address):
        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(ref_type))
        return ref_type(types.int64), codegen
    return state_at


@functools.lru_cache(maxsize=1)
def engine_state_type() -> types.BaseNamedTuple:
    """Numba's type of the engine's state tuple (the same for every fabric: the arrays'
    dtypes and ranks), read from a smallest state once per process."""
    import numba

    from . import state as S
    sizes = S.StateSizes(n_devs=1, n_ports=1, n_nodes=1, n_switches=0, n_ecs=0, n_progs=0,
                         n_host_ops=0, host_mem_total=8, max_hpus=1, max_qp=1, n_marks=1,
                         slot_bytes=64, n_slots=1, queue_frames=1, max_events=1,
                         max_rx_messages=1, max_tx_messages=1, txq_cap=1, msglog_cap=1,
                         txlog_cap=1, capture_frames=1, outbox_frames=1)
    return numba.typeof(S.allocate_state(sizes))
