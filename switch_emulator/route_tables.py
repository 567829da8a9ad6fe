"""Equal-cost routing tables, computed in compiled code and stored in shared blocks, so that a
fabric of 65,536 hosts and 80,000 switches has its tables in seconds and megabytes.

What is computed: for every switch and destination host, every local port whose peer is one hop
closer to the host on a shortest path that transits switches only (hosts never forward). A
switch built with ``transit=False`` (a GPU's own router in a rail-optimised fabric) forwards only
its own hosts' traffic: its routes are computed, but no other device's shortest path crosses it.

How: a breadth-first search from the destinations, 512 at a time, one bit per destination in
eight 64-bit words per device (bit-parallel BFS): each level ORs a device's newly reached bits
into its neighbours, and a switch's port is a next hop for exactly the bits that arrived through
it at the level before the switch's own. One search costs a few passes over the links, so the
whole computation is (hosts / 512) x links word operations, not switches x hosts searches.

How it is stored (what the engine reads, ``switch_emulator.routing.route_group``):
``route[epoch, switch, host >> 6]`` is a block id, ``rblock[block, host & 63]`` a group id (-1: no
route), ``rgroup[group] = (first, count)`` into ``rport`` (local ports). A block is a switch's
groups for 64 consecutive hosts; equal blocks and equal groups are stored once (a fat tree edge
switch sends all 64 hosts of a far block up the same group: one block for every far block of
every edge switch). A block is keyed by the switch's next-hop bit masks per port, which decide
its contents, so no (switch, host) pair is ever visited on its own.
"""
from __future__ import annotations

import numpy as np

from spin.engine.state import ROUTE_BLOCK, ROUTE_BLOCK_SHIFT
from spin.jit import njit

WORDS = 8                       # 64-destination words per search: 512 destinations at a time
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True)
def _hash(words, start, n):
    h = _FNV_OFFSET
    for i in range(n):
        h = (h ^ np.uint64(words[start + i])) * _FNV_PRIME
    return h ^ (h >> np.uint64(29))


@njit(cache=True)
def _grow(a, need):
    """``a`` with room for ``need`` rows (doubling), contents kept."""
    if need <= a.shape[0]:
        return a
    cap = max(2 * a.shape[0], need)
    b = np.empty((cap,) + a.shape[1:], a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True)
def _rehash(slots, n, key_of_start, key_of_len, keys):
    """An open-addressing table of twice the size holding entries 0..n-1."""
    out = np.full(2 * slots.shape[0], -1, np.int64)
    mask = out.shape[0] - 1
    for e in range(n):
        i = np.int64(_hash(keys, key_of_start[e], key_of_len[e]) & np.uint64(mask))
        while out[i] >= 0:
            i = (i + 1) & mask
        out[i] = e
    return out


@njit(cache=True)
def _same(keys, start, n, probe, m):
    if n != m:
        return False
    for i in range(n):
        if keys[start + i] != probe[i]:
            return False
    return True


@njit(cache=True)
def _group_id(ports, n, rgroup, rport, counts, g_slots):
    """Id of the group of local ports ``ports[:n]`` (added when new); returns the id and the
    possibly grown arrays."""
    mask = g_slots.shape[0] - 1
    i = np.int64(_hash(ports, 0, n) & np.uint64(mask))
    while g_slots[i] >= 0:
        g = g_slots[i]
        if _same(rport, rgroup[g, 0], rgroup[g, 1], ports, n):
            return g, rgroup, rport, g_slots
        i = (i + 1) & mask
    g = counts[0]
    rgroup = _grow(rgroup, g + 1)
    rport = _grow(rport, counts[1] + n)
    rgroup[g, 0] = counts[1]
    rgroup[g, 1] = n
    rport[counts[1]:counts[1] + n] = ports[:n]
    counts[0] += 1
    counts[1] += n
    g_slots[i] = g
    if 2 * counts[0] > g_slots.shape[0]:
        g_slots = _rehash(g_slots, counts[0], rgroup[:, 0], rgroup[:, 1], rport)
    return g, rgroup, rport, g_slots


@njit(cache=True)
def _any(row, nw):
    for w in range(nw):
        if row[w]:
            return True
    return False


