"""The collectives a training trace calls besides all-reduce, as host programs on the fabric
(all-reduce itself comes from ``spin.collectives.ALGORITHMS``). Sizes follow nccl-tests: S is
the all-gather's output, the reduce-scatter's and all-to-all's input, the broadcast's buffer.

* all-gather: the ring's second half (Patarasuk & Yuan, 2009): n-1 steps, S/n per step; or
  recursive doubling; or direct sends of each block to every rank; or hierarchical rings (each
  block around its rail, then every rail's blocks around each local group: a NIC carries
  (M-1)/n S instead of the ring's (n-1)/n S, ``spin.collectives.hierarchical``).
* reduce-scatter: the ring's first half, each received block reduced into the data; or
  recursive halving; or direct sends of each block to its owner; or hierarchical rings (each
  group sums its rails' blocks, then each rail sums its ranks' blocks).
* all-to-all: every rank posts its n-1 blocks of S/n at once (pairwise order r+1, r+2, ...,
  as NCCL posts them) and waits for the n-1 it is owed.
* broadcast: from the group's first rank, a binomial tree (MPICH's for short buffers), a
  chain in chunks (NCCL's ring broadcast), two binary trees in chunks (NCCL's double binary
  tree), or van de Geijn's scatter + all-gather, by a ring or by recursive doubling (MPICH's
  for long buffers), or by direct sends pipelined chunk by chunk (two hops of latency); or,
  where the switches offload collectives, by switch multicast (``multicast``: the root's NIC
  sends once, the switches copy each packet to every other rank, one hop of latency;
  ``spin.collectives.switch_broadcast``).
* barrier: dissemination (Hensgen, Finkel & Manber, 1988): ceil(log2 n) rounds of 8 B.

``spin.training.collective_choice`` picks among them by size when a trace does not name one.

With ``HostConfig.pipeline_chunk_bytes`` > 0 (the ``gpu`` and ``network`` host presets) the
ring steps and the chain move their blocks in chunks, each passed on as soon as it arrived (and
was reduced), so a block's transfer overlaps the hops of the next: see ``chunk_bytes`` for the
size. 0 (the ``cpu`` preset, MPI's rings) sends one message per block and step.

Each builder appends to the hosts' programs and returns the host memory its layout needs;
messages of one collective use ``qps`` QPs from ``qp`` on, where every receiver hears from
exactly one sender per QP, so in-order delivery keeps the cumulative receive counts exact
even when consecutive collectives overlap on the wire. The all-to-all and the direct
algorithms are the exception (a rank hears n-1 senders on one QP): the replay gives
consecutive calls of theirs alternate QP blocks (``spin.training.plan``), since a call can
only start at a rank once every rank has finished the call before the previous one."""
from __future__ import annotations

from ..collectives.common import ALIGN_BYTES, Builder, align, block_counts, offsets
from ..collectives.hierarchical import ring_all_gather, ring_reduce_scatter
from ..collectives.locality import groups_or_whole
from ..collectives.ring import chunk_bytes, chunk_ranges
from ..collectives.switch_broadcast import install_broadcast
from .collective_choice import PathCosts, resolve

DTYPE, WIDTH = "float32", 4          # elements the replay moves (sizes round up to them)
BARRIER_BYTES = 8
CHAIN_FILL_SHARE = 20     # a chain broadcast's fill: at most 5 % of its transfer time


