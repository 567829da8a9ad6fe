"""Output ports: a data FIFO and a priority FIFO per port, drained at link rate, then the link's
propagation delay.

Store-and-forward: a frame reaches the peer when its last bit arrives, i.e. serialisation plus
propagation after transmission starts. The priority FIFO (header-only frames: ACK/NACK, CNP,
trimmed headers; PFC frames) always goes first and is never paused, so acknowledgements are not
tail-dropped behind data (htsim's composite queue, Ultra Ethernet 1.0). Data frames are
ECN-marked, at enqueue or when they start transmission (htsim marks at dequeue), either on a
step at one threshold or RED-like with a probability rising linearly between two; on a full
buffer they are trimmed (switches with trimming on) or tail-dropped. Frames for a device on
another worker go to the outbox with their arrival time and event key, so the receiving worker
orders them exactly as a local arrival would be ordered.

Arrival times include the receiving switch's pipeline latency: a switch acts on a frame when it
leaves its ingress pipeline, which saves one event per hop.
"""
import numpy as np

from ..wire import drops as D
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES
from ..wire.ip_edit import (PAUSE_QUANTUM_BITS, dscp_of, is_header_only, mark_ce,
                            trim_roce_frame, write_pfc_frame)
from . import state as S
from .heap import push_event
from .heap import push_event_keyed as _push_keyed
from .pool import (ICRC_EXTERNAL, ICRC_PENDING, alloc_slot, copy_bytes, ensure_icrc, free_slot,
                   slot_bytes_for_mtu)
from .state_ref import state_ref
from .tracing import TRACE_LINKS, TRK_LINK, trace_row
from spin.jit import njit

# preamble+SFD, inter-frame gap and FCS are on the wire but not in the frame bytes
WIRE_OVERHEAD = ETHERNET_WIRE_OVERHEAD_BYTES

BUSY_IDLE = 0
BUSY_DATA = 1
BUSY_PRIORITY = 2


@njit(cache=True, inline="always", _nrt=False)
def serialization_ps(nbytes, rate_gbps):
    return (np.int64(nbytes) * 8000 + rate_gbps - 1) // rate_gbps


@njit(cache=True, _nrt=False)
def next_key(st, dev):
    seq = st.dev[dev, S.D_SEQ]
    st.dev[dev, S.D_SEQ] = seq + 1
    return (np.int64(dev) << 40) | seq


@njit(cache=True, inline="always", _nrt=False)
def _account_queue(st, gp, now, delta):
    """Keep the time integral of the data-queue occupancy (byte*ns) and its maximum."""
    last = st.port[gp, S.PT_Q_LAST_T]
    if now > last:
        st.port[gp, S.PT_Q_AREA] += (st.port[gp, S.PT_Q_BYTES] * (now - last)) // 1000
        st.port[gp, S.PT_Q_LAST_T] = now
    qb = st.port[gp, S.PT_Q_BYTES] + delta
    st.port[gp, S.PT_Q_BYTES] = qb
    if qb > st.port[gp, S.PT_MAX_Q_BYTES]:
        st.port[gp, S.PT_MAX_Q_BYTES] = qb


@njit(cache=True, _nrt=False)
def arrival_delay_ps(st, gp):
    """Propagation delay of the link out of ``gp`` plus the receiving switch's pipeline, summed
    when the state is built (``state_builder``): reading the peer's device row on every hop
    was one more cache miss per frame."""
    return st.port[gp, S.PT_LAT_PS]


