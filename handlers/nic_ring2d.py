"""NIC-offloaded two-dimensional rings (``spin.collectives.nic_ring2d``): one stream of the
allreduce, reduced and forwarded packet by packet by the NICs, so a four-stream allreduce keeps
an accelerator's four ports busy without the host posting a message per ring step.

A stream's vector is cut into packets (MTU-sized ranges); packets into L1 blocks along the
first dimension's ring, a block's packets into L2 sub-blocks along the second's. Block k starts
at ring position L1-1-k and is complete at the position before it (so each rank needs its
host's blocks in ascending order from L1-1-pos, two posts); sub-block m likewise along the
second ring. A packet g of block k, sub-block m travels:

* RS1 (reduce-scatter 1): from its start position to its owner along ring 1; every NIC on the
  way adds its host's values (streamed in by the host's post, loopback) and sends it on. The
  host's values and the partial meet in g's slot, whichever comes second adds.
* RS2: at block k's owner column, from the sub-block's start to its owner along ring 2; the
  partial meets the RS1 result of that rank (a second slot parks a partial that comes first).
* At the owner: the finished sum goes to host memory and starts AG2 along ring 2 and AG1 along
  ring 1; every AG2 receiver writes it, sends it on along ring 2 and starts its own AG1; every
  AG1 receiver writes it and sends it on, until each ring's last rank.

Once every byte of the stream's result is written, the handler raises one host event. Lossless
fabrics only (no loss timer). RETH address: ``tag << TAG_SHIFT | host address of the range``.

Handler memory (int64): ``HEADER_WORDS`` parameter and counter words, then bytes: a 4-byte cell
per HPU (16-bit adds), a flag byte per packet, slot A (one MTU per packet of the stream) and
slot B (one MTU per packet of the owned block).
"""
import numpy as np

from handlers.nic_allreduce import FLOAT16, WIDTHS, _add_dense, DTYPE_CODES
from spin.api import (SUCCESS, spin_dma_to_host, spin_host_event, spin_hpu,
                      spin_msg_addr, spin_msg_offset, spin_send_packet)
from spin.handler import HandlerProgram, handler
from spin.jit import njit
from spin.scenario_code import program_factory

(L1, L2, POS1, POS2, RIGHT1, RIGHT2, QP, DTYPE, COUNT, PACKETS, PER, MTU, DATA_ADDR, TOTAL,
 DONE, FLAGS_OFF, A_OFF, B_OFF, OWN_START, EVENTS, EARLY_RS1, EARLY_RS2) = range(22)
HEADER_WORDS = 24

TAG_SHIFT = 40
ADDR_MASK = (1 << TAG_SHIFT) - 1
LOCAL, RS1, RS2, AG2, AG1 = 1 << 20, 1, 2, 3, 4
LOCAL_IN, RS1_IN, RS1_DONE, RS2_IN = 1, 2, 4, 8       # flag bits of a packet


@njit(cache=True, _nrt=False)
def split(total, parts, i):
    """(first, length) of part ``i`` of ``total`` items cut into ``parts`` differing by at
    most one, the first ones longer (``spin.collectives.common.block_counts``)."""
    base, extra = total // parts, total % parts
    return i * base + min(i, extra), base + (1 if i < extra else 0)


@njit(cache=True, _nrt=False)
def part_of(total, parts, x):
    """The part of ``split(total, parts, .)`` that holds item ``x``."""
    base, extra = total // parts, total % parts
    if x < extra * (base + 1):
        return x // (base + 1)
    return extra + (x - extra * (base + 1)) // base


@njit(cache=True, _nrt=False)
def width(mem):
    return 2 if mem[DTYPE] >= FLOAT16 else 4


@njit(cache=True, _nrt=False)
def locate(mem, g):
    """(block, first packet of the block, sub-block, its first packet) of packet ``g``."""
    k = part_of(mem[PACKETS], mem[L1], g)
    k0, kn = split(mem[PACKETS], mem[L1], k)
    m = part_of(kn, mem[L2], g - k0)
    m0, _ = split(kn, mem[L2], m)
    return k, k0, m, k0 + m0


@njit(cache=True, _nrt=False)
def _written(ctx, mem, nbytes):
    mem[DONE] += nbytes
    if mem[DONE] == mem[TOTAL]:
        mem[EVENTS] += 1
        spin_host_event(ctx, 1)


@njit(cache=True, _nrt=False)
def _finish(ctx, mem, byt, at, ln, addr):
    """The sum of a packet (slot A at ``at``): to host memory, then AG2 and AG1 from here."""
    spin_dma_to_host(ctx, addr, byt, at, ln)
    _written(ctx, mem, ln)
    if mem[L2] > 1:
        spin_send_packet(ctx, mem[RIGHT2], mem[QP], byt, at, ln, (AG2 << TAG_SHIFT) | addr)
    if mem[L1] > 1:
        spin_send_packet(ctx, mem[RIGHT1], mem[QP], byt, at, ln, (AG1 << TAG_SHIFT) | addr)


