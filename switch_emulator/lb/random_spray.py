"""Random packet spraying (RPS; Dixit et al., "On the Impact of Packet Spraying in Data Center
Networks", INFOCOM 2013): every packet to a port drawn uniformly at random from the equal-cost
group, whatever its flow and the queues. Oblivious and stateless: it needs no load information,
spreads any traffic evenly on average on symmetric fabrics, and reorders a flow's packets. The
draw is the switch's own generator (``common.next_random``), so runs repeat exactly for any
worker count."""

from .common import next_random
from .registry import PortScheme
from spin.jit import njit


@njit(cache=True, _nrt=False)
def random_spray_port(st, dev, slot, group, first, count, now):
    return st.rport[first + next_random(st, dev) % count]


SCHEME = PortScheme(name="random_spray", select=random_spray_port, per_packet=True,
                    summary="random packet spraying (RPS): every packet to a uniformly random "
                    "equal-cost port")