@njit(cache=True)
def _search(t0, nw, n_hosts, adj_start, adj_nbr, adj_port, transit, nh_off, nh,
            F, cand, newm, reach, own, frontier, touched, flag):
    """Bit-parallel BFS from destinations t0 .. t0 + 64*nw - 1: afterwards ``nh[nh_off[s] + p,
    w]`` holds the destinations (bit j of word w: host t0 + 64w + j) for which local port p of
    switch s is a next hop. Scratch arrays come back zeroed."""
    nf = 0
    for h in range(t0, min(n_hosts, t0 + 64 * nw)):
        w, j = (h - t0) >> 6, (h - t0) & 63
        F[h, w] = np.uint64(1) << np.uint64(j)
        frontier[nf] = h
        nf += 1
        for e in range(adj_start[h], adj_start[h + 1]):
            v = adj_nbr[e]
            if not transit[v - n_hosts]:
                own[v, w] |= F[h, w]
    n_front = nf
    while n_front > 0:
        nt = 0
        for i in range(n_front):
            u = frontier[i]
            pass_all = u < n_hosts or transit[u - n_hosts]
            if not pass_all and not _any(own[u], nw):
                continue                          # reached, but forwards none of these
            for e in range(adj_start[u], adj_start[u + 1]):
                v = adj_nbr[e]
                got = False
                for w in range(nw):
                    c = F[u, w] if pass_all else F[u, w] & own[u, w]
                    if c:
                        cand[v, w] |= c
                        got = True
                if got and not flag[v]:
                    flag[v] = True
                    touched[nt] = v
                    nt += 1
        for i in range(nt):
            v = touched[i]
            for w in range(nw):
                m = cand[v, w] & ~reach[v, w]
                newm[v, w] = m
                reach[v, w] |= m
        for i in range(n_front):
            u = frontier[i]
            pass_all = u < n_hosts or transit[u - n_hosts]
            if not pass_all and not _any(own[u], nw):
                continue                          # reached, but forwards none of these
            for e in range(adj_start[u], adj_start[u + 1]):
                v = adj_nbr[e]
                row = nh_off[v - n_hosts] + adj_port[e]
                for w in range(nw):
                    c = F[u, w] if pass_all else F[u, w] & own[u, w]
                    c &= newm[v, w]
                    if c:
                        nh[row, w] |= c
        for i in range(n_front):
            F[frontier[i], :] = 0
        n_front = 0
        for i in range(nt):
            v = touched[i]
            flag[v] = False
            cand[v, :] = 0
            live = False
            for w in range(nw):
                if newm[v, w]:
                    live = True
            if live:
                F[v, :] = newm[v, :]
                frontier[n_front] = v
                n_front += 1
            newm[v, :] = 0
    for h in range(t0, min(n_hosts, t0 + 64 * nw)):
        for e in range(adj_start[h], adj_start[h + 1]):
            own[adj_nbr[e], :] = 0


@njit(cache=True)
def _block_id(key, n, ports, rblock, b_keys, b_key_off, b_key_len, b_slots, rgroup, rport,
              g_slots, counts):
    """Id of the block whose key (a switch's next-hop masks per port, trailing zeros left out)
    is ``key[:n]``, added with its 64 groups when new; returns it and the tables, possibly
    grown."""
    mask = b_slots.shape[0] - 1
    i = np.int64(_hash(key, 0, n) & np.uint64(mask))
    while b_slots[i] >= 0:
        c = b_slots[i]
        if _same(b_keys, b_key_off[c], b_key_len[c], key, n):
            return c, rblock, b_keys, b_key_off, b_key_len, b_slots, rgroup, rport, g_slots
        i = (i + 1) & mask
    b = counts[2]
    rblock = _grow(rblock, b + 1)
    b_key_off = _grow(b_key_off, b + 1)
    b_key_len = _grow(b_key_len, b + 1)
    b_keys = _grow(b_keys, counts[3] + n)
    b_key_off[b] = counts[3]
    b_key_len[b] = n
    b_keys[counts[3]:counts[3] + n] = key[:n]
    counts[2] += 1
    counts[3] += n
    for j in range(64):
        bit = np.uint64(1) << np.uint64(j)
        m = 0
        for p in range(n):
            if key[p] & bit:
                ports[m] = p
                m += 1
        if m == 0:
            rblock[b, j] = -1
        else:
            g, rgroup, rport, g_slots = _group_id(ports, m, rgroup, rport, counts, g_slots)
            rblock[b, j] = g
    b_slots[i] = b
    if 2 * counts[2] > b_slots.shape[0]:
        b_slots = _rehash(b_slots, counts[2], b_key_off, b_key_len, b_keys)
    return b, rblock, b_keys, b_key_off, b_key_len, b_slots, rgroup, rport, g_slots


