"""Per-flow ECMP: a hash of the 5-tuple picks the port, so every packet of a flow takes the same
path and arrives in order. Flows that hash alike share a path (collide) whatever the load; a
sender that varies the UDP source port (the entropy value) per packet sprays over all paths."""
from spin.engine import state as S
from spin.jit import njit
from spin.wire.flow_hash import flow_hash

from .registry import PortScheme

__all__ = ["SCHEME", "ecmp_port", "flow_hash"]


@njit(cache=True, inline="always", _nrt=False)
def ecmp_port(st, dev, slot, group, first, count, now):
    return st.rport[first + flow_hash(st.pool[slot], st.dev[dev, S.D_SW_SEED]) % count]


SCHEME = PortScheme(name="ecmp", select=ecmp_port,
                    summary="per-flow ECMP: a hash of the 5-tuple, one path per flow")
