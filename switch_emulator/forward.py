"""Destination-based forwarding: read the IPv4 destination, look up the output port, enqueue
after the pipeline latency. Frames that are not IPv4 or have no route are dropped and counted."""
import numba as nb

from spin import drops as D
from spin.engine import state as S
from spin.engine.heap import push_event
from spin.engine.pool import free_slot

ETH_TYPE_OFF = 12
IP_DST_OFF = 30
MIN_FRAME = 34


@nb.njit(cache=True, _nrt=False)
def switch_receive(st, dev, in_port, slot, now):
    frame = st.pool[slot]
    length = st.slot_len[slot]
    if length < MIN_FRAME:
        st.drops[dev, D.TRUNCATED] += 1
        free_slot(st, slot)
        return
    if frame[ETH_TYPE_OFF] != 0x08 or frame[ETH_TYPE_OFF + 1] != 0x00 or (frame[14] >> 4) != 4:
        st.drops[dev, D.NOT_IPV4] += 1
        free_slot(st, slot)
        return
    dst = (int(frame[IP_DST_OFF + 1]) << 16) | (int(frame[IP_DST_OFF + 2]) << 8) \
        | int(frame[IP_DST_OFF + 3])
    port = -1
    if dst < st.route.shape[1]:
        port = st.route[st.dev[dev, S.D_SW], dst]
    if port < 0:
        st.drops[dev, D.NO_ROUTE] += 1
        free_slot(st, slot)
        return
    push_event(st, now + st.dev[dev, S.D_SW_LAT_PS], dev, S.EV_ENQUEUE, dev, st.dev[dev, S.D_PORT0] + port, slot)