@njit(cache=True)
def _epoch(n_hosts, n_devs, adj_start, adj_nbr, adj_port, transit, sw_deg, route,
           rgroup, rport, g_slots, rblock, b_keys, b_key_off, b_key_len, b_slots, counts):
    """Fill ``route`` (switch x host block) for one wiring; blocks and groups are shared with
    earlier epochs through the tables passed in (returned, possibly grown). ``counts``: groups,
    group ports, blocks, block key words."""
    n_sw = sw_deg.shape[0]
    nh_off = np.zeros(n_sw + 1, np.int64)
    max_deg = 1
    for s in range(n_sw):     # a loop, not sw_deg.max(): loading array methods' cached code
        nh_off[s + 1] = nh_off[s] + sw_deg[s]     # imports numba.np.arraymath (and scipy)
        max_deg = max(max_deg, sw_deg[s])
    nh = np.zeros((max(nh_off[n_sw], 1), WORDS), np.uint64)
    F = np.zeros((n_devs, WORDS), np.uint64)
    cand = np.zeros((n_devs, WORDS), np.uint64)
    newm = np.zeros((n_devs, WORDS), np.uint64)
    reach = np.zeros((n_devs, WORDS), np.uint64)
    own = np.zeros((n_devs, WORDS), np.uint64)
    frontier = np.zeros(n_devs, np.int64)
    touched = np.zeros(n_devs, np.int64)
    flag = np.zeros(n_devs, np.bool_)
    key = np.zeros(max_deg, np.uint64)
    ports = np.zeros(max_deg, np.int32)
    last = np.full(n_sw, -1, np.int64)          # each switch's previous block: often the next
    for t0 in range(0, n_hosts, 64 * WORDS):
        nw = min(WORDS, (n_hosts - t0 + 63) >> 6)
        _search(t0, nw, n_hosts, adj_start, adj_nbr, adj_port, transit, nh_off, nh,
                F, cand, newm, reach, own, frontier, touched, flag)
        reach[:] = 0
        for s in range(n_sw):
            base = nh_off[s]
            for w in range(nw):
                b = last[s]                       # the previous block again: the usual case
                if b >= 0:
                    off, m = b_key_off[b], b_key_len[b]
                    for p in range(sw_deg[s]):
                        if nh[base + p, w] != (b_keys[off + p] if p < m else np.uint64(0)):
                            b = -1
                            break
                    if b >= 0:
                        route[s, (t0 >> 6) + w] = b
                        continue
                n = 0
                for p in range(sw_deg[s]):
                    key[p] = nh[base + p, w]
                    if key[p]:
                        n = p + 1
                (b, rblock, b_keys, b_key_off, b_key_len, b_slots, rgroup, rport,
                 g_slots) = _block_id(key, n, ports, rblock, b_keys, b_key_off, b_key_len,
                                      b_slots, rgroup, rport, g_slots, counts)
                last[s] = b
                route[s, (t0 >> 6) + w] = b
            for p in range(sw_deg[s]):
                nh[base + p, :] = 0
    return rgroup, rport, g_slots, rblock, b_keys, b_key_off, b_key_len, b_slots


