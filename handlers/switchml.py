"""SwitchML aggregation in a switch (Sapio et al., NSDI'21), one level of a tree of switches.

A pool of slots in handler memory; each slot has two sets (the shadow copies) of k values, a
bitmap of the children that contributed and a count. A contribution (one RDMA WRITE ONLY
packet, header in the RETH VA: ``spin.wire.switchml``) from child c into set s of a slot:

* clears c's bit in the other set (the previous result there stays readable until every child
  has moved on, which is what lets a late retransmission be answered);
* if c's bit is not set in s: the first contribution writes the values, later ones add them;
  the last one completes the slot: the root multicasts the result to its host children and
  sends it to its switch children, an inner switch forwards its partial to its parent;
* if c's bit is set, it is a retransmission: answered from the slot (unicast to c) when the
  result is known, the partial is sent up again when this switch waits for its parent, and it
  is ignored while the slot still aggregates.

A packet from the parent switch (its IPv4 source) carries the result: stored in the slot, then
sent down the same way. Packets of other jobs, control packets and other traffic go on
unchanged (PROCEED). Several jobs share the memory, each with its own slot range and tree.

Children are told apart by the packet's source address (a table source -> child, as SwitchML
maps workers by address); a child switch is sent results at a host of its subtree that the
routes reach through it. ``drop_ppm``/``drop_result_ppm`` emulate SwitchML's drop simulator
(contributions lost on the way in, results lost on the way out), from a deterministic generator.

16-bit floats (float16, bfloat16; 2-byte elements, so a packet carries twice the elements of a
float32 one): each contribution is widened exactly to float32 and added in float32 (as SHARP
and Flare add natively); the completing contribution rounds the slot once to the 16-bit type
(nearest even, ``handlers.half_floats``), packed into the slot's first half, and that is what
goes on: the partial up (a parent takes a child switch's partial as any contribution, so every
switch with two or more children rounds once) or the result down, and what a retransmission
is answered from.

Float sums in child order (the default for float jobs; ``ordered`` in ``switch_memory``): a
float sum depends on the order of its additions, and contributions arrive in whatever order
the network and retransmissions give. So each set of a float slot has a row per child except
child 0 (child index = position in the switch's children list, the bit of the bitmap), and the
values hold the sum of children 0..f-1, f the number of trailing ones of the bitmap. A
contribution from child f is added into the values at once, followed by the rows of the
children f+1, f+2, ... that arrived before it; one from a child c > f is copied raw into its
row and added when its turn comes. Every result is then ((x0 + x1) + x2) + ... in child order,
a fixed function of the inputs and the tree: the same with or without loss, for any worker
count. When contributions arrive in child order no row is used and the cost is that of
arrival-order adds. Cost model (cycles as the decorator's 0.25 cycle/byte): a contribution
is one load/add/store (added) or one load/store (copied) per word, both covered by the
per-byte charge; each row added later costs one more cycle per element (load, widen, add).
``ordered=False`` keeps arrival-order adds (no rows: less memory for large fabrics; float
results then depend on arrival order). int32 sums and max are exact in any order: no rows.

Handler memory (int32; offsets below): globals and counters, a job index (job number ->
descriptor), descriptors, per job a child-of table over host ids, then the slots: per slot and
set ``[bitmap, count, state, tsi, values[k], rows[r][w]]`` (int32 or float32 words; a 16-bit
result packed two per word; r = children - 1 rows of w = k x element bytes / 4 words, as the
packet's bytes, for an ordered float job, else none); state 0 aggregating, 1 partial sent up,
2 result known. At most 31 children per switch (the bitmap is one int32 word).
"""
import numba as nb
import numpy as np

from handlers.half_floats import bf16_bits, f16_bits, f16_value
from spin.api import (DROP, PROCEED, SUCCESS, spin_add_cycles, spin_forward, spin_msg_addr,
                      spin_multicast, spin_qp, spin_send_packet, spin_source)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

