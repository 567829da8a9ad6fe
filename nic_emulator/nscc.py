"""NSCC, Ultra Ethernet's network-signal congestion control, as htsim's UEC source runs it
(``ultraethernet/uet-htsim:htsim/sim/uec.cpp``, ``UecSrc::updateCwndOnAck_NSCC``), plus the
RTT estimate the window and the retransmission timeout both use. Integers only.

**RTT.** One packet per round trip is timed (Karn: a resent packet is never timed): when an
ACK covers it, the sample updates SRTT and RTTVAR as RFC 6298 does (gains 1/8 and 1/4), the
retransmission timeout becomes max(floor, SRTT + 4 RTTVAR), and the queueing delay is the sample
minus the path's base RTT (the least of the configured base RTT and the least sample seen).

**Window**, per ACK newly acknowledging ``b`` bytes, with the newest queueing delay ``d`` and the
ACK's ECN mark, against a target delay (htsim: 6 us for its 12 us reference RTT; here half the
base RTT), in NSCC's four quadrants:

- unmarked, ``d`` below target: proportional increase, (target - d) / target x 4 MTU per
  window of ACKs (htsim caps one adjustment at 4 MTU of 4 KiB); once a whole window came back
  with ``d`` under 1 us, *fast increase*: cwnd += b / 4 per ACK (htsim's ``_fi_scale`` 0.25)
  until a signal appears;
- unmarked, ``d`` at or above target: fair increase, one MTU per window;
- marked, ``d`` at or above target: multiplicative decrease at most once per base RTT,
  cwnd x max(1 - 0.8 (avg - target) / avg, 1/2) with ``avg`` the smoothed delay (htsim's
  ``_gamma`` 0.8);
- marked, ``d`` below target: nothing (a mark without a standing queue: a transient
  collision of sprayed packets, not congestion).

**Quick adapt**: every base RTT + target, if a packet was trimmed or the smoothed delay
exceeded 4 x target (htsim's ``_qa_threshold``), the window falls to the bytes acknowledged in
that period, and marks on the next window's worth of ACKs are ignored (they describe the queue
before the cut). A trim takes one MTU off at once (htsim's ``mark_packet_for_retransmission``);
a timeout halves the window. MTU <= cwnd <= the configured maximum.
"""

from spin.engine import state as S
from spin.jit import njit

FAST_DELAY_PS = 1_000_000        # htsim: fast increase while the delay stays under 1 us
PROP_MTUS = 4                    # proportional increase at zero delay, MTUs per window
GAMMA_PERMILLE = 800             # multiplicative decrease gain (htsim _gamma = 0.8)
QA_TARGETS = 4                   # quick adapt above 4 x target delay (htsim _qa_threshold)


@njit(cache=True, _nrt=False)
def rtt_start(st, c, psn, now):
    """Time packet ``psn`` (a first transmission) unless a timed packet is in flight."""
    row = st.conn[c]
    if row[S.C_RTT_PSN] < 0:
        row[S.C_RTT_PSN] = psn
        row[S.C_RTT_T] = now


@njit(cache=True, _nrt=False)
def rtt_forget(st, c, psn):
    """Packet ``psn`` is sent again: its ACK would not tell which copy it answers (Karn)."""
    if st.conn[c, S.C_RTT_PSN] == psn:
        st.conn[c, S.C_RTT_PSN] = -1


@njit(cache=True, _nrt=False)
def rtt_acked(st, c, now):
    """The timed packet was acknowledged: take the sample."""
    row = st.conn[c]
    rtt = now - row[S.C_RTT_T]
    row[S.C_RTT_PSN] = -1
    if row[S.C_SRTT] == 0:
        row[S.C_SRTT] = rtt
        row[S.C_RTTVAR] = rtt // 2
    else:
        err = rtt - row[S.C_SRTT]
        row[S.C_RTTVAR] += ((err if err >= 0 else -err) - row[S.C_RTTVAR]) // 4
        row[S.C_SRTT] += err // 8
    row[S.C_RTO_PS] = max(st.sc[S.SC_TRP + S.TRP_RTO_MIN_PS], row[S.C_SRTT] + 4 * row[S.C_RTTVAR])
    if row[S.C_MIN_RTT] == 0 or rtt < row[S.C_MIN_RTT]:
        row[S.C_MIN_RTT] = rtt
    d = rtt - min(row[S.C_MIN_RTT], st.sc[S.SC_TRP + S.TRP_BASE_RTT_PS])
    d = max(d, 0)
    row[S.C_DELAY] = d
    row[S.C_AVG_DELAY] += (d - row[S.C_AVG_DELAY]) // 8