@njit(cache=True, _nrt=False)
def enqueue_frame(st, gp, slot, now):
    """Append a data frame to an output queue: ECN-mark above the threshold; on a full buffer,
    trim (when the device trims) or tail-drop. Returns True if the frame was queued."""
    dev = st.port[gp, S.PT_DEV]
    if st.port[gp, S.PT_UP] == 0:
        st.drops[dev, D.LINK_DOWN] += 1
        st.port[gp, S.PT_DROPS] += 1
        free_slot(st, slot)
        return False
    length = st.slot_meta[slot, S.SM_LEN]
    if st.port[gp, S.PT_HDR_PRIO] != 0 and _header_only(st, gp, slot, length):
        _release_ingress(st, slot, now)
        enqueue_priority(st, gp, slot, now)
        return True
    n = st.port[gp, S.PT_Q_N]
    qcap = ring_capacity(st.port_q)
    if n >= qcap or st.port[gp, S.PT_Q_BYTES] + length > st.port[gp, S.PT_Q_LIMIT_BYTES]:
        trim_dscp = st.port[gp, S.PT_TRIM_DSCP]
        if trim_dscp >= 0:
            frame = st.pool[slot]
            new_len = trim_roce_frame(frame, length, trim_dscp)
            if new_len > 0:
                st.slot_meta[slot, S.SM_LEN] = new_len
                st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING
                st.port[gp, S.PT_TRIMS] += 1
                _release_ingress(st, slot, now)
                enqueue_priority(st, gp, slot, now)
                return False
        st.drops[dev, D.QUEUE_FULL] += 1
        st.port[gp, S.PT_DROPS] += 1
        _release_ingress(st, slot, now)
        free_slot(st, slot)
        return False
    if st.port[gp, S.PT_ECN_DEQUEUE] == 0 and _ecn_decide(st, gp, st.port[gp, S.PT_Q_BYTES]):
        if mark_ce(st.pool[slot]):
            st.port[gp, S.PT_ECN_MARKS] += 1
    ring_put(st.port_q, gp, (st.port[gp, S.PT_Q_HEAD] + n) % qcap, slot)
    st.port[gp, S.PT_Q_N] = n + 1
    _account_queue(st, gp, now, length)
    busy = st.port[gp, S.PT_BUSY]
    if busy == BUSY_IDLE:
        start_tx(st, gp, now)
    elif busy == BUSY_DATA and n == 1:
        # queued right behind the frame on the wire: its tx-done will start this one, so its
        # prefetch hint names it (a store only: the event row need not be read)
        st.ev[st.port[gp, S.PT_TX_EVENT], S.E_HINT_AFTER] = np.int64(slot) + 1
    return True


@njit(cache=True, _nrt=False)
def _header_only(st, gp, slot, length):
    """A frame without payload to protect: a transport control frame, or a header another
    switch trimmed (it carries the trimmed-frame DSCP of a port that trims)."""
    frame = st.pool[slot]
    if is_header_only(frame, length):
        return True
    trim_dscp = st.port[gp, S.PT_TRIM_DSCP]
    return trim_dscp >= 0 and dscp_of(frame) == trim_dscp


@njit(cache=True, _nrt=False)
def _ecn_decide(st, gp, qbytes):
    """Mark with ``qbytes`` queued? Step marking at or above the lower threshold when no upper
    one is set (DCTCP's K); otherwise RED-like as htsim's composite queue: never at or below
    the lower threshold, always above the upper, in between with a probability rising linearly,
    drawn from the port's own xorshift32 generator (deterministic for any worker count)."""
    low = st.port[gp, S.PT_ECN_THRESH]
    if low <= 0:
        return False
    high = st.port[gp, S.PT_ECN_HIGH]
    if high <= low:
        return qbytes >= low
    if qbytes > high:
        return True
    if qbytes <= low:
        return False
    x = st.port[gp, S.PT_ECN_RNG]
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    st.port[gp, S.PT_ECN_RNG] = x
    return x < ((qbytes - low) << 32) // (high - low)


@njit(cache=True, _nrt=False)
def enqueue_priority(st, gp, slot, now):
    """Queue a frame ahead of all data (trimmed headers, PFC frames); never paused."""
    dev = st.port[gp, S.PT_DEV]
    n = st.port[gp, S.PT_PQ_N]
    qcap = ring_capacity(st.port_pq)
    if st.port[gp, S.PT_UP] == 0 or n >= qcap:
        st.drops[dev, D.LINK_DOWN if st.port[gp, S.PT_UP] == 0 else D.PRIORITY_QUEUE_FULL] += 1
        st.port[gp, S.PT_DROPS] += 1
        free_slot(st, slot)
        return
    ring_put(st.port_pq, gp, (st.port[gp, S.PT_PQ_HEAD] + n) % qcap, slot)
    st.port[gp, S.PT_PQ_N] = n + 1
    st.port[gp, S.PT_PQ_BYTES] += st.slot_meta[slot, S.SM_LEN]
    if st.port[gp, S.PT_BUSY] == BUSY_IDLE:
        start_tx(st, gp, now)


