"""Congestion control of the reliable transports, per sending connection, in integers.

**DCQCN** (RC; Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM'15),
a rate R_C (Mb/s) the sender paces its packets at, with target R_T and alpha in [0, 1]:

- on a CNP: R_T = R_C; R_C = R_C (1 - alpha/2); alpha = (1 - g) alpha + g; the increase stage
  and both timers restart;
- every K (``dcqcn_timer_us``, 55 us) without a CNP: alpha = (1 - g) alpha;
- every K of the rate-increase timer, stage i += 1, then R_C = (R_T + R_C) / 2 after raising
  R_T by nothing for i <= F (fast recovery), by R_AI for F < i <= 2F (additive increase) and by
  R_HAI beyond (hyper increase); R_T and R_C never exceed the line rate.
g = 2^-``dcqcn_g_shift`` (1/256), F = 5, R_AI = 40 Mb/s as in the paper. The paper's byte
counter is left out (the timer alone drives recovery). Timers are evaluated lazily when the
connection next sends or gets a CNP: no events, the same arithmetic.

**NSCC-like window** (UE; after Ultra Ethernet's NSCC and DCTCP), cwnd in bytes, alpha the
marked fraction:

- per ACK that newly acknowledges b bytes: unmarked, cwnd += MTU * b / cwnd (about one MTU per
  window's worth of ACKs: additive increase);
- once per window (acknowledged bytes >= cwnd): F = marked bytes / acknowledged bytes,
  alpha += (F - alpha) / 16, and if anything was marked, cwnd -= cwnd * alpha / 2
  (multiplicative decrease scaled by the fraction marked); a trimmed packet counts as marked
  and takes one MTU off at once; a timeout halves cwnd;
- MTU <= cwnd <= ``max_window_factor`` x the initial window (one bandwidth-delay product).
"""

from spin.engine import state as S
from spin.jit import njit


@njit(cache=True, _nrt=False)
def _line_mbps(st, c):
    return st.port[st.dev[st.conn[c, S.C_DEV], S.D_PORT0], S.PT_RATE_GBPS] * 1000


@njit(cache=True, _nrt=False)
def dcqcn_advance(st, c, now):
    """Apply the alpha and rate-increase timer expiries up to ``now``."""
    row = st.conn[c]
    k_ps = st.sc[S.SC_TRP + S.TRP_TIMER_PS]
    g = st.sc[S.SC_TRP + S.TRP_G_SHIFT]
    k = (now - row[S.C_T_ALPHA]) // k_ps
    if k > 0:
        a = row[S.C_ALPHA]
        for _ in range(min(k, 4096)):
            a -= a >> g
            if a == 0:
                break
        row[S.C_ALPHA] = a
        row[S.C_T_ALPHA] += k * k_ps
    line = _line_mbps(st, c)
    k = (now - row[S.C_T_INC]) // k_ps
    if k <= 0:
        return
    row[S.C_T_INC] += k * k_ps
    if row[S.C_RATE] >= line:
        return
    f = st.sc[S.SC_TRP + S.TRP_FR_STAGES]
    rc = row[S.C_RATE]
    rt = row[S.C_TARGET]
    stage = row[S.C_STAGE]
    for _ in range(min(k, 4096)):
        stage += 1
        if stage > 2 * f:
            rt += st.sc[S.SC_TRP + S.TRP_HAI_MBPS]
        elif stage > f:
            rt += st.sc[S.SC_TRP + S.TRP_AI_MBPS]
        rt = min(rt, line)
        rc = (rt + rc + 1) // 2
        if rc >= line:
            break
    row[S.C_RATE] = min(rc, line)
    row[S.C_TARGET] = rt
    row[S.C_STAGE] = stage


@njit(cache=True, _nrt=False)
def dcqcn_cut(st, dev, c, now):
    """A CNP arrived for connection ``c``: cut its rate."""
    dcqcn_advance(st, c, now)
    row = st.conn[c]
    a = row[S.C_ALPHA]
    rc = row[S.C_RATE]
    row[S.C_TARGET] = rc
    rc = max(st.sc[S.SC_TRP + S.TRP_MIN_RATE_MBPS], rc - (rc * a) // (2 * S.ALPHA_ONE))
    row[S.C_RATE] = rc
    row[S.C_ALPHA] = a + ((S.ALPHA_ONE - a) >> st.sc[S.SC_TRP + S.TRP_G_SHIFT])
    row[S.C_STAGE] = 0
    row[S.C_T_INC] = now
    row[S.C_T_ALPHA] = now
    lo = st.dev[dev, S.D_NTR + S.NT_MIN_RATE]
    if lo == 0 or rc < lo:
        st.dev[dev, S.D_NTR + S.NT_MIN_RATE] = rc


@njit(cache=True, _nrt=False)
def pacing_gap_ps(st, c, wire_bytes):
    """Time a packet of ``wire_bytes`` occupies at the connection's DCQCN rate (0 at line
    rate: the link paces it)."""
    rc = st.conn[c, S.C_RATE]
    if rc >= _line_mbps(st, c):
        return 0
    return (wire_bytes * 8_000_000 + rc - 1) // rc


@njit(cache=True, _nrt=False)
def _clamp_cwnd(st, c, mtu):
    row = st.conn[c]
    row[S.C_CWND] = min(max(row[S.C_CWND], mtu), st.sc[S.SC_TRP + S.TRP_CWND_MAX])


@njit(cache=True, _nrt=False)
def window_on_ack(st, c, acked_bytes, marked, mtu):
    """UE: ``acked_bytes`` newly acknowledged by one ACK (ECN-marked or not)."""
    if acked_bytes <= 0:
        return
    row = st.conn[c]
    row[S.C_ACKED_WIN] += acked_bytes
    if marked:
        row[S.C_MARKED_WIN] += acked_bytes
    else:
        row[S.C_CWND] += max(1, (mtu * acked_bytes) // max(row[S.C_CWND], 1))
    if row[S.C_ACKED_WIN] >= row[S.C_CWND]:
        _window_end(st, c)
    _clamp_cwnd(st, c, mtu)


@njit(cache=True, _nrt=False)
def _window_end(st, c):
    row = st.conn[c]
    frac = (row[S.C_MARKED_WIN] * S.ALPHA_ONE) // max(row[S.C_ACKED_WIN], 1)
    row[S.C_ALPHA] += (frac - row[S.C_ALPHA]) // 16
    if row[S.C_MARKED_WIN] > 0:
        row[S.C_CWND] -= (row[S.C_CWND] * row[S.C_ALPHA]) // (2 * S.ALPHA_ONE)
    row[S.C_ACKED_WIN] = 0
    row[S.C_MARKED_WIN] = 0


@njit(cache=True, _nrt=False)
def window_on_trim(st, c, mtu):
    """UE: a NACK reported one of the connection's packets trimmed by a full queue."""
    row = st.conn[c]
    row[S.C_ACKED_WIN] += mtu
    row[S.C_MARKED_WIN] += mtu
    row[S.C_CWND] -= mtu
    if row[S.C_ACKED_WIN] >= row[S.C_CWND]:
        _window_end(st, c)
    _clamp_cwnd(st, c, mtu)


@njit(cache=True, _nrt=False)
def window_on_timeout(st, c, mtu):
    st.conn[c, S.C_CWND] //= 2
    _clamp_cwnd(st, c, mtu)
