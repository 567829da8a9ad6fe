"""Hierarchical all-reduce, as NCCL runs it across multi-GPU servers: a reduce-scatter within
each local group (the GPUs of one server, over NVLink), an all-reduce of each GPU's block
among the GPUs of the same index in every group (its rail: one leaf switch away on a
rail-optimised fabric), then an all-gather within the group. Every phase is a ring, pipelined
in chunks as ``ring`` is.

Why: a flat ring over all n ranks carries 2(n-1)/n S through every link of the ring, the slow
network links between servers included; here a NIC carries only 2(M-1)/M S/g (g ranks per
group, M groups), the rest crosses the fast local links. The groups come from the topology
(``spin.collectives.locality``); ranks without them (a star) are one group: the flat ring.

Layout (every rank alike): the data, g-1 scratch regions of a block for the group's
reduce-scatter, M-1 of a sub-block for the rail's. Group position p ends the reduce-scatter
with the group's sum of block (p+1) mod g (the ring's order), the rail all-reduces that block
in place, and the all-gather passes the finished blocks on. QP +0 carries the group's
phases, QP +1 the rail's: each hears one sender (its ring's left neighbour), in order.

Why nothing is overwritten while needed: each phase is a ring (``ring``'s argument), its
receive scratch regions are its own, and the rail phase touches only the block the group
phase left to this rank, which no group-phase send of this rank reads (the reduce-scatter
sends every block but that one, the all-gather receives every block but that one).
"""
from __future__ import annotations

from .common import (ALIGN_BYTES, AllreducePlan, Builder, align, block_counts, check_args,
                     check_memory, itemsize, offsets, write_inputs)
from .locality import groups_or_whole
from .ring import chunk_bytes, chunk_ranges

NAME = "hierarchical"
GROUP_QP, RAIL_QP = 0, 1


def plan_memory(n: int, count: int, dtype: str) -> int:
    """At most what any grouping of ``n`` ranks lays out: the data, (g-1)/g of it for the
    group's scratch and 1/g for the rail's, at most S(1 + 1/2) beyond the data, plus one
    alignment and an element per region."""
    w = itemsize(dtype)
    return 2 * align(count * w) + align(count * w // 2) + n * 2 * (ALIGN_BYTES + w)


def ring_reduce_scatter(b: Builder, ring: tuple[int, ...], base: int,
                        sets: list[list[tuple[int, int]]], scratch: int, region: int, qp: int,
                        chunk: int) -> None:
    """Ring reduce-scatter of the sets at ``base`` over ``ring`` (rank indices in ring order):
    position p ends with the sum of set (p + 1) mod k. A set is the (first element, elements)
    of its pieces, each moved in chunks; step s's incoming set lands in scratch region s, its
    pieces one after another."""
    k, w = len(ring), b.width
    at_in_region = [offsets([c for _, c in pieces]) for pieces in sets]
    for p, r in enumerate(ring):
        right = ring[(p + 1) % k]
        for piece, (first, count) in enumerate(sets[p]):    # step 0: our own set p
            pos = at_in_region[p][piece]
            for lo, c in chunk_ranges(count, w, chunk):
                b.send(r, right, qp, base + (first + lo) * w, scratch + (pos + lo) * w, c)
        for s in range(k - 1):
            blk = (p - s - 1) % k
            for piece, (first, count) in enumerate(sets[blk]):
                pos = at_in_region[blk][piece]
                for lo, c in chunk_ranges(count, w, chunk):
                    into = scratch + s * region + (pos + lo) * w
                    b.recv(r, qp, c)
                    b.reduce(r, base + (first + lo) * w, into, c)
                    if s < k - 2:       # the sum, on into the right neighbour's region s+1
                        b.send(r, right, qp, base + (first + lo) * w, into + region, c)


def ring_all_gather(b: Builder, ring: tuple[int, ...], base: int,
                    sets: list[list[tuple[int, int]]], qp: int, chunk: int) -> None:
    """Ring all-gather in place: position p starts with set (p + 1) mod k (where
    ``ring_reduce_scatter`` leaves its block) and ends with every set; a set is the
    (first element, elements) of its pieces, each moved in chunks, so a set may gather
    blocks that are not contiguous (``spin.training.collectives``' hierarchical all-gather)."""
    k, w = len(ring), b.width
    for p, r in enumerate(ring):
        right = ring[(p + 1) % k]

        for first, count in sets[(p + 1) % k]:
            for lo, c in chunk_ranges(count, w, chunk):
                at = base + (first + lo) * w
                b.send(r, right, qp, at, at, c)
        for s in range(k - 1):
            blk = (p - s) % k
            for first, count in sets[blk]:
                for lo, c in chunk_ranges(count, w, chunk):
                    b.recv(r, qp, c)
                    if s < k - 2:
                        at = base + (first + lo) * w
                        b.send(r, right, qp, at, at, c)


def blocks(counts: list[int], offs: list[int]) -> list[list[tuple[int, int]]]:
    """Each block as a set of one piece, for ``ring_all_gather``."""
    return [[(o, c)] for o, c in zip(offs, counts)]


def build(scenario, count: int, dtype: str = "float32", *, hosts=None, inputs=None,
          qp: int = 0) -> AllreducePlan:
    """Add a hierarchical all-reduce of ``count`` elements per rank to ``scenario``."""
    hosts = check_args(scenario, count, dtype, hosts)
    loc = groups_or_whole(scenario.topology, hosts)
    g, m, w = loc.size, len(loc.groups), itemsize(dtype)
    counts = block_counts(count, g)
    off = offsets(counts)
    subs = [block_counts(c, m) for c in counts]
    data, scratch = 0, align(count * w)
    region = align(max(counts) * w)
    rail_scratch = scratch + (g - 1) * region
    rail_region = align(max(max(s) for s in subs) * w)
    plan = AllreducePlan(NAME, hosts, count, dtype, data, data, scratch,
                         rail_scratch + (m - 1) * rail_region, (qp + GROUP_QP, qp + RAIL_QP))
    check_memory(scenario, plan)
    b = Builder(scenario, hosts, dtype, qp, 2)
    group_chunk = chunk_bytes(scenario, max(counts) * w)
    b.mark_all(plan.start_mark)
    for group in loc.groups:
        ring_reduce_scatter(b, group, data, blocks(counts, off), scratch, region, GROUP_QP,
                            group_chunk)
    for i, rail in enumerate(loc.rails if m > 1 else ()):
        blk = (i + 1) % g                  # what group position i holds summed
        sub_off = offsets(subs[blk])
        rail_chunk = chunk_bytes(scenario, max(subs[blk]) * w)
        base = data + off[blk] * w
        ring_reduce_scatter(b, rail, base, blocks(subs[blk], sub_off), rail_scratch,
                            rail_region, RAIL_QP, rail_chunk)
        ring_all_gather(b, rail, base, blocks(subs[blk], sub_off), RAIL_QP, rail_chunk)
    for group in loc.groups:
        ring_all_gather(b, group, data, blocks(counts, off), GROUP_QP, group_chunk)
    b.mark_all(plan.end_mark)
    if inputs is not None:
        write_inputs(scenario, plan, inputs)
    return plan
