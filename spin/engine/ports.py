"""Output ports: a FIFO per port drained at link rate, then the link's propagation delay.

Store-and-forward: a frame reaches the peer when its last bit arrives, i.e. serialisation plus
propagation after transmission starts. Frames for a device on another worker go to the outbox
with their arrival time and event key, so the receiving worker orders them exactly as a local
arrival would be ordered.
"""
import numba as nb
import numpy as np

from .. import drops as D
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES
from . import state as S
from .heap import push_event
from .heap import push_event_keyed as _push_keyed
from .pool import alloc_slot as _alloc
from .pool import ICRC_EXTERNAL, copy_bytes, ensure_icrc, free_slot

# preamble+SFD, inter-frame gap and FCS are on the wire but not in the frame bytes
WIRE_OVERHEAD = ETHERNET_WIRE_OVERHEAD_BYTES


@nb.njit(cache=True, inline="always", _nrt=False)
def serialization_ps(nbytes, rate_gbps):
    return (np.int64(nbytes) * 8000 + rate_gbps - 1) // rate_gbps


@nb.njit(cache=True, _nrt=False)
def next_key(st, dev):
    seq = st.dev[dev, S.D_SEQ]
    st.dev[dev, S.D_SEQ] = seq + 1
    return (np.int64(dev) << 40) | seq


@nb.njit(cache=True, _nrt=False)
def enqueue_frame(st, gp, slot, now):
    """Append a frame to an output queue; tail-drop when the port buffer is full."""
    n = st.port[gp, S.PT_Q_N]
    qcap = st.port_q.shape[1]
    length = st.slot_len[slot]
    if n >= qcap or st.port[gp, S.PT_Q_BYTES] + length > st.port[gp, S.PT_Q_LIMIT_BYTES]:
        st.drops[st.port[gp, S.PT_DEV], D.QUEUE_FULL] += 1
        st.port[gp, S.PT_DROPS] += 1
        free_slot(st, slot)
        return False
    st.port_q[gp, (st.port[gp, S.PT_Q_HEAD] + n) % qcap] = slot
    st.port[gp, S.PT_Q_N] = n + 1
    qb = st.port[gp, S.PT_Q_BYTES] + length
    st.port[gp, S.PT_Q_BYTES] = qb
    if qb > st.port[gp, S.PT_MAX_Q_BYTES]:
        st.port[gp, S.PT_MAX_Q_BYTES] = qb
    if st.port[gp, S.PT_BUSY] == 0:
        start_tx(st, gp, now)
    return True


@nb.njit(cache=True, _nrt=False)
def start_tx(st, gp, now):
    slot = st.port_q[gp, st.port[gp, S.PT_Q_HEAD]]
    length = st.slot_len[slot]
    ser = serialization_ps(length + WIRE_OVERHEAD, st.port[gp, S.PT_RATE_GBPS])
    st.port[gp, S.PT_BUSY] = 1
    st.port[gp, S.PT_BUSY_PS] += ser
    if st.port[gp, S.PT_CAPTURE] != 0:
        capture_frame(st, gp, slot, now)
    push_event(st, now + ser, st.port[gp, S.PT_DEV], S.EV_TX_DONE, st.port[gp, S.PT_DEV], gp, 0)


@nb.njit(cache=True, _nrt=False)
def capture_frame(st, gp, slot, now):
    sc = st.sc
    k = sc[S.SC_CAP_N]
    length = st.slot_len[slot]
    st.cap[k, S.C_TIME] = now
    st.cap[k, S.C_PORT] = gp
    st.cap[k, S.C_LEN] = length
    ensure_icrc(st, slot)
    copy_bytes(st.cap_frames[k], 0, st.pool[slot], 0, length)
    sc[S.SC_CAP_N] = k + 1


@nb.njit(cache=True, _nrt=False)
def tx_done(st, gp, now):
    """The head frame left the port: hand it to the link, then start the next one."""
    qcap = st.port_q.shape[1]
    head = st.port[gp, S.PT_Q_HEAD]
    slot = st.port_q[gp, head]
    length = st.slot_len[slot]
    st.port[gp, S.PT_Q_HEAD] = (head + 1) % qcap
    st.port[gp, S.PT_Q_N] -= 1
    st.port[gp, S.PT_Q_BYTES] -= length
    st.port[gp, S.PT_TX_FRAMES] += 1
    st.port[gp, S.PT_TX_BYTES] += length
    peer = st.port[gp, S.PT_PEER]
    dev = st.port[gp, S.PT_DEV]
    arrival = now + st.port[gp, S.PT_LAT_PS]
    if peer < 0:
        st.drops[dev, D.NO_ROUTE] += 1
        free_slot(st, slot)
    elif st.port[gp, S.PT_REMOTE] != 0:
        sc = st.sc
        k = sc[S.SC_OUT_N]
        st.out[k, S.O_TIME] = arrival
        st.out[k, S.O_PORT] = peer
        st.out[k, S.O_KEY] = next_key(st, dev)
        st.out[k, S.O_LEN] = length
        ensure_icrc(st, slot)
        copy_bytes(st.out_frames[k], 0, st.pool[slot], 0, length)
        sc[S.SC_OUT_N] = k + 1
        free_slot(st, slot)
    else:
        push_event(st, arrival, dev, S.EV_ARRIVE, st.port[peer, S.PT_DEV], peer, slot)
    if st.port[gp, S.PT_Q_N] > 0:
        start_tx(st, gp, now)
    else:
        st.port[gp, S.PT_BUSY] = 0


@nb.njit(cache=True, _nrt=False)
def inject_frames(st, times, ports, keys, lengths, frames):
    """Queue frames that arrived from another worker (or a test) as arrival events at their
    ingress ports; the sender's event key keeps the order identical to a local delivery."""
    for i in range(times.shape[0]):
        slot = _alloc(st)
        copy_bytes(st.pool[slot], 0, frames[i], 0, lengths[i])
        st.slot_len[slot] = lengths[i]
        st.slot_trusted[slot] = ICRC_EXTERNAL  # came from outside this engine: verify its ICRC
        gp = ports[i]
        _push_keyed(st, times[i], keys[i], S.EV_ARRIVE, st.port[gp, S.PT_DEV], gp, slot)