# globals
G_DROP_PPM, G_DROP_RESULT_PPM, G_RNG = 0, 1, 2
G_CONTRIBUTIONS, G_COMPLETED, G_ANSWERED, G_IGNORED, G_DROPPED = 3, 4, 5, 6, 7
G_PASSED, G_PARTIALS, G_PARENT_RESULTS, G_N_HOSTS, G_MALFORMED = 8, 9, 10, 11, 12
G_SCRATCH = 13                      # one word to reinterpret float32 bits as a value
G_DEFERRED = 14                     # float contributions kept in a row to wait for their turn
JOB_INDEX = 16                      # 256 words: job number -> descriptor index, -1 unknown
MAX_JOBS = 16
MAX_CHILDREN = 31
DESC = JOB_INDEX + 256
DESC_WORDS = 48
# descriptor words
D_SLOTS, D_NSLOTS, D_K, D_NCHILD, D_PARENT_PORT, D_PARENT_NODE, D_GROUP = 0, 1, 2, 3, 4, 5, 6
D_CHILD_OF, D_SWITCH_CHILDREN = 7, 8
D_ROWS, D_ROW_WORDS = 9, 10         # rows per set (0: arrival-order adds), words per row
D_REP = 16                          # MAX_CHILDREN words: node to address child c at
TABLES = DESC + MAX_JOBS * DESC_WORDS
# per slot and set
S_BITMAP, S_COUNT, S_STATE, S_TSI, S_VALUES = 0, 1, 2, 3, 4
AGGREGATING, PARTIAL_SENT, RESULT_KNOWN = 0, 1, 2

MSG_SUM_INT32, MSG_SUM_FLOAT32, MSG_MAX_INT32 = 1, 2, 3     # as spin.wire.switchml
MSG_SUM_FLOAT16, MSG_SUM_BFLOAT16 = 4, 5


def _draw(mem):
    """Next value in [0, 1e6) of a 31-bit linear congruential generator kept in memory."""
    r = (np.int64(mem[G_RNG]) * 1103515245 + 12345) & 0x7FFFFFFF
    mem[G_RNG] = r
    return (r >> 8) % 1000000


def element_bytes(op):
    """Bytes per element of a packet of type ``op`` (the worker NICs use it too)."""
    return 2 if op == MSG_SUM_FLOAT16 or op == MSG_SUM_BFLOAT16 else 4


def _widen(mem, h, bf16):
    """A 16-bit float (bits ``h``) as float32, exactly."""
    if bf16:
        mem.view(np.uint32)[G_SCRATCH] = np.uint32(h) << 16
        return mem.view(np.float32)[G_SCRATCH]
    return np.float32(f16_value(np.int64(h)))


def _combine(mem, at, pkt, n, op, first):
    """Slot values at ``at`` = packet values (first) or values OP packet values; 16-bit
    packet values are widened to float32 first."""
    if op == MSG_SUM_FLOAT16 or op == MSG_SUM_BFLOAT16:
        vf = mem.view(np.float32)
        ph = pkt.view(np.uint16)
        bf16 = op == MSG_SUM_BFLOAT16
        for i in range(n):
            x = _widen(mem, ph[i], bf16)
            vf[at + i] = x if first else vf[at + i] + x
    elif first:
        src = pkt.view(np.int32)
        for i in range(n):
            mem[at + i] = src[i]
    elif op == MSG_SUM_FLOAT32:
        vf = mem.view(np.float32)
        pf = pkt.view(np.float32)
        for i in range(n):
            vf[at + i] = vf[at + i] + pf[i]
    elif op == MSG_MAX_INT32:
        pi = pkt.view(np.int32)
        for i in range(n):
            if pi[i] > mem[at + i]:
                mem[at + i] = pi[i]
    else:
        pi = pkt.view(np.int32)
        for i in range(n):
            s = (np.int64(mem[at + i]) + np.int64(pi[i])) & 0xFFFFFFFF   # int32 wraparound
            mem[at + i] = s - 0x100000000 if s >= 0x80000000 else s


def _trailing_ones(bitmap):
    """Children 0..f-1 all arrived: f (the prefix of the child order already summed)."""
    f = 0
    while (bitmap >> f) & 1:
        f += 1
    return f