@njit(cache=True, _nrt=False)
def _after_rs2(ctx, mem, byt, at, ln, addr, m):
    """The RS2 partial in slot A is this rank's contribution added: done or sent on."""
    if mem[POS2] == (mem[L2] - 2 - m) % mem[L2]:
        _finish(ctx, mem, byt, at, ln, addr)
    else:
        spin_send_packet(ctx, mem[RIGHT2], mem[QP], byt, at, ln, (RS2 << TAG_SHIFT) | addr)


@njit(cache=True, _nrt=False)
def _rs1_complete(ctx, mem, byt, g, at, ln, addr, k0, m):
    """Slot A holds the block-sum along ring 1 (this rank owns the block): start, join or wait
    for the RS2 of its sub-block."""
    if mem[L2] == 1:
        _finish(ctx, mem, byt, at, ln, addr)
        return
    if mem[POS2] == (mem[L2] - 1 - m) % mem[L2]:
        spin_send_packet(ctx, mem[RIGHT2], mem[QP], byt, at, ln, (RS2 << TAG_SHIFT) | addr)
        return
    f = mem[FLAGS_OFF] + g
    if byt[f] & RS2_IN:
        b = mem[B_OFF] + (g - mem[OWN_START]) * mem[MTU]
        _add_dense(byt, at, byt[b:b + ln], ln // width(mem), mem[DTYPE],
                   spin_hpu(ctx) * 8)
        _after_rs2(ctx, mem, byt, at, ln, addr, m)
    else:
        byt[f] = byt[f] | RS1_DONE


@njit(cache=True, _nrt=False)
def _after_rs1(ctx, mem, byt, g, at, ln, addr, k, k0, m):
    """Slot A holds a partial with this rank's values in: complete at the owner, else on."""
    if mem[POS1] == (mem[L1] - 2 - k) % mem[L1]:
        _rs1_complete(ctx, mem, byt, g, at, ln, addr, k0, m)
    else:
        spin_send_packet(ctx, mem[RIGHT1], mem[QP], byt, at, ln, (RS1 << TAG_SHIFT) | addr)


@njit(cache=True, _nrt=False)
def _copy(byt, at, src, ln):
    for j in range(ln):
        byt[at + j] = src[j]


