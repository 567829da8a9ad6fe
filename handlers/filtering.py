"""Key filtering on the NIC: hash, look up, forward hits, drop misses (PsPIN ``filtering``).

Every packet is one record whose first 8 bytes are an int64 key. The payload handler hashes the
key with Bob Jenkins' one-at-a-time hash (as PsPIN's handler does) and probes an
open-addressing table (linear probing) held in handler memory. A hit overwrites bytes 8..15 of
the packet with the table's value and DMAs the 16-byte ``(key, value)`` record to the next free
slot of a host result array; a miss returns DROP (counted as ``handler_drop``), so only hits
cross PCIe. The completion handler writes the hit count in front of the results and returns
PROCEED so the host is notified once per message.

Handler memory (int64): ``[host_base, hits, mask, 0, table...]`` with 3 words per table slot
``(used, key, value)``. Host results: ``[hits (8 B), (key, value) * hits]``.
"""
import numba as nb
import numpy as np

from spin.api import (DROP, PROCEED, SUCCESS, spin_add_cycles, spin_dma_to_host,
                      spin_fetch_add, spin_host_write)
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

HOST_BASE, HITS, MASK, TABLE = 0, 1, 2, 4
SLOT_WORDS = 3
KEY_BYTES = 8
RECORD_BYTES = 16
M32 = 0xFFFFFFFF
CYCLES_PER_PROBE = 8  # load the slot, compare, branch, advance


def _one_at_a_time(data, offset, n):
    """Jenkins one-at-a-time hash (32-bit), computed in int64 with explicit wraparound."""
    h = 0
    for i in range(n):
        h = (h + np.int64(data[offset + i])) & M32
        h = (h + (h << 10)) & M32
        h ^= h >> 6
    h = (h + (h << 3)) & M32
    h ^= h >> 11
    h = (h + (h << 15)) & M32
    return h


jenkins_one_at_a_time = nb.njit(_nrt=False)(_one_at_a_time)  # handlers are built without NRT


# Hash 8 key bytes (~6 ops each) plus the first probe and a DMA command: ~80 cycles.
# Further probes are charged with spin_add_cycles.
@handler(cycles=80)
def filtering_payload(ctx, pkt, mem):
    key = pkt[:KEY_BYTES].view(np.int64)[0]
    mask = mem[MASK]
    i = jenkins_one_at_a_time(pkt, 0, KEY_BYTES) & mask
    probes = 0
    while probes <= mask:
        s = TABLE + SLOT_WORDS * ((i + probes) & mask)
        if mem[s] == 0:
            break
        if mem[s + 1] == key:
            spin_add_cycles(ctx, CYCLES_PER_PROBE * probes)
            pkt[KEY_BYTES:RECORD_BYTES].view(np.int64)[0] = mem[s + 2]
            slot = spin_fetch_add(mem, HITS, 1)
            spin_dma_to_host(ctx, mem[HOST_BASE] + 8 + RECORD_BYTES * slot, pkt, 0,
                             RECORD_BYTES)
            return SUCCESS
        probes += 1
    spin_add_cycles(ctx, CYCLES_PER_PROBE * probes)
    return DROP


@handler(cycles=20)  # one host write
def filtering_completion(ctx, pkt, mem):
    spin_host_write(ctx, mem[HOST_BASE], mem[HITS])
    return PROCEED


def table_slot(key: int, mask: int) -> int:
    """Home slot of ``key`` (what the handler computes), for building or checking tables."""
    raw = np.array([key], dtype=np.int64).view(np.uint8)
    return _one_at_a_time(raw, 0, KEY_BYTES) & mask


@program_factory
def filtering_program(table: dict[int, int], host_base: int, slots: int = 1024) -> HandlerProgram:
    """``table`` maps int64 keys to int64 values; ``slots`` (a power of two) > len(table)."""
    if slots < 1 or slots & (slots - 1) or slots <= len(table):
        raise ConfigError(f"filtering: slots={slots} must be a power of two > {len(table)} "
                          f"(the number of keys)")
    mem = np.zeros(TABLE + SLOT_WORDS * slots, np.int64)
    mem[HOST_BASE], mem[MASK] = host_base, slots - 1
    for key, value in table.items():
        i = table_slot(key, slots - 1)
        while mem[TABLE + SLOT_WORDS * i]:
            i = (i + 1) & (slots - 1)
        mem[TABLE + SLOT_WORDS * i: TABLE + SLOT_WORDS * (i + 1)] = (1, key, value)
    return HandlerProgram("filtering", payload=filtering_payload,
                          completion=filtering_completion, memory=mem)
