"""The engine's side of port-selection schemes compiled apart (``spin.port_selection``).

``select_port`` sends every switch whose scheme code is past the shipped ones here: the call
block gets the decision's scalars and the addresses of what the scheme may see, the scheme's
entry is called through its address (``st.sc[SC_LB_ENTRY + index]``, written per process when
the run loads its schemes), and its answer is checked before the frame moves: a port outside
the group would send the frame somewhere routing never meant it to go. ``CUR_LB_RUNNING``
names the scheme while it runs, so a failure inside it is reported as the scheme's.
"""
from spin.engine import state as S
from spin.engine.handler_abi import address_of, invoke_entry
from spin.jit import njit
from spin.port_selection import (
    SB_DST,
    SB_FRAME,
    SB_GROUP,
    SB_MEMORY,
    SB_N_PORTS,
    SB_NOW,
    SB_PORT_ROWS,
    SB_PORTS,
    SB_RNG,
    SB_SEED,
    SB_SWITCH,
)
from spin.wire.headers import IP_DST_OFF
from spin.wire.transport_frames import get_be

_WORD = 8   # bytes of an int64



@njit(cache=True, _nrt=False)
def apart_port(st, dev, slot, group, first, count, now, index):
    """The local port scheme ``index`` (of the run's schemes compiled apart) picks for the
    frame in ``slot`` out of route group ``group`` (``count`` ports from ``st.rport[first]``)."""
    entry = st.sc[S.SC_LB_ENTRY + index]
    if entry == 0:
        raise RuntimeError("spin: a port-selection scheme was called before its entry was "
                           "loaded")
    sw = st.dev[dev, S.D_SW]
    cur = st.cur
    b = cur[S.CUR_LB_CALL:]
    b[SB_NOW] = now
    b[SB_SWITCH] = sw
    b[SB_GROUP] = group
    b[SB_DST] = get_be(st.pool[slot], IP_DST_OFF + 1, 3)   # a node's address: 10.x.y.z
    b[SB_SEED] = st.dev[dev, S.D_SW_SEED]
    b[SB_N_PORTS] = st.dev[dev, S.D_NPORTS]
    b[SB_PORTS] = address_of(st.rport) + first * st.rport.itemsize
    b[SB_PORTS + 1] = count
    b[SB_PORT_ROWS] = address_of(st.port) + st.dev[dev, S.D_PORT0] * st.port.shape[1] * _WORD
    entries = st.lb_table.shape[1] if sw < st.lb_table.shape[0] else 0
    b[SB_MEMORY] = address_of(st.lb_table) + sw * entries * S.LB_WORDS * _WORD
    b[SB_MEMORY + 1] = entries
    b[SB_RNG] = address_of(st.dev) + (dev * st.dev.shape[1] + S.D_SW_RNG) * _WORD
    b[SB_FRAME] = address_of(st.pool) + slot * st.pool.shape[1]
    b[SB_FRAME + 1] = min(st.slot_meta[slot, S.SM_LEN], st.pool.shape[1])
    cur[S.CUR_LB_RUNNING] = index + 1
    cur[S.CUR_LB_DEV] = dev
    cur[S.CUR_LB_SLOT] = slot
    port = invoke_entry(entry, address_of(b))
    cur[S.CUR_LB_ANSWER] = port
    for i in range(count):
        if st.rport[first + i] == port:
            cur[S.CUR_LB_RUNNING] = 0
            return port
    raise ValueError("the scheme returned a port that is not one of view.ports, the route "
                     "group's ports towards the frame's destination")