def elements(nbytes: int) -> int:
    """float32 elements holding ``nbytes`` (at least one)."""
    return max(1, -(-nbytes // WIDTH))


def qps_needed(kind: str, n: int, algo: str = "") -> int:
    """QPs a collective of ``kind`` on ``n`` ranks uses: one per round where each round
    hears from another peer (a barrier, recursive doubling and halving), else one per sender
    a rank hears from."""
    rounds = max(1, (n - 1).bit_length())
    if kind == "barrier" or algo in ("rd", "rh"):
        return rounds
    return {"scatter_ring": 2, "double_tree": 2, "scatter_direct": 2, "hierarchical": 2,
            "scatter_rd": rounds + 1}.get(algo, 1)


def memory_needed(kind: str, n: int, nbytes: int) -> int:
    """Host bytes per rank its layout needs (data, and scratch or output regions)."""
    count = elements(nbytes)
    blk = align(max(block_counts(count, n)) * WIDTH)
    # the hierarchy's g-1 regions of M blocks and M-1 of one may each round up once more
    return {"all_gather": align(count * WIDTH),
            "reduce_scatter": align(count * WIDTH) + (n - 1) * blk + n * ALIGN_BYTES,
            "all_to_all": 2 * align(count * WIDTH),
            "broadcast": align(count * WIDTH),
            "barrier": align(BARRIER_BYTES)}[kind]


def build(kind: str, scenario, hosts: tuple[int, ...], nbytes: int, qp: int,
          algo: str = "auto") -> str:
    """Append collective ``kind`` of ``nbytes`` over ``hosts`` (rank order) to their programs
    with ``algo`` (see ``resolve``); returns the algorithm that was built."""
    n = len(hosts)
    name = resolve(kind, algo, n, nbytes, PathCosts.of_scenario(scenario), hosts)
    b = Builder(scenario, hosts, DTYPE, qp, qps_needed(kind, n, name))
    BUILDERS[(kind, name)](b, n, elements(nbytes))
    return name


def _chunks(b: Builder, count: int) -> list[tuple[int, int]]:
    """(first element, elements) of the chunks of a ``count``-element block."""
    return chunk_ranges(count, WIDTH, chunk_bytes(b.sc, count * WIDTH))


def _all_gather(b: Builder, n: int, count: int) -> None:
    """Step s: pass on, chunk by chunk, the block that arrived in step s-1 (step 0: our own)."""
    counts = block_counts(count, n)
    off = offsets(counts)
    chunks = _chunks(b, max(counts))

    def send(r: int, blk: int, lo: int, c: int) -> None:
        at = (off[blk] + lo) * WIDTH
        b.send(r, (r + 1) % n, 0, at, at, c)

    for r in range(n):
        for lo, c in _fit(chunks, counts[r]):
            send(r, r, lo, c)
        for s in range(n - 1):
            in_blk = (r - s - 1) % n
            for lo, c in _fit(chunks, counts[in_blk]):
                b.recv(r, 0, c)
                if s < n - 2:
                    send(r, in_blk, lo, c)


def _all_gather_hierarchical(b: Builder, n: int, count: int) -> None:
    """Each rank's block goes around its rail first (QP +1: the i-th ranks of every local
    group; ring position q starts with set (q + 1) mod k, rank rail[q]'s block), then each
    rank passes its rail's blocks around its group (QP +0), in place. Ranks without local
    groups are one group: the ring."""
    loc = groups_or_whole(b.sc.topology, b.hosts)
    counts = block_counts(count, n)
    off = offsets(counts)
    rails = loc.rails
    block_chunk = chunk_bytes(b.sc, max(counts) * WIDTH)
    for rail in rails if len(loc.groups) > 1 else ():
        k = len(rail)
        ring_all_gather(b, rail, 0, [[(off[rail[(q - 1) % k]], counts[rail[(q - 1) % k]])]
                                     for q in range(k)], 1, block_chunk)
    rail_chunk = chunk_bytes(b.sc, len(rails[0]) * max(counts) * WIDTH)
    for group in loc.groups:   # group position p holds rail p's blocks
        g = len(group)
        ring_all_gather(b, group, 0, [[(off[x], counts[x]) for x in rails[(q - 1) % g]]
                                      for q in range(g)], 0, rail_chunk)


def _reduce_scatter_hierarchical(b: Builder, n: int, count: int) -> None:
    """Rank r ends with the sum of block r (as recursive halving leaves it): a ring
    reduce-scatter in each local group (QP +0) leaves group position p with the group's sum
    of rail p's blocks, then a ring reduce-scatter along each rail (QP +1) leaves each rank
    its own. A NIC carries (M-1)/n S, the ring's (n-1)/n S crossing the fast group links.
    Scratch: g-1 regions of a rail's blocks, then M-1 of a block (n-1 blocks in all, as the
    ring's)."""
    loc = groups_or_whole(b.sc.topology, b.hosts)
    counts = block_counts(count, n)
    off = offsets(counts)
    g, m = loc.size, len(loc.groups)
    rails, blk = loc.rails, align(max(counts) * WIDTH)
    scratch = align(count * WIDTH)
    group_region = align(m * max(counts) * WIDTH)
    set_chunk = chunk_bytes(b.sc, m * max(counts) * WIDTH)
    for group in loc.groups:      # set q: rail (q - 1) mod g, left at group position q - 1
        ring_reduce_scatter(b, group, 0, [[(off[x], counts[x]) for x in rails[(q - 1) % g]]
                                          for q in range(g)], scratch, group_region, 0,
                            set_chunk)
    rail_scratch = scratch + (g - 1) * group_region
    for rail in rails if m > 1 else ():      # set q: rank rail[q - 1]'s block
        ring_reduce_scatter(b, rail, 0, [[(off[rail[(q - 1) % m]], counts[rail[(q - 1) % m]])]
                                         for q in range(m)], rail_scratch, blk, 1,
                            chunk_bytes(b.sc, max(counts) * WIDTH))


def _reduce_scatter(b: Builder, n: int, count: int) -> None:
    """Step s: add the arriving chunks of block (r-s-1) into our data and pass each sum on
    into the right neighbour's scratch region of step s+1."""
    counts = block_counts(count, n)
    off = offsets(counts)
    scratch, region = align(count * WIDTH), align(max(counts) * WIDTH)
    chunks = _chunks(b, max(counts))

    def send(r: int, blk: int, step: int, lo: int, c: int) -> None:
        b.send(r, (r + 1) % n, 0, (off[blk] + lo) * WIDTH, scratch + step * region + lo * WIDTH,
               c)

    for r in range(n):
        for lo, c in _fit(chunks, counts[r]):
            send(r, r, 0, lo, c)
        for s in range(n - 1):
            in_blk = (r - s - 1) % n
            for lo, c in _fit(chunks, counts[in_blk]):
                b.recv(r, 0, c)
                b.reduce(r, (off[in_blk] + lo) * WIDTH, scratch + s * region + lo * WIDTH, c)
                if s < n - 2:
                    send(r, in_blk, s + 1, lo, c)


def _all_gather_rd(b: Builder, n: int, count: int) -> None:
    """Recursive doubling (power-of-two n): in round k, rank r and r XOR 2^k swap the 2^k
    blocks each has gathered so far, in place, on QP k."""
    counts = block_counts(count, n)
    off = offsets(counts)
    for r in range(n):
        for k in range((n - 1).bit_length()):
            d = 1 << k
            mine, theirs = (r >> k) << k, ((r ^ d) >> k) << k
            at = off[mine] * WIDTH
            b.send(r, r ^ d, k, at, at, off[mine + d] - off[mine])
            b.recv(r, k, off[theirs + d] - off[theirs])


def _reduce_scatter_rh(b: Builder, n: int, count: int) -> None:
    """Recursive halving (power-of-two n; rank r ends with the sum of block r): in round k
    the ranks' current range of n/2^k blocks is halved, r sends the half without block r to
    r XOR n/2^(k+1), into scratch region k, and adds what that partner sent it for its own
    half (QP k). A rank sends (n-1)/n S in all, as the ring does, in log2 n steps."""
    counts = block_counts(count, n)
    off = offsets(counts)
    region = align(max(counts) * WIDTH)
    for r in range(n):
        first, width, scratch = 0, n, align(count * WIDTH)
        for k in range((n - 1).bit_length()):
            width //= 2
            keep = first if r < first + width else first + width
            give = first + width if keep == first else first
            b.send(r, r ^ width, k, off[give] * WIDTH, scratch, off[give + width] - off[give])
            b.recv(r, k, off[keep + width] - off[keep])
            b.reduce(r, off[keep] * WIDTH, scratch, off[keep + width] - off[keep])
            first, scratch = keep, scratch + width * region


def _all_gather_direct(b: Builder, n: int, count: int) -> None:
    """Every rank sends its block straight to every other rank (in the order r+1, r+2, ...,
    so no rank is every sender's first target), in place, and waits for the n-1 it is owed."""
    counts = block_counts(count, n)
    off = offsets(counts)
    for r in range(n):
        for s in range(1, n):
            b.send(r, (r + s) % n, 0, off[r] * WIDTH, off[r] * WIDTH, counts[r])
    for r in range(n):
        for s in range(1, n):
            b.recv(r, 0, counts[(r - s) % n])


def _reduce_scatter_direct(b: Builder, n: int, count: int) -> None:
    """Every rank sends block p straight to rank p, into the scratch region of its distance
    (p - r) mod n - 1; each rank waits for the n-1 blocks it is owed and adds them into its own
    block r, which then holds the sum (as recursive halving leaves it)."""
    counts = block_counts(count, n)
    off = offsets(counts)
    scratch, region = align(count * WIDTH), align(max(counts) * WIDTH)
    for r in range(n):
        for s in range(1, n):
            p = (r + s) % n
            b.send(r, p, 0, off[p] * WIDTH, scratch + (s - 1) * region, counts[p])
    for r in range(n):
        for s in range(1, n):
            b.recv(r, 0, counts[r])
        for s in range(1, n):
            b.reduce(r, off[r] * WIDTH, scratch + (s - 1) * region, counts[r])


def _fit(chunks: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """The chunks of the largest block cut to a block of ``count`` elements (blocks differ by
    at most one element, so sender and receiver cut every block the same way)."""
    return [(lo, min(c, count - lo)) for lo, c in chunks if lo < count]


def _all_to_all(b: Builder, n: int, count: int) -> None:
    counts = block_counts(count, n)
    off = offsets(counts)
    out = align(count * WIDTH)
    for r in range(n):
        for s in range(1, n):
            peer = (r + s) % n
            b.send(r, peer, 0, off[peer] * WIDTH, out + off[r] * WIDTH, counts[peer])
    for r in range(n):
        for s in range(1, n):
            b.recv(r, 0, counts[r])


def _fill_chunks(b: Builder, count: int, hops: int,
                 cap_bytes: int | None = None) -> list[tuple[int, int]]:
    """Chunks of a ``count``-element buffer that is forwarded over ``hops`` ranks in a row:
    the last one has it ``hops`` chunk times after the first, so chunks are cut small enough
    that this fill costs at most 1/CHAIN_FILL_SHARE of the transfer (never below the
    ``chunk_bytes`` floor, never above its cap or ``cap_bytes``)."""
    floor, cap = chunk_bytes(b.sc, 0), chunk_bytes(b.sc, count * WIDTH)
    share = -(-count * WIDTH // (CHAIN_FILL_SHARE * max(1, hops)))
    if cap_bytes is not None:
        share = min(share, cap_bytes)
    return chunk_ranges(count, WIDTH, min(cap, max(share, floor)))


def _broadcast_chain(b: Builder, n: int, count: int) -> None:
    """Rank v receives each chunk from v-1 and passes it on to v+1 at once."""
    for v in range(n):
        for lo, c in _fill_chunks(b, count, n - 2):
            if v:
                b.recv(v, 0, c)
            if v < n - 1:
                b.send(v, v + 1, 0, lo * WIDTH, lo * WIDTH, c)


def binary_tree(m: int, shift: int = 0) -> dict[int, list[int]]:
    """Children of each of positions 0..m-1 in a balanced in-order binary tree (the middle of
    a range is its root, each half a subtree), its positions relabelled ``(j + shift) mod m``;
    key -1 holds the root. In-order, the leaves are every other position, so a shift by one
    makes them the inner nodes of the second tree."""
    children: dict[int, list[int]] = {}

    def subtree(lo: int, hi: int) -> int | None:
        if lo > hi:
            return None
        mid = (lo + hi) // 2
        kids = [k for k in (subtree(lo, mid - 1), subtree(mid + 1, hi)) if k is not None]
        children[(mid + shift) % m] = [(k + shift) % m for k in kids]
        return mid

    root = subtree(0, m - 1)
    children[-1] = [] if root is None else [(root + shift) % m]
    return children


def _broadcast_double_tree(b: Builder, n: int, count: int) -> None:
    """Two binary trees over ranks 1..n-1, each carrying half the buffer in chunks (QP 0 and
    QP 1), where the leaves of one are the inner nodes of the other (NCCL's double binary
    tree): every rank receives S and sends at most about S, and a chunk crosses only
    log2 n ranks, where the chain's crosses n-1.

    A rank's program waits for one chunk at a time, so it takes the chunks of both trees in
    the order they are due to arrive (its depth in each tree, in hops, and the chunk's place
    in the root's sends): a rank deep in one tree and shallow in the other then never holds
    up the shallow tree while it waits for the deep one."""
    m = n - 1
    halves = block_counts(count, 2)
    starts = offsets(halves)
    trees = [binary_tree(m, shift) for shift in (0, 1 if m > 1 else 0)]
    # both parents of a rank may send to it at once: chunks no larger than a switch port's
    # pause threshold keep that collision from pausing the parents' ports (and all they send)
    chunks = _fill_chunks(b, max(halves), 2 * max(1, m.bit_length()),
                          cap_bytes=b.sc.switch.pfc_xoff_bytes)
    costs = PathCosts.of_scenario(b.sc)
    chunk_ns = chunks[0][1] * WIDTH / costs.bytes_per_ns
    hop_ns = costs.alpha_ns + 2 * chunk_ns       # a parent sends each chunk to two children
    depths = [_depths(tree) for tree in trees]

    def pieces(t: int, lo: int, c: int) -> list[tuple[int, int]]:
        return [((starts[t] + lo_t) * WIDTH, c_t) for lo_t, c_t in _fit([(lo, c)], halves[t])]

    for lo, c in chunks:                          # the root: both halves, chunk by chunk
        for t, tree in enumerate(trees):
            for at, c_t in pieces(t, lo, c):
                for kid in tree[-1]:
                    b.send(0, kid + 1, t, at, at, c_t)
    for q in range(m):
        due = sorted((depths[t][q] * hop_ns + j * 2 * chunk_ns, t, j)
                     for t in range(2) for j in range(len(chunks)))
        for _, t, j in due:
            for at, c_t in pieces(t, *chunks[j]):
                b.recv(q + 1, t, c_t)
                for kid in trees[t].get(q, []):
                    b.send(q + 1, kid + 1, t, at, at, c_t)


def _depths(tree: dict[int, list[int]]) -> dict[int, int]:
    """Hops from the broadcast's root to each position of ``tree`` (its root: 1)."""
    depth, level, hops = {}, tree[-1], 1
    while level:
        depth.update((p, hops) for p in level)
        level = [kid for p in level for kid in tree.get(p, [])]
        hops += 1
    return depth


def _broadcast_scatter_ring(b: Builder, n: int, count: int) -> None:
    """Van de Geijn's broadcast: the root scatters one block to each of the other m = n-1
    ranks (QP +1), which then all-gather the blocks around a ring of their own (QP +0): the
    root sends S once and every other rank receives S once, against S per round of the tree."""
    m = n - 1
    counts = block_counts(count, m)
    off = offsets(counts)
    for q in range(m):
        b.send(0, q + 1, 1, off[q] * WIDTH, off[q] * WIDTH, counts[q])
    for q in range(m):                  # ring position q is rank q + 1
        b.recv(q + 1, 1, counts[q])
        for s in range(m - 1):
            out_blk, in_blk = (q - s) % m, (q - s - 1) % m
            at = off[out_blk] * WIDTH
            b.send(q + 1, (q + 1) % m + 1, 0, at, at, counts[out_blk])
            b.recv(q + 1, 0, counts[in_blk])


def scatter_direct_chunk_bytes(scenario, n: int, nbytes: int) -> int:
    """Chunk size of the pipelined scatter + direct broadcast of ``nbytes`` on ``n`` ranks (0:
    pieces go whole, where hosts do not pipeline; ``PathCosts.scatter_chunk_bytes``). A relay
    starts forwarding once its first chunk came, and the root hands out the first chunk of
    each of the n-1 pieces in turn, so the last relay starts n-1 chunk times late: chunks of
    1/SCATTER_CHUNKS_PER_PIECE of a piece keep that ramp short. Whole frames, at least one
    (smaller chunks add headers), and not so small that the hosts' per-message overheads
    exceed OVERHEAD_SHARE of a chunk's wire time; never above a quarter of a switch port's PFC
    pause threshold, so the few relays that happen to send to one rank at once do not pause
    their ports (and everything else they send): on 16 ranks at 16 MiB, 16 KiB chunks took
    1.139x the bound, 8 KiB chunks 1.015x.
    """
    return PathCosts.of_scenario(scenario).scatter_chunk_bytes(n, nbytes)


def scatter_direct_messages(scenario, n: int, nbytes: int) -> int:
    """Messages a host of the scatter + direct broadcast may have posted at once: the root's
    every chunk, or a relay's chunks to every other relay."""
    chunk = scatter_direct_chunk_bytes(scenario, n, nbytes) or nbytes
    piece = -(-nbytes // max(1, n - 1))
    return max(-(-piece // chunk) * (n - 1), (n - 2) * -(-piece // chunk))


def _broadcast_scatter_direct(b: Builder, n: int, count: int) -> None:
    """Scatter + direct all-gather, pipelined by chunk: the root cuts the buffer into m = n-1
    pieces and sends piece q to rank q+1 (QP +1), chunk 0 of every piece, then chunk 1, ...,
    so the root's link carries S once; each rank sends every chunk of its piece to the other
    m-1 ranks as soon as it arrived (QP +0). Relay q gets its chunks one chunk time after
    relay q-1, so it sends to q-1, q-2, ... in turn: at any moment relay q is one send behind
    relay q-1 and aims at q - s, two ranks from where relay q-1 aims (in the order q+1, q+2,
    ... every relay would aim at the same rank at once, and its port would pause them all).
    Every receiver's link carries S, its sends about S, and a byte crosses two hops whatever
    n is, where the double binary tree's cross log2 n."""
    m = n - 1
    counts = block_counts(count, m)
    off = offsets(counts)
    per = chunk_ranges(max(counts), WIDTH,
                       scatter_direct_chunk_bytes(b.sc, n, count * WIDTH))
    pieces = [_fit(per, c) for c in counts]
    for j in range(len(per)):                     # the root: chunk j of every piece in turn
        for q in range(m):
            if j < len(pieces[q]):
                lo, c = pieces[q][j]
                at = (off[q] + lo) * WIDTH
                b.send(0, q + 1, 1, at, at, c)
    for q in range(m):                            # relay q is rank q + 1
        for lo, c in pieces[q]:
            b.recv(q + 1, 1, c)
            at = (off[q] + lo) * WIDTH
            for s in range(1, m):
                b.send(q + 1, (q - s) % m + 1, 0, at, at, c)
        for s in range(1, m):
            for _, c in pieces[(q - s) % m]:
                b.recv(q + 1, 0, c)


def _broadcast_scatter_rd(b: Builder, n: int, count: int) -> None:
    """Scatter + recursive doubling (power-of-two n): the root sends block q to rank q (QP
    +log2 n), then all n ranks gather the blocks as ``_all_gather_rd`` does (QPs +0..)."""
    counts = block_counts(count, n)
    off = offsets(counts)
    scatter_qp = (n - 1).bit_length()
    for q in range(1, n):
        b.send(0, q, scatter_qp, off[q] * WIDTH, off[q] * WIDTH, counts[q])
        b.recv(q, scatter_qp, counts[q])
    _all_gather_rd(b, n, count)


def _broadcast_multicast(b: Builder, n: int, count: int) -> None:
    """The root sends the buffer once, to rank 1; the switches copy each of its packets to
    every other rank (``install_broadcast``), whose NIC writes it in place and completes the
    receive it waits for. No rank sends: every receiver's link carries S, the root's S. A
    group of one rank has no one to send to (as every broadcast of one rank)."""
    if n < 2:
        return
    dst = install_broadcast(b.sc, b.hosts, b.qp_base)
    b.send(0, b.hosts.index(dst), 0, 0, 0, count)
    for r in range(1, n):
        b.recv(r, 0, count)


def _broadcast_tree(b: Builder, n: int, count: int) -> None:
    rounds = (n - 1).bit_length()
    for v in range(n):                  # v: rank relative to the root (rank 0 of the group)
        if v:
            b.recv(v, 0, count)
        first = v.bit_length()          # a rank receives in round bit_length(v) - 1
        for k in range(first, rounds):
            child = v + (1 << k)
            if child < n:
                b.send(v, child, 0, 0, 0, count)


def _barrier(b: Builder, n: int, count: int) -> None:
    words = BARRIER_BYTES // WIDTH
    for r in range(n):
        for k in range(qps_needed("barrier", n)):
            b.send(r, (r + (1 << k)) % n, k, 0, 0, words)
            b.recv(r, k, words)


BUILDERS = {("all_gather", "ring"): _all_gather, ("all_gather", "rd"): _all_gather_rd,
            ("reduce_scatter", "ring"): _reduce_scatter,
            ("reduce_scatter", "rh"): _reduce_scatter_rh,
            ("all_gather", "direct"): _all_gather_direct,
            ("all_gather", "hierarchical"): _all_gather_hierarchical,
            ("reduce_scatter", "direct"): _reduce_scatter_direct,
            ("reduce_scatter", "hierarchical"): _reduce_scatter_hierarchical,
            ("all_to_all", "pairwise"): _all_to_all,
            ("broadcast", "binomial"): _broadcast_tree, ("broadcast", "chain"): _broadcast_chain,
            ("broadcast", "scatter_ring"): _broadcast_scatter_ring,
            ("broadcast", "scatter_rd"): _broadcast_scatter_rd,
            ("broadcast", "scatter_direct"): _broadcast_scatter_direct,
            ("broadcast", "double_tree"): _broadcast_double_tree,
            ("broadcast", "multicast"): _broadcast_multicast,
            ("barrier", "dissemination"): _barrier}