@njit(cache=True, _nrt=False)
def rto_ps(st, c):
    """The connection's retransmission timeout: from its RTT once measured."""
    r = st.conn[c, S.C_RTO_PS]
    return r if r > 0 else st.sc[S.SC_TRP + S.TRP_RTO_PS]


@njit(cache=True, _nrt=False)
def _clamp(st, c, mtu):
    row = st.conn[c]
    row[S.C_CWND] = min(max(row[S.C_CWND], mtu), st.sc[S.SC_TRP + S.TRP_CWND_MAX])


@njit(cache=True, _nrt=False)
def _quick_adapt(st, c, mtu, now):
    """Once per base RTT + target: cut to what was delivered after a trim or a long queue.
    Returns True when it cut."""
    row = st.conn[c]
    if now < row[S.C_QA_END]:
        return False
    long_queue = row[S.C_AVG_DELAY] > QA_TARGETS * st.sc[S.SC_TRP + S.TRP_TARGET_PS]
    cut = row[S.C_QA_END] > 0 and (row[S.C_QA_TRIGGER] != 0 or long_queue) \
        and row[S.C_ACHIEVED] < row[S.C_CWND]
    if cut:
        row[S.C_CWND] = max(row[S.C_ACHIEVED], mtu)
        row[S.C_IGNORE] = row[S.C_INFLIGHT] * mtu
        row[S.C_INC] = 0
        row[S.C_FAST] = 0
        row[S.C_FI_COUNT] = 0
    row[S.C_QA_TRIGGER] = 0
    row[S.C_ACHIEVED] = 0
    row[S.C_QA_END] = now + st.sc[S.SC_TRP + S.TRP_BASE_RTT_PS] + st.sc[S.SC_TRP + S.TRP_TARGET_PS]
    return cut


@njit(cache=True, _nrt=False)
def nscc_on_ack(st, c, acked_bytes, marked, mtu, now):
    """``acked_bytes`` newly acknowledged by one ACK (ECN-marked or not)."""
    if acked_bytes <= 0:
        return
    row = st.conn[c]
    row[S.C_ACHIEVED] += acked_bytes
    if _quick_adapt(st, c, mtu, now):
        _clamp(st, c, mtu)
        return
    if row[S.C_IGNORE] > 0:
        row[S.C_IGNORE] = max(0, row[S.C_IGNORE] - acked_bytes)
        if marked:
            return
    target = st.sc[S.SC_TRP + S.TRP_TARGET_PS]
    d = row[S.C_DELAY]
    if not marked:
        if d < target:
            if d < FAST_DELAY_PS:
                row[S.C_FI_COUNT] += acked_bytes
                if row[S.C_FAST] != 0 or row[S.C_FI_COUNT] > row[S.C_CWND]:
                    row[S.C_FAST] = 1
                    row[S.C_CWND] += acked_bytes // 4
                    _clamp(st, c, mtu)
                    return
            else:
                row[S.C_FI_COUNT] = 0
            row[S.C_FAST] = 0
            row[S.C_INC] += PROP_MTUS * mtu * acked_bytes * (target - d) // target
        else:
            row[S.C_FAST] = 0
            row[S.C_FI_COUNT] = 0
            row[S.C_INC] += mtu * acked_bytes
        cwnd = max(row[S.C_CWND], 1)
        if row[S.C_INC] >= cwnd:
            q = row[S.C_INC] // cwnd
            row[S.C_CWND] += q
            row[S.C_INC] -= q * cwnd
    else:
        row[S.C_FAST] = 0
        row[S.C_FI_COUNT] = 0
        if d >= target and now - row[S.C_LAST_DEC] > st.sc[S.SC_TRP + S.TRP_BASE_RTT_PS]:
            avg = max(row[S.C_AVG_DELAY], target + 1)
            keep = max(1000 - GAMMA_PERMILLE * (avg - target) // avg, 500)
            row[S.C_CWND] = row[S.C_CWND] * keep // 1000
            row[S.C_LAST_DEC] = now
    _clamp(st, c, mtu)


@njit(cache=True, _nrt=False)
def nscc_on_trim(st, c, mtu):
    """A NACK reported one of the connection's packets trimmed by a full queue."""
    row = st.conn[c]
    row[S.C_CWND] -= mtu
    row[S.C_QA_TRIGGER] = 1
    _clamp(st, c, mtu)


@njit(cache=True, _nrt=False)
def nscc_on_timeout(st, c, mtu):
    row = st.conn[c]
    row[S.C_CWND] //= 2
    row[S.C_QA_TRIGGER] = 1
    _clamp(st, c, mtu)
