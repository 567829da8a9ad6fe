"""Per-round frame handling of an engine worker, compiled: taking the engine's outbox apart by
destination worker, and checking a peer's batch before the engine sees it.

Both run every sync round; as numpy one-liners they cost a dozen small array operations each
(~25 µs per round, more than the engine's own work in a 100 ns window), as one Numba loop
a couple of µs. They are separate from the generated engine so they compile once, whatever the
handlers, and never touch the engine state.
"""
from __future__ import annotations

import numpy as np

from ..engine.state import O_KEY, O_LEN, O_PORT, O_TIME
from spin.jit import njit

# check_peer_frames results: 0 = acceptable, else the index of the reason below
REASONS = ("", "bad_length", "arrival_in_past", "bad_port", "device_mismatch", "not_owned",
           "wrong_sender", "bad_key")
ANY_PEER = -2          # peer_dev of a port whose link a re-shape re-pairs
KEY_DEVICE_SHIFT = 40  # event keys are (creating device << 40) | sequence (spin.engine.ports.next_key)


@njit(cache=True)
def check_peer_frames(port_dev, peer_dev, owner, me, sender, min_len, max_len, not_before,
                      arrival, dst_device, dst_port, order_key, length):
    """The first failed check over the batch's frames (index into REASONS), 0 if all pass."""
    n_ports = port_dev.shape[0]
    for i in range(arrival.shape[0]):
        if length[i] < min_len or length[i] > max_len:
            return 1
        if arrival[i] < not_before:
            return 2
        p = dst_port[i]
        if p < 0 or p >= n_ports:
            return 3
        d = port_dev[p]
        if d != dst_device[i]:
            return 4
        if owner[d] != me:
            return 5
        q = peer_dev[p]
        k = order_key[i]
        if q == ANY_PEER:   # a port an optical re-shape re-pairs: any device of the sender
            if k < 0 or (k >> KEY_DEVICE_SHIFT) >= owner.shape[0] \
                    or owner[k >> KEY_DEVICE_SHIFT] != sender:
                return 6
            continue
        if q < 0 or owner[q] != sender:
            return 6
        if k < 0 or (k >> KEY_DEVICE_SHIFT) != q:
            return 7
    return 0


@njit(cache=True)
def split_outbox(out, n, port_dev, owner, n_workers):
    """The first n outbox rows (time, port, key, length) as per-frame arrays grouped by
    destination worker, stable within a worker. Returns the arrays, the row order (for the
    frame slots), where each worker's frames start (n_workers + 1 entries), and whether the
    order is the identity (then the slots can be copied as one block)."""
    starts = np.zeros(n_workers + 1, np.int64)
    dst = np.empty(n, np.int64)
    for i in range(n):
        w = owner[port_dev[out[i, O_PORT]]]
        dst[i] = w
        starts[w + 1] += 1
    for w in range(n_workers):
        starts[w + 1] += starts[w]
    pos = starts[:n_workers].copy()
    arrival = np.empty(n, np.int64)
    device = np.empty(n, np.int32)
    port = np.empty(n, np.int32)
    key = np.empty(n, np.int64)
    length = np.empty(n, np.int32)
    order = np.empty(n, np.int64)
    identity = True
    for i in range(n):
        j = pos[dst[i]]
        pos[dst[i]] = j + 1
        p = out[i, O_PORT]
        arrival[j] = out[i, O_TIME]
        port[j] = p
        device[j] = port_dev[p]
        key[j] = out[i, O_KEY]
        length[j] = out[i, O_LEN]
        order[j] = i
        identity = identity and j == i
    return arrival, device, port, key, length, order, starts, identity
