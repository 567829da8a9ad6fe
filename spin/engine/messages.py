"""The receive-message table shared by NICs and switches: one row per message in flight at a
device, found by a connection key, plus the execution-context match over real header fields.

A NIC keys messages by (NIC, source, QP); a switch by (switch, source, destination, QP), since
it sees many connections' packets. Both keys share one hash map; switch keys set bit 62 so they
never meet NIC keys.
"""
import numpy as np

from . import state as S
from .freelist import give_free, take_free
from .hashmap import map_delete, map_get
from spin.jit import njit

SWITCH_KEY_BIT = np.int64(1) << 62


@njit(cache=True, inline="always", _nrt=False)
def switch_flow_key(dev, src, dst, qp, n_nodes, max_qp):
    """Injective while (dev, src, dst, qp) fit the sizes checked when the state was built."""
    return SWITCH_KEY_BIT | (((np.int64(dev) * n_nodes + src) * n_nodes + dst) * max_qp + qp)


@njit(cache=True, _nrt=False)
def match_ec(st, dev, src, dst, qp, rkey, udp_dport, hdr_type):
    """First execution context of ``dev`` (installation order) whose set fields all match."""
    first = st.dev[dev, S.D_EC_FIRST]
    for e in range(first, first + st.dev[dev, S.D_EC_COUNT]):
        r = st.ec[e]
        if (r[S.EC_MATCH_QP] < 0 or r[S.EC_MATCH_QP] == qp) \
                and (r[S.EC_MATCH_RKEY] < 0 or r[S.EC_MATCH_RKEY] == rkey) \
                and (r[S.EC_MATCH_SRC] < 0 or r[S.EC_MATCH_SRC] == src) \
                and (r[S.EC_MATCH_DST] < 0 or r[S.EC_MATCH_DST] == dst) \
                and (r[S.EC_MATCH_UDP_DPORT] < 0 or r[S.EC_MATCH_UDP_DPORT] == udp_dport) \
                and (r[S.EC_MATCH_HDR_TYPE] < 0 or r[S.EC_MATCH_HDR_TYPE] == hdr_type):
            return e
    return -1


@njit(cache=True, _nrt=False)
def expire_stale(st, dev, now):
    """Evict the incomplete messages (of ``dev``, or of any device with -1) whose last packet is
    older than the message timeout: their missing packets are not coming, and each holds a row
    and a slot of its device's message limit. Runs only when a table is full. Returns how many
    rows it freed."""
    timeout = st.sc[S.SC_MSG_TIMEOUT_PS]
    freed = 0
    for m in range(st.msg.shape[0]):
        row = st.msg[m]
        if row[S.M_ACTIVE] == 0 or (dev >= 0 and row[S.M_DEV] != dev):
            continue
        if row[S.M_SEEN] >= row[S.M_NPKTS] or now - row[S.M_LAST_T] < timeout:
            continue   # complete (its completion is scheduled) or still receiving
        if row[S.M_KEY] >= 0:
            map_delete(st.rx_keys, st.rx_vals, row[S.M_KEY])
        st.dev[row[S.M_DEV], S.D_MSGS_EXPIRED] += 1
        free_message(st, m)
        freed += 1
    return freed


@njit(cache=True, _nrt=False)
def has_message_room(st, dev, now):
    """True when ``dev`` may open one more message (evicting stale ones if it must)."""
    if st.dev[dev, S.D_MSGS_ACTIVE] < st.dev[dev, S.D_MAX_MSGS] and st.sc[S.SC_MSG_FREE_TOP] > 0:
        return True
    expire_stale(st, dev if st.sc[S.SC_MSG_FREE_TOP] > 0 else -1, now)
    return st.dev[dev, S.D_MSGS_ACTIVE] < st.dev[dev, S.D_MAX_MSGS] and st.sc[S.SC_MSG_FREE_TOP] > 0


@njit(cache=True, _nrt=False)
def make_room_for(st, dev, key, now):
    """A FIRST packet opens a message on connection ``key``: a previous message still open on it
    never completed (its packets were lost) and is abandoned (counted). True when ``dev`` may
    open one more message."""
    old = map_get(st.rx_keys, st.rx_vals, key)
    if old >= 0:
        st.dev[dev, S.D_MSGS_ABANDONED] += 1
        map_delete(st.rx_keys, st.rx_vals, key)
        free_message(st, old)
    return has_message_room(st, dev, now)


@njit(cache=True, _nrt=False)
def new_message(st, dev, src, qp, first_psn, npkts, va, rkey, length, ec, now, key):
    m = take_free(st.sc, S.SC_MSG_FREE_TOP, st.msg_free)
    if m < 0:
        raise MemoryError("spin engine: receive message table exhausted (raise EngineConfig.max_rx_messages)")
    row = st.msg[m]
    row[S.M_KEY] = key
    row[S.M_LAST_T] = now
    row[S.M_ACTIVE] = 1
    row[S.M_DEV] = dev
    row[S.M_SRC] = src
    row[S.M_QP] = qp
    row[S.M_FIRST_PSN] = first_psn
    row[S.M_NPKTS] = npkts
    row[S.M_SEEN] = 0
    row[S.M_VA] = va
    row[S.M_RKEY] = rkey
    row[S.M_LEN] = length
    row[S.M_HDR_END] = now
    row[S.M_PL_END] = now
    row[S.M_DMA_END] = now
    row[S.M_LAST_READY] = now
    row[S.M_FLAGS] = 0
    row[S.M_T_FIRST] = now
    row[S.M_EC] = ec
    for i in range(S.MSG_STATE_WORDS):
        st.msg_state[m, i] = 0
    st.dev[dev, S.D_MSGS_ACTIVE] += 1
    return m


@njit(cache=True, _nrt=False)
def free_message(st, m):
    st.msg[m, S.M_ACTIVE] = 0
    st.dev[st.msg[m, S.M_DEV], S.D_MSGS_ACTIVE] -= 1
    give_free(st.sc, S.SC_MSG_FREE_TOP, st.msg_free, m)