@njit(cache=True, _nrt=False)
def start_tx(st, gp, now):
    """Start the next frame: priority first; data unless the peer paused this port."""
    if st.port[gp, S.PT_UP] == 0:
        st.port[gp, S.PT_BUSY] = BUSY_IDLE
        return
    pos = -1         # the frame's data ring position, and the data frame after it + 1
    after = 0        # (prefetch hints of its EV_TX_DONE: spin.engine.prefetch)
    if st.port[gp, S.PT_PQ_N] > 0:
        slot = ring_get(st.port_pq, gp, st.port[gp, S.PT_PQ_HEAD])
        st.port[gp, S.PT_BUSY] = BUSY_PRIORITY
    elif st.port[gp, S.PT_Q_N] > 0:
        until = st.port[gp, S.PT_PAUSED_UNTIL]
        if now < until:
            st.port[gp, S.PT_BUSY] = BUSY_IDLE
            if st.port[gp, S.PT_BLOCKED_SINCE] < 0:
                st.port[gp, S.PT_BLOCKED_SINCE] = now      # for the PFC watchdog
            if st.port[gp, S.PT_RESUME_SCHED] == 0:
                st.port[gp, S.PT_RESUME_SCHED] = 1
                dev = st.port[gp, S.PT_DEV]
                push_event(st, until, dev, S.EV_PORT_RESUME, dev, gp, 0)
            return
        st.port[gp, S.PT_BLOCKED_SINCE] = -1
        pos = st.port[gp, S.PT_Q_HEAD]
        slot = ring_get(st.port_q, gp, pos)
        if st.port[gp, S.PT_Q_N] > 1:
            after = np.int64(ring_get(st.port_q, gp, _ring_next(pos, ring_capacity(st.port_q)))) + 1
        st.port[gp, S.PT_BUSY] = BUSY_DATA
        if st.port[gp, S.PT_ECN_DEQUEUE] != 0 and _ecn_decide(
                st, gp, st.port[gp, S.PT_Q_BYTES] - st.slot_meta[slot, S.SM_LEN]):
            if mark_ce(st.pool[slot]):
                st.port[gp, S.PT_ECN_MARKS] += 1
    else:
        st.port[gp, S.PT_BUSY] = BUSY_IDLE
        return
    length = st.slot_meta[slot, S.SM_LEN]
    ser = serialization_ps(length + WIRE_OVERHEAD, st.port[gp, S.PT_RATE_GBPS])
    st.port[gp, S.PT_BUSY_PS] += ser
    if st.port[gp, S.PT_CAPTURE] != 0:
        capture_frame(st, gp, slot, now)
    if st.sc[S.SC_TRACE] & TRACE_LINKS:
        trace_row(st, TRK_LINK, st.port[gp, S.PT_DEV], now, now + ser, gp, length,
                  1 if st.port[gp, S.PT_BUSY] == BUSY_PRIORITY else 0, 0, 0, 0, 0)
    eid = push_event(st, now + ser, st.port[gp, S.PT_DEV], S.EV_TX_DONE, st.port[gp, S.PT_DEV],
                     gp, st.port[gp, S.PT_GEN])
    st.ev[eid, S.E_HINT] = np.int64(slot) | ((pos + 1) << 32)
    st.ev[eid, S.E_HINT_AFTER] = after
    st.port[gp, S.PT_TX_EVENT] = eid


@njit(cache=True, _nrt=False)
def _pfc_watchdog(st, gp, now):
    """Checked whenever a paused port's resume event comes due (at least once per pause time):
    if data has waited on ``gp`` behind pauses for longer than the switch's PFC watchdog, take
    it for a deadlock (a cycle of paused ports never clears by itself): drop the queued data
    frames, lift the pause and ignore pauses for as long again."""
    since = st.port[gp, S.PT_BLOCKED_SINCE]
    if since < 0 or st.port[gp, S.PT_Q_N] == 0 or now >= st.port[gp, S.PT_PAUSED_UNTIL]:
        return
    dev = st.port[gp, S.PT_DEV]
    watchdog = st.port[gp, S.PT_PFC_WATCHDOG_PS]
    if watchdog <= 0 or now - since < watchdog:
        return
    dropped = _flush_data(st, gp, now)
    st.drops[dev, D.PFC_WATCHDOG] += dropped
    st.port[gp, S.PT_DROPS] += dropped
    st.port[gp, S.PT_PAUSED_UNTIL] = 0
    st.port[gp, S.PT_BLOCKED_SINCE] = -1
    st.port[gp, S.PT_IGNORE_PAUSE_UNTIL] = now + watchdog


