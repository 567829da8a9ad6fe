"""Switch-local adaptive routing, per packet: the egress port of the group with the fewest bytes
queued, as InfiniBand and Slingshot switches choose among candidate ports by queue depth.
Packets of one flow may take different paths and arrive out of order; ties are broken from a
pseudo-random starting point so that idle ports share the traffic."""

from .common import least_loaded, next_random
from .registry import PortScheme
from spin.jit import njit


@njit(cache=True, _nrt=False)
def adaptive_port(st, dev, slot, group, first, count, now):
    return least_loaded(st, dev, first, count, next_random(st, dev) % count)


SCHEME = PortScheme(name="adaptive", select=adaptive_port, per_packet=True,
                    summary="switch-local adaptive routing: every packet to the least-loaded "
                    "equal-cost port")