@njit(cache=True, _nrt=False)
def _local(ctx, mem, byt, pkt, g, addr):
    """One MTU of the host's vector (posts start on packet boundaries, so a post's packets are
    the stream's packets)."""
    ln = pkt.shape[0]
    k, k0, m, _ = locate(mem, g)
    at = mem[A_OFF] + g * mem[MTU]
    f = mem[FLAGS_OFF] + g
    if mem[L1] == 1:
        _copy(byt, at, pkt, ln)
        _rs1_complete(ctx, mem, byt, g, at, ln, addr, k0, m)
    elif mem[POS1] == (mem[L1] - 1 - k) % mem[L1]:     # RS1 starts here: send it as it is
        spin_send_packet(ctx, mem[RIGHT1], mem[QP], pkt, 0, ln, (RS1 << TAG_SHIFT) | addr)
    elif byt[f] & RS1_IN:
        _add_dense(byt, at, pkt, ln // width(mem), mem[DTYPE], spin_hpu(ctx) * 8)
        _after_rs1(ctx, mem, byt, g, at, ln, addr, k, k0, m)
    else:
        _copy(byt, at, pkt, ln)
        byt[f] = byt[f] | LOCAL_IN


# Per packet: one add per element (0.25 cycle/byte, as handlers/reduce.py) or a copy into its
# slot, and a send or two.
@handler(cycles=60, cycles_per_byte=0.25)
def ring2d_payload(ctx, pkt, mem):
    va = spin_msg_addr(ctx) + spin_msg_offset(ctx)
    tag = va >> TAG_SHIFT
    addr = va & ADDR_MASK
    w = width(mem)
    byt = mem[HEADER_WORDS:].view(np.uint8)
    rel = addr - mem[DATA_ADDR]
    g = rel // (mem[PER] * w)
    ln = pkt.shape[0]
    if rel < 0 or rel % (mem[PER] * w) != 0 or g >= mem[PACKETS]:
        raise ValueError("nic ring2d: packet outside the stream's ranges")
    if ln != min(mem[PER], mem[COUNT] - g * mem[PER]) * w:
        raise ValueError("nic ring2d: packet length is not its range's")
    if tag == LOCAL:                # the host's post: its packets are the stream's packets
        _local(ctx, mem, byt, pkt, g, addr)
        return SUCCESS
    k, k0, m, _ = locate(mem, g)
    at = mem[A_OFF] + g * mem[MTU]
    f = mem[FLAGS_OFF] + g
    if tag == RS1:
        if byt[f] & LOCAL_IN:
            _add_dense(byt, at, pkt, ln // w, mem[DTYPE], spin_hpu(ctx) * 8)
            _after_rs1(ctx, mem, byt, g, at, ln, addr, k, k0, m)
        else:
            _copy(byt, at, pkt, ln)
            byt[f] = byt[f] | RS1_IN
            mem[EARLY_RS1] += 1
    elif tag == RS2:
        if byt[f] & RS1_DONE:
            _add_dense(byt, at, pkt, ln // w, mem[DTYPE], spin_hpu(ctx) * 8)
            _after_rs2(ctx, mem, byt, at, ln, addr, m)
        else:
            _copy(byt, mem[B_OFF] + (g - mem[OWN_START]) * mem[MTU], pkt, ln)
            byt[f] = byt[f] | RS2_IN
            mem[EARLY_RS2] += 1
    elif tag == AG2:
        spin_dma_to_host(ctx, addr, pkt, 0, ln)
        _written(ctx, mem, ln)
        if (mem[POS2] + 1) % mem[L2] != (mem[L2] - 2 - m) % mem[L2]:
            spin_send_packet(ctx, mem[RIGHT2], mem[QP], pkt, 0, ln, (AG2 << TAG_SHIFT) | addr)
        if mem[L1] > 1:
            spin_send_packet(ctx, mem[RIGHT1], mem[QP], pkt, 0, ln, (AG1 << TAG_SHIFT) | addr)
    elif tag == AG1:
        spin_dma_to_host(ctx, addr, pkt, 0, ln)
        _written(ctx, mem, ln)
        if (mem[POS1] + 1) % mem[L1] != (mem[L1] - 2 - k) % mem[L1]:
            spin_send_packet(ctx, mem[RIGHT1], mem[QP], pkt, 0, ln, (AG1 << TAG_SHIFT) | addr)
    else:
        raise ValueError("nic ring2d: unknown packet tag")
    return SUCCESS


def stream_memory(*, l1: int, l2: int, pos1: int, pos2: int, right1: int, right2: int, qp: int,
                  dtype: str, count: int, data_addr: int, mtu: int, hpus: int) -> np.ndarray:
    """Handler memory of one rank's stream (module docstring)."""
    code = DTYPE_CODES[dtype]
    w = WIDTHS[code]
    per = mtu // w
    packets = -(-count // per)
    own = (l1 - 2 - pos1) % l1 if l1 > 1 else 0
    own_start, own_packets = (0, packets) if l1 == 1 else _split(packets, l1, own)
    flags = 8 * hpus
    a_off = -(-(flags + packets) // 8) * 8
    b_off = a_off + packets * mtu
    words = HEADER_WORDS + -(-(b_off + own_packets * mtu) // 8)
    mem = np.zeros(words, np.int64)
    mem[L1], mem[L2], mem[POS1], mem[POS2] = l1, l2, pos1, pos2
    mem[RIGHT1], mem[RIGHT2], mem[QP], mem[DTYPE] = right1, right2, qp, code
    mem[COUNT], mem[PACKETS], mem[PER], mem[MTU] = count, packets, per, mtu
    mem[DATA_ADDR], mem[TOTAL] = data_addr, count * w
    mem[FLAGS_OFF], mem[A_OFF], mem[B_OFF], mem[OWN_START] = flags, a_off, b_off, own_start
    return mem


def _split(total: int, parts: int, i: int) -> tuple[int, int]:
    base, extra = divmod(total, parts)
    return i * base + min(i, extra), base + (1 if i < extra else 0)


def local_posts(mem: np.ndarray, pieces: int) -> list[tuple[int, int]]:
    """(host address, bytes) of the host's posts of its stream, in the order ring 1 consumes
    the blocks (ascending from block L1-1-pos1, wrapping to block 0), cut into ``pieces`` posts
    of about equal length (one more where the order wraps), so the posts of several streams
    can alternate and every stream's first blocks arrive first."""
    w = WIDTHS[int(mem[DTYPE])]
    per, count, packets, l1 = (int(mem[PER]), int(mem[COUNT]), int(mem[PACKETS]), int(mem[L1]))
    first = _split(packets, l1, (l1 - 1 - int(mem[POS1])) % l1)[0] if l1 > 1 else 0
    order = [(first + i) % packets for i in range(0, packets)]      # packet indices
    out = []
    for j in range(min(pieces, packets)):
        lo, n = _split(packets, min(pieces, packets), j)
        run = order[lo:lo + n]
        cut = next((i for i in range(1, len(run)) if run[i] != run[i - 1] + 1), len(run))
        for part in (run[:cut], run[cut:]):
            if part:
                a, b = part[0] * per, min((part[-1] + 1) * per, count)
                out.append((int(mem[DATA_ADDR]) + a * w, (b - a) * w))
    return out


def local_address(addr: int) -> int:
    """RETH address of a host's post of its own bytes at ``addr`` to its NIC."""
    return (LOCAL << TAG_SHIFT) | addr


@program_factory
def nic_ring2d_program(memory: np.ndarray | None = None) -> HandlerProgram:
    """The program (one for every rank and stream: they differ only in handler memory)."""
    mem = memory if memory is not None else np.zeros(HEADER_WORDS, np.int64)
    return HandlerProgram("nic_ring2d", payload=ring2d_payload, memory=mem)