@njit(cache=True, inline="always", _nrt=False)
def ring_capacity(ring):
    """Frames a port's ring holds (``st.port_q``, ``st.port_pq``: see ``ring_get``)."""
    return ring.shape[0] * S.RING_LINE


@njit(cache=True, inline="always", _nrt=False)
def ring_get(ring, gp, i):
    """Entry ``i`` of port ``gp``'s ring. The rings of all ports are interleaved by lines of
    ``RING_LINE`` entries, ``ring[i // RING_LINE, gp, i % RING_LINE]``: a port's consecutive
    entries share a cache line as in a row per port, but the first line of every port's ring
    sits in one contiguous block. With a row per port (4 KiB at 1,024 frames) the heads of all
    rings were 4 KiB apart: every page of the rings was touched (zeroed by the kernel during
    the run: 256 MiB at 8,192 hosts) and the heads fell into the same few cache sets."""
    return ring[i >> S.RING_LINE_SHIFT, gp, i & (S.RING_LINE - 1)]


@njit(cache=True, inline="always", _nrt=False)
def ring_address(ring, gp, i):
    """Address of entry ``i`` of port ``gp``'s ring, for a prefetch (layout: ``ring_get``);
    past the ring's end it is some other line of the same array."""
    line = (i >> S.RING_LINE_SHIFT) * ring.shape[1] + gp
    return np.int64(ring.ctypes.data) + (line * ring.shape[2] + (i & (S.RING_LINE - 1))) \
        * ring.itemsize


@njit(cache=True, inline="always", _nrt=False)
def ring_put(ring, gp, i, slot):
    """Set entry ``i`` of port ``gp``'s ring (layout: ``ring_get``)."""
    ring[i >> S.RING_LINE_SHIFT, gp, i & (S.RING_LINE - 1)] = slot


@njit(cache=True, inline="always", _nrt=False)
def _ring_next(i, capacity):
    """The ring position after ``i``."""
    i += 1
    return 0 if i == capacity else i


@njit(cache=True, inline="always", _nrt=False)
def _next_head(head, left, capacity):
    """A ring's head after a pop that leaves ``left`` entries: back to the start when it is
    empty, so that a port's ring touches only as many entries as it ever held at once (a ring
    that kept going round touched all of its capacity: 134 MB of pages at 8,192 hosts)."""
    if left == 0:
        return 0
    head += 1
    return 0 if head == capacity else head


@njit(cache=True, _nrt=False)
def _pop_data(st, gp, now):
    """Take the head frame off the data queue of ``gp`` (queue accounting and its ingress
    port's PFC bytes released); returns its slot."""
    head = st.port[gp, S.PT_Q_HEAD]
    slot = ring_get(st.port_q, gp, head)
    n = st.port[gp, S.PT_Q_N] - 1
    st.port[gp, S.PT_Q_HEAD] = _next_head(head, n, ring_capacity(st.port_q))
    st.port[gp, S.PT_Q_N] = n
    _account_queue(st, gp, now, -np.int64(st.slot_meta[slot, S.SM_LEN]))
    _release_ingress(st, slot, now)
    return slot


@njit(cache=True, _nrt=False)
def _flush_data(st, gp, now):
    """Drop every frame of the data queue of ``gp``; returns how many (the caller counts them
    under its reason)."""
    n = 0
    while st.port[gp, S.PT_Q_N] > 0:
        free_slot(st, _pop_data(st, gp, now))
        n += 1
    return n


@njit(cache=True, _nrt=False)
def port_resume(st, gp, now):
    """A pause ran out (or was renewed: the watchdog looks): transmit again if idle."""
    st.port[gp, S.PT_RESUME_SCHED] = 0
    _pfc_watchdog(st, gp, now)
    if st.port[gp, S.PT_BUSY] == BUSY_IDLE:
        start_tx(st, gp, now)


