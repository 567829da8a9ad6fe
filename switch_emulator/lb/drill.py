"""DRILL (Ghorbani et al., SIGCOMM'17): per packet, compare the queues of two ports drawn at
random from the group and of the port that was best last time for this group (power of two
choices with one unit of memory, d = 2, m = 1), take the least loaded and remember it.
Sampling instead of scanning every port keeps the decision cheap at high radix and avoids the
herd effect of all packets rushing to the one emptiest queue."""

from spin.engine import state as S

from .common import next_random, port_load
from .registry import PortScheme
from spin.jit import njit

BEST = 0   # word of an lb_table entry (one per route group): last best local port + 1 (0: none)


@njit(cache=True, _nrt=False)
def drill_port(st, dev, slot, group, first, count, now):
    memory = st.lb_table[st.dev[dev, S.D_SW], group]
    best = st.rport[first + next_random(st, dev) % count]
    best_load = port_load(st, dev, best)
    other = st.rport[first + next_random(st, dev) % count]
    load = port_load(st, dev, other)
    if load < best_load:
        best, best_load = other, load
    if memory[BEST] > 0:
        last = memory[BEST] - 1
        if port_load(st, dev, last) < best_load:
            best = last
    memory[BEST] = best + 1
    return best


SCHEME = PortScheme(name="drill", select=drill_port, per_packet=True,
                    table_entries=lambda n_route_groups: n_route_groups,   # one per route group
                    summary="DRILL: every packet to the less loaded of two random ports and the "
                    "last best")
