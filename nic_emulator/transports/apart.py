"""The engine's side of a transport compiled apart (``spin.transport_api``).

The dispatch (``nic_emulator.transports.dispatch``) sends a NIC whose transport code is
``TR_APART`` here: each contract function writes the call block (``spin.engine.transport_abi``),
calls the transport's entry for that function through its address (``st.sc[SC_TR_ENTRY +
function]``, written per process when the run loads the transport) and reads the results back
with the types the engine's own transports return. ``CUR_TR_RUNNING`` names the function while
it runs, so a failure inside it is reported as the transport's.
"""
from spin.engine import state as S
from spin.engine.handler_abi import address_of, invoke_entry
from spin.engine.transport_abi import (TB_A, TB_B, TB_C, TB_DEV, TB_FRAME, TB_NOW, TB_OUT,
                                       TB_RESULT, TB_STATE, state_address)
from spin.jit import njit

# contract indices (the order of nic_emulator.transports.dispatch.CONTRACT)
F_TX_STEP, F_CARRIES, F_ADMIT, F_FIND_MESSAGE = 0, 1, 2, 3
F_ACCEPTED, F_ON_CONTROL, F_ON_TRIMMED, F_ON_TIMEOUT = 4, 5, 6, 7



@njit(cache=True, _nrt=False)
def _call(st, fn, dev, now, a, b, c, out, frame):
    """Call function ``fn`` of the run's transport apart; its results are in the block
    (``_result``)."""
    entry = st.sc[S.SC_TR_ENTRY + fn]
    if entry == 0:
        raise RuntimeError("spin: a transport compiled apart was called before its entries "
                           "were loaded")
    cur = st.cur
    block = cur[S.CUR_TR_CALL:]
    block[TB_STATE] = state_address(st)
    block[TB_DEV] = dev
    block[TB_NOW] = now
    block[TB_A] = a
    block[TB_B] = b
    block[TB_C] = c
    block[TB_OUT] = address_of(out)
    block[TB_OUT + 1] = out.shape[0]
    block[TB_FRAME] = address_of(frame)
    block[TB_FRAME + 1] = frame.shape[0]
    running, running_dev = cur[S.CUR_TR_RUNNING], cur[S.CUR_TR_DEV]
    cur[S.CUR_TR_RUNNING] = fn + 1
    cur[S.CUR_TR_DEV] = dev
    invoke_entry(entry, address_of(block))
    cur[S.CUR_TR_RUNNING] = running
    cur[S.CUR_TR_DEV] = running_dev


@njit(cache=True, inline="always", _nrt=False)
def _result(st, k):
    """Word ``k`` of the results of the latest call."""
    return st.cur[S.CUR_TR_CALL + TB_RESULT + k]


@njit(cache=True, _nrt=False)
def tx_step(st, dev, now):
    _call(st, F_TX_STEP, dev, now, 0, 0, 0, st.parsed, st.pool[0])


@njit(cache=True, _nrt=False)
def carries(st, opcode):
    _call(st, F_CARRIES, -1, st.sc[S.SC_NOW], opcode, 0, 0, st.parsed, st.pool[0])
    return _result(st, 0) != 0


@njit(cache=True, _nrt=False)
def admit(st, dev, out, now):
    _call(st, F_ADMIT, dev, now, 0, 0, 0, out, st.pool[0])
    return _result(st, 0), _result(st, 1), _result(st, 2)


@njit(cache=True, _nrt=False)
def find_message(st, dev, out, psn, timer, now):
    _call(st, F_FIND_MESSAGE, dev, now, psn, 1 if timer else 0, 0, out, st.pool[0])
    return (_result(st, 0), _result(st, 1), _result(st, 2) != 0, _result(st, 3),
            _result(st, 4), _result(st, 5))


@njit(cache=True, _nrt=False)
def accepted(st, dev, c, psn, out, message_done, now):
    _call(st, F_ACCEPTED, dev, now, c, psn, 1 if message_done else 0, out, st.pool[0])


@njit(cache=True, _nrt=False)
def on_control(st, dev, out, frame, now):
    _call(st, F_ON_CONTROL, dev, now, 0, 0, 0, out, frame)
    return _result(st, 0)


@njit(cache=True, _nrt=False)
def on_trimmed(st, dev, out, now):
    _call(st, F_ON_TRIMMED, dev, now, 0, 0, 0, out, st.pool[0])


@njit(cache=True, _nrt=False)
def on_timeout(st, dev, c, now):
    _call(st, F_ON_TIMEOUT, dev, now, c, 0, 0, st.parsed, st.pool[0])
    return _result(st, 0) != 0