@njit(cache=True, _nrt=False)
def capture_frame(st, gp, slot, now):
    sc = st.sc
    k = sc[S.SC_CAP_N]
    length = st.slot_meta[slot, S.SM_LEN]
    st.cap[k, S.CAP_TIME] = now
    st.cap[k, S.CAP_PORT] = gp
    st.cap[k, S.CAP_LEN] = length
    ensure_icrc(st, slot)
    copy_bytes(st.cap_frames[k], 0, st.pool[slot], 0, length)
    sc[S.SC_CAP_N] = k + 1


@njit(cache=True, _nrt=False)
def tx_done(st, gp, gen, now):
    """The head frame left the port: hand it to the link, then start the next one."""
    busy = st.port[gp, S.PT_BUSY]
    if busy == BUSY_IDLE or gen != st.port[gp, S.PT_GEN]:
        return  # the port went down while the frame was on the wire: already flushed
    if busy == BUSY_PRIORITY:
        head = st.port[gp, S.PT_PQ_HEAD]
        slot = ring_get(st.port_pq, gp, head)
        n = st.port[gp, S.PT_PQ_N] - 1
        st.port[gp, S.PT_PQ_HEAD] = _next_head(head, n, ring_capacity(st.port_pq))
        st.port[gp, S.PT_PQ_N] = n
        st.port[gp, S.PT_PQ_BYTES] -= st.slot_meta[slot, S.SM_LEN]
    else:
        slot = _pop_data(st, gp, now)
    length = st.slot_meta[slot, S.SM_LEN]
    st.port[gp, S.PT_TX_FRAMES] += 1
    st.port[gp, S.PT_TX_BYTES] += length
    peer = st.port[gp, S.PT_PEER]
    dev = st.port[gp, S.PT_DEV]
    if st.port[gp, S.PT_LOSS_THRESHOLD] > 0 and _lost(st, gp):
        st.drops[dev, D.RANDOM_LOSS] += 1
        st.port[gp, S.PT_DROPS] += 1
        free_slot(st, slot)
    elif peer < 0:
        st.drops[dev, D.NO_ROUTE] += 1
        free_slot(st, slot)
    else:
        arrival = now + arrival_delay_ps(st, gp)
        if st.port[gp, S.PT_REMOTE] != 0:
            sc = st.sc
            k = sc[S.SC_OUT_N]
            st.out[k, S.O_TIME] = arrival
            st.out[k, S.O_PORT] = peer
            st.out[k, S.O_KEY] = next_key(st, dev)
            st.out[k, S.O_LEN] = length
            ensure_icrc(st, slot)
            # a header slot holds the frame's first bytes only; the rest is generated payload
            copy_bytes(st.out_frames[k], 0, st.pool[slot], 0, min(length, st.pool.shape[1]))
            sc[S.SC_OUT_N] = k + 1
            free_slot(st, slot)
        else:
            push_event(st, arrival, dev, S.EV_ARRIVE, st.port[gp, S.PT_PEER_DEV], peer, slot)
    start_tx(st, gp, now)


@njit(cache=True, _nrt=False)
def _lost(st, gp):
    """Random loss on the link out of ``gp`` (``LinkConfig.loss_rate``): a xorshift32 draw
    from the port's own generator against a threshold of loss_rate * 2^32."""
    x = st.port[gp, S.PT_LOSS_STATE]
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    st.port[gp, S.PT_LOSS_STATE] = x
    return x < st.port[gp, S.PT_LOSS_THRESHOLD]


# --- priority flow control (IEEE 802.1Qbb) ------------------------------------------------------
@njit(cache=True, _nrt=False)
def _send_pfc(st, gp, quanta, now):
    """Send a pause of ``quanta`` (0: resume) out of ``gp``. A pause lasts quanta x 512 bit
    times of the link and then lapses at the peer, so while the port stays above XOFF the pause
    is renewed halfway through (EV_PFC_REFRESH), as 802.1Qbb switches do: at 1.6 Tb/s a full
    pause lasts 21 us, and a lapsed one let the peer refill the queue without bound."""
    slot = alloc_slot(st)
    dev = st.port[gp, S.PT_DEV]
    st.slot_meta[slot, S.SM_LEN] = write_pfc_frame(st.pool[slot], dev, quanta)
    st.port[gp, S.PT_PAUSES_TX] += 1
    enqueue_priority(st, gp, slot, now)
    if quanta > 0:
        st.port[gp, S.PT_XOFF_SENT_AT] = now
        push_event(st, now + _pfc_refresh_ps(st, gp, quanta), dev, S.EV_PFC_REFRESH, dev, gp, 0)


