"""Fabric-wide control actions at a virtual time: link down/up, degraded rate, optical
re-shape (ports re-paired) and the switch to routing tables computed for the new topology.

Every worker applies every control row at the same virtual time with the same event key, so
port state (and therefore results) is identical for any number of workers.
"""

from . import state as S
from .ports import BUSY_IDLE, port_down, start_tx
from spin.jit import njit


@njit(cache=True, _nrt=False)
def apply_control(st, row, now):
    c = st.ctl[row]
    kind = c[S.CTL_KIND]
    a = c[S.CTL_A]
    b = c[S.CTL_B]
    if kind == S.CTL_LINK_DOWN:
        port_down(st, a, now)
        port_down(st, b, now)
    elif kind == S.CTL_LINK_UP:
        for gp in (a, b):
            st.port[gp, S.PT_UP] = 1
            if st.port[gp, S.PT_BUSY] == BUSY_IDLE:
                start_tx(st, gp, now)
    elif kind == S.CTL_SET_RATE:
        st.port[a, S.PT_RATE_GBPS] = c[S.CTL_C]
        st.port[b, S.PT_RATE_GBPS] = c[S.CTL_C]
    elif kind == S.CTL_SET_PEER:
        st.port[a, S.PT_PEER] = b
        st.port[a, S.PT_PEER_DEV] = st.port[b, S.PT_DEV]
        st.port[a, S.PT_REMOTE] = 0 if st.dev[st.port[b, S.PT_DEV], S.D_LOCAL] != 0 else 1
    elif kind == S.CTL_ROUTE_EPOCH:
        st.sc[S.SC_ROUTE_EPOCH] = a
