"""Generated payload: the bytes a host "holds" when a scenario keeps none in memory.

A fabric of thousands of hosts sending megabytes each would need gigabytes of host memory only
to hold bytes nobody reads (load-balancing and transport studies look at timing, not data). With
``Scenario.payload = "generated"`` the byte at address ``a`` of node ``n`` is defined as
``PATTERN[(a + n * NODE_STRIDE) % PATTERN_BYTES]``, a fixed pseudo-random table: frames still
carry real headers, lengths, ICRCs and payload bytes on the wire (captures, handlers and
checks all see them), a packet's payload is one contiguous slice of the table, cheap to copy
from a table that stays in cache, and anyone can recompute what a frame must carry
(``generated_bytes``). Delivered payload is counted and timed over PCIe but not stored.
"""
from __future__ import annotations

import numpy as np

PATTERN_BYTES = 1 << 16
# nodes start at different places in the table, so two hosts' messages differ
NODE_STRIDE = 4099
_SEED = 0x5B1E_DA7A


def pattern_table(tail_bytes: int) -> np.ndarray:
    """The table, followed by its first ``tail_bytes`` again, so that any slice of up to
    ``tail_bytes`` starting inside the table is contiguous."""
    base = np.random.default_rng(_SEED).integers(0, 256, PATTERN_BYTES, dtype=np.uint8)
    reps = -(-(PATTERN_BYTES + tail_bytes) // PATTERN_BYTES)
    return np.tile(base, reps)[:PATTERN_BYTES + tail_bytes].copy()


def pattern_start(node: int, addr: int) -> int:
    """Index in the table of node ``node``'s byte at address ``addr``."""
    return (addr + node * NODE_STRIDE) % PATTERN_BYTES


def generated_bytes(node: int, addr: int, nbytes: int) -> bytes:
    """The ``nbytes`` bytes at ``addr`` of node ``node`` under generated payload."""
    table = pattern_table(0)
    idx = (np.arange(nbytes, dtype=np.int64) + pattern_start(node, addr)) % PATTERN_BYTES
    return table[idx].tobytes()