@njit(cache=True, _nrt=False)
def _pfc_refresh_ps(st, gp, quanta):
    """Half the time a pause of ``quanta`` holds the peer of ``gp`` (at least 1 ps)."""
    return max(np.int64(1), np.int64(quanta) * PAUSE_QUANTUM_BITS * 1000
               // st.port[gp, S.PT_RATE_GBPS] // 2)


@njit(cache=True, _nrt=False)
def pfc_refresh(st, gp, now):
    """EV_PFC_REFRESH: renew the pause if the port is still above XOFF and this is the refresh
    of its latest pause (an XON and a new XOFF since then scheduled another)."""
    if st.port[gp, S.PT_XOFF] == 0:
        return
    quanta = st.port[gp, S.PT_PFC_QUANTA]
    if now < st.port[gp, S.PT_XOFF_SENT_AT] + _pfc_refresh_ps(st, gp, quanta):
        return
    _send_pfc(st, gp, quanta, now)


@njit(cache=True, _nrt=False)
def hold_ingress(st, slot, in_gp, now):
    """A switch queued a frame that entered on ``in_gp``: count it against that ingress port and
    pause the upstream sender above the XOFF threshold."""
    xoff = st.port[in_gp, S.PT_PFC_XOFF]
    if xoff <= 0:
        return
    st.slot_meta[slot, S.SM_IN_PORT] = in_gp + 1
    b = st.port[in_gp, S.PT_IN_BYTES] + st.slot_meta[slot, S.SM_LEN]
    st.port[in_gp, S.PT_IN_BYTES] = b
    if b > xoff and st.port[in_gp, S.PT_XOFF] == 0:
        st.port[in_gp, S.PT_XOFF] = 1
        _send_pfc(st, in_gp, st.port[in_gp, S.PT_PFC_QUANTA], now)


@njit(cache=True, _nrt=False)
def _release_ingress(st, slot, now):
    in_gp = st.slot_meta[slot, S.SM_IN_PORT] - 1
    if in_gp < 0:
        return
    st.slot_meta[slot, S.SM_IN_PORT] = 0
    b = st.port[in_gp, S.PT_IN_BYTES] - st.slot_meta[slot, S.SM_LEN]
    st.port[in_gp, S.PT_IN_BYTES] = b
    if st.port[in_gp, S.PT_XOFF] != 0 and b <= st.port[in_gp, S.PT_PFC_XON]:
        st.port[in_gp, S.PT_XOFF] = 0
        _send_pfc(st, in_gp, 0, now)


@njit(cache=True, _nrt=False)
def pfc_received(st, gp, quanta, now):
    """The peer paused (or, with quanta 0, resumed) data transmission on port ``gp``."""
    st.port[gp, S.PT_PAUSES_RX] += 1
    if quanta < 0 or now < st.port[gp, S.PT_IGNORE_PAUSE_UNTIL]:
        return
    st.port[gp, S.PT_PAUSED_UNTIL] = now + (np.int64(quanta) * PAUSE_QUANTUM_BITS * 1000
                                           + st.port[gp, S.PT_RATE_GBPS] - 1) \
        // st.port[gp, S.PT_RATE_GBPS]
    if st.port[gp, S.PT_BUSY] == BUSY_IDLE:
        start_tx(st, gp, now)


# --- link state ---------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def port_down(st, gp, now):
    """The link of ``gp`` failed: every frame queued or on the wire from it is lost."""
    dev = st.port[gp, S.PT_DEV]
    st.port[gp, S.PT_UP] = 0
    st.port[gp, S.PT_GEN] += 1
    st.port[gp, S.PT_BLOCKED_SINCE] = -1
    lost = 0
    while st.port[gp, S.PT_PQ_N] > 0:
        head = st.port[gp, S.PT_PQ_HEAD]
        free_slot(st, ring_get(st.port_pq, gp, head))
        st.port[gp, S.PT_PQ_HEAD] = (head + 1) % ring_capacity(st.port_pq)
        st.port[gp, S.PT_PQ_N] -= 1
        lost += 1
    st.port[gp, S.PT_PQ_BYTES] = 0
    lost += _flush_data(st, gp, now)
    st.port[gp, S.PT_BUSY] = BUSY_IDLE
    st.drops[dev, D.LINK_DOWN] += lost
    st.port[gp, S.PT_DROPS] += lost


@njit(cache=True, _nrt=False)
def inject_frames(st, times, ports, keys, lengths, frames):
    """Queue frames that arrived from another worker (or a test) as arrival events at their
    ingress ports; the sender's event key keeps the order identical to a local delivery. With
    header slots a frame's row holds its first bytes only (the payload is generated).

    Callers check a batch first and name what is wrong (``EngineWorker.deliver``); the checks
    here only keep a direct call with bad arrays from writing outside the state."""
    st = state_ref(st)
    n = times.shape[0]
    if ports.shape[0] < n or keys.shape[0] < n or lengths.shape[0] < n or frames.shape[0] < n:
        raise IndexError("inject_frames: times, ports, keys, lengths and frames differ in length")
    longest = st.pool.shape[1]
    if st.sc[S.SC_HEADER_SLOTS] != 0:
        longest = slot_bytes_for_mtu(st.sc[S.SC_MTU])
    for i in range(n):
        if ports[i] < 0 or ports[i] >= st.port.shape[0]:
            raise IndexError("inject_frames: a frame's port is not a port of this fabric")
        if lengths[i] < 0 or lengths[i] > longest:
            raise ValueError("inject_frames: a frame's length is not 0 B up to the longest frame")
    width = min(frames.shape[1], st.pool.shape[1])
    for i in range(n):
        slot = alloc_slot(st)
        copy_bytes(st.pool[slot], 0, frames[i], 0, min(lengths[i], width))
        st.slot_meta[slot, S.SM_LEN] = lengths[i]
        st.slot_meta[slot, S.SM_ICRC] = ICRC_EXTERNAL  # came from outside this engine: verify its ICRC
        gp = ports[i]
        _push_keyed(st, times[i], keys[i], S.EV_ARRIVE, st.port[gp, S.PT_DEV], gp, slot)


# --- queue occupancy sampling -------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def sample_queues(st, now):
    """Record every local output port with a non-empty queue (data plus priority bytes) or
    with transmission time since the previous sample (its utilisation over the interval), then
    schedule the next sample while anything else is pending. Samples sit on a fixed grid and
    their event keys hold the sample index, so every worker samples the same instants; a worker
    whose heap ran dry has only empty, idle ports, and restarts on the grid
    (``schedule_sample``)."""
    k = st.sc[S.SC_QS_N]
    for gp in range(st.port.shape[0]):
        if st.dev[st.port[gp, S.PT_DEV], S.D_LOCAL] == 0:
            continue
        q = st.port[gp, S.PT_Q_BYTES] + st.port[gp, S.PT_PQ_BYTES]
        busy = st.port[gp, S.PT_BUSY_PS] - st.port[gp, S.PT_SAMPLED_BUSY_PS]
        if q > 0 or busy > 0:
            st.qsamples[k, S.QS_TIME] = now
            st.qsamples[k, S.QS_PORT] = gp
            st.qsamples[k, S.QS_BYTES] = q
            st.qsamples[k, S.QS_BUSY_PS] = busy
            st.port[gp, S.PT_SAMPLED_BUSY_PS] = st.port[gp, S.PT_BUSY_PS]
            k += 1
    st.sc[S.SC_QS_N] = k
    st.sc[S.SC_SAMPLE_PENDING] = 0
    if st.sc[S.SC_HEAP_N] > 0:
        schedule_sample(st, now + 1)


@njit(cache=True, _nrt=False)
def schedule_sample(st, not_before):
    """Schedule the next sample at the first grid instant at or after ``not_before``."""
    interval = st.sc[S.SC_SAMPLE_PS]
    if interval <= 0 or st.sc[S.SC_SAMPLE_PENDING] != 0:
        return
    idx = (max(not_before, 0) + interval - 1) // interval
    st.sc[S.SC_SAMPLE_PENDING] = 1
    _push_keyed(st, idx * interval, (np.int64(S.SAMPLE_CREATOR) << 40) | idx, S.EV_SAMPLE, 0,
                0, 0)