def host_blocks(n_hosts: int) -> int:
    """Blocks of ``ROUTE_BLOCK`` hosts that cover ``n_hosts`` (at least one)."""
    return max(1, -(-n_hosts // ROUTE_BLOCK))


class RouteTables:
    """Routing epochs packed for the engine (module docstring): one block-index table per
    epoch; blocks and groups shared by every epoch."""

    def __init__(self, n_switches: int, n_hosts: int):
        self.n_switches, self.n_hosts = n_switches, n_hosts
        self.epochs: list[np.ndarray] = []
        self._counts = np.zeros(4, np.int64)
        self._rgroup = np.zeros((64, 2), np.int32)
        self._rport = np.zeros(256, np.int32)
        self._g_slots = np.full(128, -1, np.int64)
        self._rblock = np.zeros((64, ROUTE_BLOCK), np.int32)
        self._b_keys = np.zeros(256, np.uint64)
        self._b_key_off = np.zeros(64, np.int64)
        self._b_key_len = np.zeros(64, np.int64)
        self._b_slots = np.full(128, -1, np.int64)

    @property
    def n_groups(self) -> int:
        return int(self._counts[0])

    @property
    def n_ports(self) -> int:
        return int(self._counts[1])

    @property
    def n_blocks(self) -> int:
        return int(self._counts[2])

    @property
    def groups(self) -> np.ndarray:
        """(first, count) of every group, into ``ports``."""
        return self._rgroup[:self.n_groups]

    @property
    def ports(self) -> np.ndarray:
        return self._rport[:self.n_ports]

    @property
    def blocks(self) -> np.ndarray:
        return self._rblock[:self.n_blocks]

    def add_epoch(self, port_dev: np.ndarray, port_local: np.ndarray, peer: np.ndarray,
                  up: np.ndarray, transit: np.ndarray | None = None) -> int:
        """Tables for one wiring: ``port_dev``/``port_local`` (device and local index of every
        global port; devices are hosts 0..H-1 then switches), ``peer`` (the facing port, -1:
        none), ``up`` (port usable) and ``transit`` (per switch; default all True)."""
        n_hosts, n_sw = self.n_hosts, self.n_switches
        n_devs = n_hosts + n_sw
        port_dev = np.asarray(port_dev, np.int64)
        peer = np.asarray(peer, np.int64)
        live = (peer >= 0) & np.asarray(up, bool)
        live[live] &= np.asarray(up, bool)[peer[live]]
        src = np.flatnonzero(live)
        u, far = port_dev[src], peer[src]
        v = port_dev[far]
        keep = v >= n_hosts                              # only switches receive and forward
        u, v, pv = u[keep], v[keep], np.asarray(port_local, np.int64)[far[keep]]
        order = np.argsort(u, kind="stable")
        adj_start = np.zeros(n_devs + 1, np.int64)
        np.cumsum(np.bincount(u, minlength=n_devs), out=adj_start[1:])
        sw_deg = np.bincount(port_dev, minlength=n_devs)[n_hosts:].astype(np.int64)
        transit = (np.ones(n_sw, np.bool_) if transit is None
                   else np.asarray(transit, np.bool_))
        route = np.full((max(n_sw, 1), host_blocks(n_hosts)), -1, np.int32)
        if n_sw and n_hosts:
            (self._rgroup, self._rport, self._g_slots, self._rblock, self._b_keys,
             self._b_key_off, self._b_key_len, self._b_slots) = _epoch(
                n_hosts, n_devs, adj_start, v[order], pv[order], transit, sw_deg, route,
                self._rgroup, self._rport, self._g_slots, self._rblock, self._b_keys,
                self._b_key_off, self._b_key_len, self._b_slots, self._counts)
        self.epochs.append(route)
        return len(self.epochs) - 1

    def group(self, epoch: int, switch: int, host: int) -> int:
        """The group id switch ``switch`` (index among switches) uses towards ``host``."""
        b = self.epochs[epoch][switch, host >> ROUTE_BLOCK_SHIFT]
        return -1 if b < 0 else int(self._rblock[b, host & (ROUTE_BLOCK - 1)])

    def next_hops(self, epoch: int, switch: int, host: int) -> tuple[int, ...]:
        """Local ports of ``switch`` on a shortest path to ``host`` (empty: unreachable)."""
        g = self.group(epoch, switch, host)
        if g < 0:
            return ()
        first, count = self._rgroup[g]
        return tuple(int(p) for p in self._rport[first:first + count])

    def nbytes(self) -> int:
        """Bytes the engine's copies of these tables take."""
        return (sum(e.nbytes for e in self.epochs) + self.n_blocks * ROUTE_BLOCK * 4
                + self.n_groups * 8 + self.n_ports * 4)

    def write(self, st) -> None:
        for e, table in enumerate(self.epochs):
            st.route[e] = table
        st.rblock[:self.n_blocks] = self.blocks
        st.rgroup[:self.n_groups] = self.groups
        st.rport[:self.n_ports] = self.ports
