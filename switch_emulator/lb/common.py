"""What port-selection schemes share: the load of an egress port, the least-loaded port of a
group, and a per-switch pseudo-random generator."""
import numpy as np

from spin.engine import state as S
from spin.jit import njit

DOWN_LOAD = np.int64(1) << 62   # a port whose link is down is never the least loaded


@njit(cache=True, inline="always", _nrt=False)
def port_load(st, dev, local_port):
    """Bytes queued at an egress port (data and priority queues): the congestion a switch sees
    locally. A failed link counts as infinitely loaded (the switch knows its own links)."""
    gp = st.dev[dev, S.D_PORT0] + local_port
    if st.port[gp, S.PT_UP] == 0:
        return DOWN_LOAD
    return st.port[gp, S.PT_Q_BYTES] + st.port[gp, S.PT_PQ_BYTES]


@njit(cache=True, _nrt=False)
def least_loaded(st, dev, first, count, start):
    """The local port of the group with the fewest queued bytes; ties go to the first one found
    scanning from index ``start`` (callers vary it, so ties do not all land on one port)."""
    best = st.rport[first + start % count]
    best_load = port_load(st, dev, best)
    for i in range(1, count):
        p = st.rport[first + (start + i) % count]
        load = port_load(st, dev, p)
        if load < best_load:
            best, best_load = p, load
    return best


@njit(cache=True, inline="always", _nrt=False)
def next_random(st, dev):
    """The switch's next pseudo-random number (xorshift64, Marsaglia 2003), 63 bits. The state
    is seeded per switch from ``SwitchConfig.ecmp_seed`` and advances only with the frames the
    switch forwards, so runs are reproducible for any worker count."""
    x = st.dev[dev, S.D_SW_RNG]
    x ^= x << 13
    x ^= (x >> 7) & 0x01FFFFFFFFFFFFFF     # logical shift on a signed word
    x ^= x << 17
    st.dev[dev, S.D_SW_RNG] = x
    return x & 0x7FFFFFFFFFFFFFFF