def _ordered_add(ctx, mem, d, at, rows, pkt, n, op, c, bitmap):
    """Child ``c``'s contribution to a float slot summed in child order: added when children
    0..c-1 are in the values (then the rows of c+1, ... that arrived earlier follow), else
    copied raw into its row (``rows``: row of child 1) to wait for its turn."""
    f = _trailing_ones(bitmap)
    row_words = mem[d + D_ROW_WORDS]
    if c != f:
        raw = mem.view(np.uint8)
        start = 4 * (rows + (c - 1) * row_words)
        for i in range(pkt.shape[0]):
            raw[start + i] = pkt[i]
        mem[G_DEFERRED] += 1
        return
    _combine(mem, at, pkt, n, op, c == 0)
    if op != MSG_SUM_FLOAT32:
        spin_add_cycles(ctx, n // 2)           # widening 16-bit values, as arrival-order adds
    raw = mem.view(np.uint8)
    nbytes = pkt.shape[0]
    g = c + 1
    while (bitmap >> g) & 1:
        start = 4 * (rows + (g - 1) * row_words)
        _combine(mem, at, raw[start:start + nbytes], n, op, False)
        spin_add_cycles(ctx, n)
        g += 1


def _round16(mem, at, n, op):
    """The float32 sums at ``at`` rounded to the 16-bit type, packed over the first half (word
    at + i/2 is read before 16-bit element i overwrites half of it)."""
    bits = mem.view(np.uint32)
    out = mem.view(np.uint16)
    for i in range(n):
        b = np.int64(bits[at + i])
        out[2 * at + i] = bf16_bits(b) if op == MSG_SUM_BFLOAT16 else f16_bits(b)


def _to_packet(mem, at, pkt, nbytes):
    """The slot's values (as they travel) into the packet."""
    raw = mem.view(np.uint8)
    for i in range(nbytes):
        pkt[i] = raw[4 * at + i]


def _from_packet(mem, at, pkt, nbytes):
    """A result from the parent, stored as it travels."""
    raw = mem.view(np.uint8)
    for i in range(nbytes):
        raw[4 * at + i] = pkt[i]


def _send_down(ctx, mem, d, at, nbytes, va, skip_child):
    """The result (slot values at ``at``, already in the packet) to every child: multicast to
    the host children, a packet built from the slot to each switch child."""
    if mem[G_DROP_RESULT_PPM] > 0 and _draw(mem) < mem[G_DROP_RESULT_PPM]:
        mem[G_DROPPED] += 1
        return
    if mem[d + D_GROUP] >= 0:
        spin_multicast(ctx, mem[d + D_GROUP])
    switches = mem[d + D_SWITCH_CHILDREN]
    if switches != 0:
        raw = mem.view(np.uint8)
        for c in range(mem[d + D_NCHILD]):
            if (switches >> c) & 1 and c != skip_child:
                spin_send_packet(ctx, mem[d + D_REP + c], spin_qp(ctx), raw, 4 * at, nbytes, va)
                spin_add_cycles(ctx, 20)


def _answer(ctx, mem, d, at, nbytes, va, c):
    """A retransmission from child ``c`` of a completed slot: unicast from the shadow copy."""
    spin_send_packet(ctx, mem[d + D_REP + c], spin_qp(ctx), mem.view(np.uint8), 4 * at, nbytes,
                     va)
    spin_add_cycles(ctx, 20)
    mem[G_ANSWERED] += 1


_draw = nb.njit(_nrt=False)(_draw)          # handlers are built without NRT
element_bytes = nb.njit(_nrt=False)(element_bytes)
_widen = nb.njit(_nrt=False)(_widen)
_combine = nb.njit(_nrt=False)(_combine)
_trailing_ones = nb.njit(_nrt=False)(_trailing_ones)
_ordered_add = nb.njit(_nrt=False)(_ordered_add)
_round16 = nb.njit(_nrt=False)(_round16)
_to_packet = nb.njit(_nrt=False)(_to_packet)
_from_packet = nb.njit(_nrt=False)(_from_packet)
_send_down = nb.njit(_nrt=False)(_send_down)
_answer = nb.njit(_nrt=False)(_answer)


# One load, add and store per int32 (0.25 cycle/byte, as the reduce handler) plus the header
# decode, the bitmap update and issuing a command: a PsPIN-class core per packet. A 16-bit
# element costs what an int32 one does (the widening folds into the load: RISC-V Zfh's
# fcvt.s.h), charged below, and rounding a completed slot one cycle per element. A float
# contribution that arrives out of child order is copied to its row (a load and a store per
# word: the per-byte charge) and its row added later costs one cycle per element
# (``_ordered_add``).
@handler(cycles=60, cycles_per_byte=0.25)
def switchml_payload(ctx, pkt, mem):
    va = spin_msg_addr(ctx)
    op = (va >> 60) & 0xF
    job = (va >> 48) & 0xFF
    if op < MSG_SUM_INT32 or op > MSG_SUM_BFLOAT16 or mem[JOB_INDEX + job] < 0:
        mem[G_PASSED] += 1
        return PROCEED                          # control packets, other jobs, other traffic
    d = DESC + DESC_WORDS * mem[JOB_INDEX + job]
    pool = (va >> 32) & 0xFFFF
    slot = pool & 0x7FFF
    s = pool >> 15
    k = mem[d + D_K]
    nbytes = pkt.shape[0]
    width = element_bytes(op)
    n = nbytes // width
    if slot >= mem[d + D_NSLOTS] or n > k or nbytes % width != 0 or n == 0:
        mem[G_MALFORMED] += 1
        return DROP
    rows = mem[d + D_ROWS]
    ordered = rows > 0 and op != MSG_SUM_INT32 and op != MSG_MAX_INT32
    if ordered and nbytes > 4 * mem[d + D_ROW_WORDS]:
        mem[G_MALFORMED] += 1
        return DROP                             # longer than a row: not this job's type
    words = 4 + k + rows * mem[d + D_ROW_WORDS]
    base = mem[d + D_SLOTS] + (2 * slot + s) * words
    at = base + S_VALUES
    src = spin_source(ctx)
    if src == mem[d + D_PARENT_NODE]:           # the result, from the parent switch
        mem[G_PARENT_RESULTS] += 1
        _from_packet(mem, at, pkt, nbytes)
        mem[base + S_STATE] = RESULT_KNOWN
        _send_down(ctx, mem, d, at, nbytes, va, -1)
        return SUCCESS
    if src < 0 or src >= mem[G_N_HOSTS] or mem[mem[d + D_CHILD_OF] + src] < 0:
        mem[G_PASSED] += 1
        return PROCEED                          # not from this job's subtree
    if mem[G_DROP_PPM] > 0 and _draw(mem) < mem[G_DROP_PPM]:
        mem[G_DROPPED] += 1
        return DROP                             # drop simulator: lost on the way in
    c = mem[mem[d + D_CHILD_OF] + src]
    bit = 1 << c
    other = mem[d + D_SLOTS] + (2 * slot + 1 - s) * words
    mem[other + S_BITMAP] = mem[other + S_BITMAP] & ~bit
    bitmap = mem[base + S_BITMAP]
    if bitmap & bit == 0:
        first = bitmap == 0
        if ordered:
            _ordered_add(ctx, mem, d, at, at + k, pkt, n, op, c, bitmap)
        else:
            _combine(mem, at, pkt, n, op, first)
            if width == 2:
                spin_add_cycles(ctx, n // 2)
        if first:
            mem[base + S_COUNT] = 1
            mem[base + S_STATE] = AGGREGATING
            mem[base + S_TSI] = va & 0xFFFFFFFF
        else:
            mem[base + S_COUNT] += 1
        mem[base + S_BITMAP] = bitmap | bit
        mem[G_CONTRIBUTIONS] += 1
        if mem[base + S_COUNT] == mem[d + D_NCHILD]:
            if width == 2:
                _round16(mem, at, n, op)
                spin_add_cycles(ctx, n)
            _to_packet(mem, at, pkt, nbytes)
            if mem[d + D_PARENT_PORT] < 0:
                mem[base + S_STATE] = RESULT_KNOWN
                mem[G_COMPLETED] += 1
                _send_down(ctx, mem, d, at, nbytes, va, -1)
            else:
                mem[base + S_STATE] = PARTIAL_SENT
                mem[G_PARTIALS] += 1
                spin_forward(ctx, mem[d + D_PARENT_PORT])
        return SUCCESS
    state = mem[base + S_STATE]                 # a retransmission
    if state == RESULT_KNOWN:
        _answer(ctx, mem, d, at, nbytes, va, c)
    elif state == PARTIAL_SENT:
        _to_packet(mem, at, pkt, nbytes)
        spin_forward(ctx, mem[d + D_PARENT_PORT])
        mem[G_PARTIALS] += 1
    else:
        mem[G_IGNORED] += 1
    return SUCCESS


def _rows(job: dict) -> tuple[int, int]:
    """(rows per set, words per row) of a job on a switch: one row per child but the first for
    a float sum in child order, none otherwise."""
    op = job.get("op", MSG_SUM_INT32)
    if not job.get("ordered", True) or op in (MSG_SUM_INT32, MSG_MAX_INT32):
        return 0, 0
    return len(job["children"]) - 1, (job["k"] * element_bytes(op) + 3) // 4


def slot_words(job: dict) -> int:
    """Words of one set of one slot: header, values, rows."""
    rows, row_words = _rows(job)
    return 4 + job["k"] + rows * row_words


def memory_words(jobs: list[dict], n_hosts: int) -> int:
    """Words of handler memory a switch needs for ``jobs`` (see ``switch_memory``)."""
    return TABLES + sum(n_hosts + 2 * j["slots"] * slot_words(j) for j in jobs)


def switch_memory(jobs: list[dict], n_hosts: int, *, drop_ppm: int = 0,
                  drop_result_ppm: int = 0, seed: int = 1, words: int | None = None) -> np.ndarray:
    """Handler memory of one switch for ``jobs``: dicts with ``job`` (number), ``slots``, ``k``
    (elements per packet), ``children`` (list of (kind, node, hosts): kind "host" or "switch",
    the node to address the child at, the host ids of its subtree), ``parent_port`` (-1 at the
    root), ``parent_node`` (-1 at the root) and ``group`` (multicast group of the host children,
    -1 if none), optionally ``op`` (the job's element type, ``MSG_SUM_*``; default int32) and
    ``ordered`` (default True: float sums in child order, with a row per child; False: in
    arrival order). ``words`` pads the array (every switch of a scenario gets the same size)."""
    if len(jobs) > MAX_JOBS:
        raise ValueError(f"{len(jobs)} jobs on one switch; at most {MAX_JOBS}")
    need = memory_words(jobs, n_hosts)
    mem = np.zeros(max(need, words or 0), np.int32)
    mem[G_DROP_PPM], mem[G_DROP_RESULT_PPM], mem[G_RNG] = drop_ppm, drop_result_ppm, seed
    mem[G_N_HOSTS] = n_hosts
    mem[JOB_INDEX:JOB_INDEX + 256] = -1
    nxt = TABLES
    for i, j in enumerate(jobs):
        children = j["children"]
        if not 1 <= len(children) <= MAX_CHILDREN:
            raise ValueError(f"job {j['job']}: {len(children)} children on one switch; "
                             f"1..{MAX_CHILDREN}")
        if mem[JOB_INDEX + j["job"]] >= 0:
            raise ValueError(f"job {j['job']} twice on one switch")
        mem[JOB_INDEX + j["job"]] = i
        d = DESC + DESC_WORDS * i
        child_of = nxt
        mem[child_of:child_of + n_hosts] = -1
        nxt += n_hosts
        switches = 0
        for c, (kind, node, hosts) in enumerate(children):
            mem[d + D_REP + c] = node
            mem[[child_of + h for h in hosts]] = c
            if kind == "switch":
                switches |= 1 << c
        mem[d + D_SLOTS], mem[d + D_NSLOTS], mem[d + D_K] = nxt, j["slots"], j["k"]
        mem[d + D_NCHILD], mem[d + D_CHILD_OF], mem[d + D_SWITCH_CHILDREN] = (
            len(children), child_of, switches)
        mem[d + D_PARENT_PORT], mem[d + D_PARENT_NODE] = j["parent_port"], j["parent_node"]
        mem[d + D_GROUP] = j["group"]
        mem[d + D_ROWS], mem[d + D_ROW_WORDS] = _rows(j)
        nxt += 2 * j["slots"] * slot_words(j)
    return mem


def slot_view(mem: np.ndarray, job: int, slot: int, s: int) -> dict:
    """One set of one slot of ``job`` as a dict (bitmap, count, state, tsi, values), for tests
    and tools reading a switch's memory after a run."""
    d = DESC + DESC_WORDS * int(mem[JOB_INDEX + job])
    k = int(mem[d + D_K])
    words = 4 + k + int(mem[d + D_ROWS]) * int(mem[d + D_ROW_WORDS])
    base = int(mem[d + D_SLOTS]) + (2 * slot + s) * words
    return {"bitmap": int(mem[base]), "count": int(mem[base + 1]), "state": int(mem[base + 2]),
            "tsi": int(mem[base + 3]), "values": mem[base + 4:base + 4 + k].copy()}


@program_factory
def switchml_switch_program(memory: np.ndarray | None = None) -> HandlerProgram:
    """The switch program; ``memory`` from ``switch_memory`` (default: an empty table that
    passes everything on)."""
    mem = memory if memory is not None else switch_memory([], 0)
    return HandlerProgram("switchml", payload=switchml_payload, memory=mem)
