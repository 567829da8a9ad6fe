"""Flowlet switching (CONGA, LetFlow): a flow keeps its port while its packets follow each other
closely; after an idle gap longer than ``SwitchConfig.flowlet_gap_ns`` the next packet starts a
new flowlet, which may take another port without reordering the flow, as long as the gap
exceeds the delay difference between the paths.

The new flowlet's port is the least-loaded of the group (bytes queued, as CONGA decides with
congestion; LetFlow picks at random). The table is indexed by the flow hash
(``FLOWLET_TABLE_ENTRIES`` entries per switch), so two flows may share an entry, as in
hardware; an entry also remembers its route group, so a route change after a failure starts a
new flowlet.
"""

from spin.engine import state as S

from .common import DOWN_LOAD, least_loaded, port_load
from .ecmp import flow_hash
from .registry import PortScheme
from spin.jit import njit

FLOWLET_TABLE_ENTRIES = 4096   # per switch, indexed by flow hash (a power of two)

LAST_SEEN = 0   # words of an lb_table entry: last packet's time (ps),
GROUP = 1       # route group + 1 (0: empty entry),
PORT = 2        # local port of the current flowlet


@njit(cache=True, _nrt=False)
def flowlet_port(st, dev, slot, group, first, count, now):
    h = flow_hash(st.pool[slot], st.dev[dev, S.D_SW_SEED])
    entry = st.lb_table[st.dev[dev, S.D_SW], h & (st.lb_table.shape[1] - 1)]
    idle = now - entry[LAST_SEEN]
    if entry[GROUP] != group + 1 or idle > st.dev[dev, S.D_SW_FLOWLET_GAP_PS] \
            or port_load(st, dev, entry[PORT]) == DOWN_LOAD:
        entry[PORT] = least_loaded(st, dev, first, count, h)
        entry[GROUP] = group + 1
        st.dev[dev, S.D_SW_FLOWLETS] += 1
    entry[LAST_SEEN] = now
    return entry[PORT]


SCHEME = PortScheme(name="flowlet", select=flowlet_port,
                    table_entries=lambda n_route_groups: FLOWLET_TABLE_ENTRIES,
                    summary="flowlet switching: a flow changes path (to the least-loaded port) "
                    "after an idle gap of flowlet_gap_ns")
