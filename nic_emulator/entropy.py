"""Sender-side entropy: the UDP source port (entropy value, EV) of each packet, which switches
hash with ordinary per-flow ECMP (``switch_emulator.routing``). Choosing it per packet at the
sender sprays a flow over paths without touching the switches (Ultra Ethernet, REPS).

- ``per_flow``: the connection's fixed EV (RoCEv2 practice): one path per flow.
- ``spray`` (oblivious packet spraying): a new pseudo-random EV for every packet sent,
  retransmissions included, from a per-connection generator; with ``ev_set_size`` N, the
  connection's N EVs in turn, in a shuffled order (htsim's oblivious spraying over ``-paths``).
- ``reps`` (Recycled Entropy Packet Spraying; Bonato et al., arXiv 2407.21625): ACKs echo the
  EV of the packet they acknowledge; an ACK without an ECN mark puts its EV into an 8-entry
  circular buffer. Each packet reuses the oldest cached EV (removing it), or explores a fresh
  random EV when the buffer is empty. A trim or a timeout starts *freezing* for
  ``reps_freeze_us``: no exploration, the cached EVs are cycled (kept) instead of consumed, and
  with none cached the latest good EV is reused. (htsim's 16 exploration packets after a freeze
  are left out.)

EVs stay in the dynamic port range 49152-65535, like ``spin.engine.rdma.flow_entropy``.
"""

from spin.engine import state as S
from spin.jit import njit


@njit(cache=True, inline="always", _nrt=False)
def spray_ev(seed, counter):
    """Pseudo-random EV number ``counter`` of a flow (a counter-based generator: integer mixing
    of the flow seed and the counter, in 32-bit steps so no arithmetic overflows)."""
    x = (seed ^ (counter * 0x9E3779B1)) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return 0xC000 | (x & 0x3FFF)


@njit(cache=True, _nrt=False)
def _explore(st, c):
    """The connection's next fresh EV: counter-based draws over the whole EV range, or, with an
    EV set of N (htsim's ``-paths``), a walk over the connection's N EVs in a fixed shuffled
    order (htsim's oblivious spraying: a permuted round robin)."""
    n = st.conn[c, S.C_PRNG]
    st.conn[c, S.C_PRNG] = (n + 1) & 0xFFFFFFFF
    k = st.sc[S.SC_TRP + S.TRP_EV_SET]
    return spray_ev(st.conn[c, S.C_EV], n % k if k > 0 else n)


@njit(cache=True, _nrt=False)
def packet_ev(st, dev, c, now):
    """EV of the next packet connection ``c`` sends."""
    policy = st.dev[dev, S.D_ENTROPY]
    if policy == S.ENT_PER_FLOW:
        return st.conn[c, S.C_EV]
    if policy == S.ENT_SPRAY:
        return _explore(st, c)
    row = st.conn[c]
    n = row[S.C_REPS_N]
    frozen = now < row[S.C_FREEZE_UNTIL]
    if n > 0:
        head = row[S.C_REPS_HEAD]
        ev = row[S.C_REPS0 + head]
        row[S.C_REPS_HEAD] = (head + 1) % S.REPS_SLOTS
        if frozen:   # keep it: move it to the tail
            row[S.C_REPS0 + (head + n) % S.REPS_SLOTS] = ev
        else:
            row[S.C_REPS_N] = n - 1
        return ev
    if frozen and row[S.C_LAST_GOOD] != 0:
        return row[S.C_LAST_GOOD]
    return _explore(st, c)


@njit(cache=True, _nrt=False)
def reps_on_ack(st, c, ev, marked):
    """An ACK echoed ``ev``: cache it unless the packet was ECN-marked (full: drop the oldest)."""
    if marked or ev < 0xC000:
        return
    row = st.conn[c]
    n = row[S.C_REPS_N]
    head = row[S.C_REPS_HEAD]
    if n == S.REPS_SLOTS:
        head = (head + 1) % S.REPS_SLOTS
        row[S.C_REPS_HEAD] = head
        n -= 1
    row[S.C_REPS0 + (head + n) % S.REPS_SLOTS] = ev
    row[S.C_REPS_N] = n + 1
    row[S.C_LAST_GOOD] = ev


@njit(cache=True, _nrt=False)
def reps_freeze(st, dev, c, now):
    """A trim or timeout: stop exploring for a while."""
    if st.dev[dev, S.D_ENTROPY] == S.ENT_REPS:
        st.conn[c, S.C_FREEZE_UNTIL] = now + st.sc[S.SC_TRP + S.TRP_FREEZE_PS]
