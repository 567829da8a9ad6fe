"""NIC-offloaded ring allreduce (sPIN / Flare style): the NICs reduce and forward, the hosts only
post their vector to their own NIC and wait for one event.

Streaming the host's data: rank r's host posts its vector to its own node, one RDMA WRITE per
block, in the order the ring needs them (block r, r-1, r-2, ...: ``local_address`` tags them).
The NIC's send engine reads them from host memory with pipelined PCIe reads (as any post: reads
back to back, paced by PCIe bandwidth, no round trip per chunk) and turns them around through
its loopback into its own receive path. No handler ever waits on PCIe: a packet of the host's
vector and the neighbour's partial of the same range meet in the range's slot of handler memory,
and whichever arrives second does the add.

* step 0: a packet of block r (the host's own) is sent on to the right as it is.
* reduce-scatter step s (0..n-2) from the left: the partial sum of one packet-sized range of
  block (r-s-1) mod n; plus the host's values of that range, it goes on to the right
  (``spin_send_packet``) as step s+1. At step n-2 the sum is complete: it is DMAed to host
  memory (the rank's result) and sent on as allgather step n-1.
* allgather step s (n-1..2n-3): a finished range; the handler DMAs it to host memory and
  forwards it until every rank has it.
* once every byte of its result is written, the handler raises one host event.

Block b is summed in the host ring's order (x_b + x_{b+1} + ... added one rank at a time), so
float results equal the host ring's bit for bit.

The step travels in the RETH address: ``va = step << STEP_SHIFT | host address of the range``;
tags above the steps mark the host's own data (LOCAL_TAG), the loss timer (TIMER_TAG) and NACKs
(NACK_TAG + step). Everything uses QP ``qp`` (the execution context matches it): the host's
multi-packet posts come from the NIC's own node, NIC-sent single-packet messages from the
neighbours, so their receive keys never meet.

Wire encodings after the first hop (the first hop always carries the host's dense values):

* ``DENSE``: the values as stored (int32, float32, float16, bfloat16 bits).
* ``INT8`` (float32 data): ``[float32 scale][int8 q x m]``, scale = max|x| / 127 per packet,
  value = q * scale. Every hop re-quantizes its partial; the last one writes the dequantized sum,
  so every rank holds the same bits.
* ``SPARSE`` / ``SPARSE_HASH`` (int32, float32): Flare's (index, value) blocks,
  ``[int32 npairs][uint16 index x npairs][pad to 4][value x npairs]``; a range whose pairs would
  not be smaller than its dense values is sent dense (the receiver tells them apart by length).
  ``SPARSE`` aggregates in dense storage (the range's values), ``SPARSE_HASH`` in a hash table of
  ``hash_slots`` entries per HPU; a pair that finds no slot within ``HASH_PROBES`` probes is sent
  on unaggregated (Flare's stash), and receivers add duplicate indices.

Loss (per hop, in the handlers): every slot keeps what this NIC sent for its range (the partial
it produced, or the finished range it forwarded), and flag bits make every packet idempotent.
With ``timeout_ns`` > 0 a handler timer (``spin_set_timer``) ticks while packets from the left
are missing; a tick that finds no new arrival since the previous one sends the left neighbour a
NACK per missing (step, range), and the left resends it from its slot if it sent it (else it is
missing its own input, which its own timer recovers first). Lossless runs see no NACK.

Handler memory (int64): ``HEADER_WORDS`` words of parameters and counters (names below), then a
byte area: one work area per HPU (``area_bytes``: local values, outgoing packet, hash table),
a flag byte and an int32 length per (block, packet), and one MTU slot per (block, packet).
"""
import math

import numpy as np

from handlers.half_floats import bf16_bits, f16_bits, f16_value
from spin.api import (SUCCESS, spin_add_cycles, spin_dma_to_host, spin_host_event, spin_hpu,
                      spin_msg_addr, spin_msg_offset, spin_send_packet, spin_set_timer)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory
from spin.jit import njit

# parameter and counter words
(N, RANK, LEFT, RIGHT, QP, DTYPE, MODE, TOTAL, DONE, COUNT, PPB, MTU, AREA, HASH_SLOTS,
 FLAGS_OFF, LENS_OFF, SLOTS_OFF, MAX_PAIRS, DATA_ADDR, EVENTS, DUPLICATES, STASHED,
 DENSE_FALLBACKS, TIMEOUT_PS, RECEIVED, EXPECTED, RECEIVED_AT_TICK, TIMER_ARMED, NACKS_SENT,
 RESENDS, EARLY_PARTIALS, TICKS) = range(32)
HEADER_WORDS = 32
NACK_LIMIT = 200          # NACKs per tick (a handler issues at most 256 commands)

DENSE, INT8, SPARSE, SPARSE_HASH = 0, 1, 2, 3
MODES = {"dense": DENSE, "int8": INT8, "sparse": SPARSE, "sparse_hash": SPARSE_HASH}
INT32, FLOAT32, FLOAT16, BFLOAT16 = 0, 1, 2, 3
DTYPE_CODES = {"int32": INT32, "float32": FLOAT32, "float16": FLOAT16, "bfloat16": BFLOAT16}
WIDTHS = {INT32: 4, FLOAT32: 4, FLOAT16: 2, BFLOAT16: 2}

STEP_SHIFT = 40
ADDR_MASK = (1 << STEP_SHIFT) - 1
LOCAL_TAG, TIMER_TAG, NACK_TAG = 1 << 20, (1 << 20) + 1, 1 << 21
LOCAL_IN, RING_IN, RS_DONE, AG_SEEN = 1, 2, 4, 8     # flag bits of a (block, packet) slot
HASH_PROBES = 8
SPARSE_HEADER = 4


# --- 16-bit floats: add in float32, round once (as spin.collectives.common.sum_float16/bf16) ---
@njit(cache=True, _nrt=False)
def _add16(dst, src, m, is_bf16, cell):
    """dst[i] = round16(float32(dst[i]) + float32(src[i])); ``cell`` is 4 scratch bytes."""
    cf = cell.view(np.float32)
    cu = cell.view(np.uint32)
    for i in range(m):
        if is_bf16:
            cu[0] = np.uint32(dst[i]) << 16
            a = cf[0]
            cu[0] = np.uint32(src[i]) << 16
            s = a + cf[0]
        else:
            s = np.float32(f16_value(np.int64(dst[i]))) + np.float32(f16_value(np.int64(src[i])))
        cf[0] = s
        b = np.int64(cu[0])
        dst[i] = np.uint16(bf16_bits(b) if is_bf16 else f16_bits(b))


@njit(cache=True, _nrt=False)
def _add_dense(byt, dst, pkt, m, dtype, cell):
    """local values (bytes at ``dst``) += the packet's dense values."""
    if dtype == INT32:
        d = byt[dst:dst + 4 * m].view(np.int32)
        s = pkt[:4 * m].view(np.int32)
        for i in range(m):
            d[i] += s[i]
    elif dtype == FLOAT32:
        df = byt[dst:dst + 4 * m].view(np.float32)
        sf = pkt[:4 * m].view(np.float32)
        for i in range(m):
            df[i] = df[i] + sf[i]
    else:
        _add16(byt[dst:dst + 2 * m].view(np.uint16), pkt[:2 * m].view(np.uint16), m,
               dtype == BFLOAT16, byt[cell:cell + 4])


# --- int8 with a per-packet scale ------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _quantize(vals, out, m):
    """out = [scale][int8 q...] with scale = max|v| / 127; returns the packet length."""
    top = np.float32(0.0)
    for i in range(m):
        top = max(top, abs(vals[i]))
    scale = top / np.float32(127.0)
    out[0:4].view(np.float32)[0] = scale
    q = out[4:4 + m].view(np.int8)
    for i in range(m):
        if scale > 0:
            x = math.floor(vals[i] / scale + 0.5)
            q[i] = np.int8(max(-127.0, min(127.0, x)))
        else:
            q[i] = np.int8(0)
    return 4 + m


@njit(cache=True, _nrt=False)
def _dequantize(pkt, vals, m):
    scale = pkt[0:4].view(np.float32)[0]
    q = pkt[4:4 + m].view(np.int8)
    for i in range(m):
        vals[i] = np.float32(q[i]) * scale


# --- sparse (index, value) blocks -------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _values_at(npairs):
    return SPARSE_HEADER + ((2 * npairs + 3) // 4) * 4


@njit(cache=True, _nrt=False)
def _sparse_len(npairs):
    return _values_at(npairs) + 4 * npairs


@njit(cache=True, _nrt=False)
def _emit_dense_storage(vals, out, outv, m):
    """Non-zeros of ``vals`` as (index, value) pairs in ``out`` (``outv``: the same bytes as
    values), or the dense values when pairs would not be shorter; returns the packet length."""
    nnz = 0
    for i in range(m):
        if vals[i] != 0:
            nnz += 1
    if _sparse_len(nnz) >= 4 * m:
        for i in range(m):
            outv[i] = vals[i]
        return 4 * m
    out[0:4].view(np.int32)[0] = nnz
    idx = out[SPARSE_HEADER:SPARSE_HEADER + 2 * nnz].view(np.uint16)
    v0 = _values_at(nnz) // 4
    j = 0
    for i in range(m):
        if vals[i] != 0:
            idx[j] = i
            outv[v0 + j] = vals[i]
            j += 1
    return _sparse_len(nnz)


@njit(cache=True, _nrt=False)
def _add_sparse(pkt, pktv, vals, m):
    """vals += the packet's pairs or dense values (``pktv``: its bytes as values); duplicate
    indices add up."""
    plen = pkt.shape[0]
    if plen == 4 * m:
        for i in range(m):
            vals[i] = vals[i] + pktv[i]
        return
    npairs = pkt[0:4].view(np.int32)[0]
    if npairs < 0 or _sparse_len(npairs) != plen:
        raise ValueError("nic allreduce: malformed sparse packet")
    idx = pkt[SPARSE_HEADER:SPARSE_HEADER + 2 * npairs].view(np.uint16)
    v0 = _values_at(npairs) // 4
    for j in range(npairs):
        k = np.int64(idx[j])
        if k >= m:
            raise ValueError("nic allreduce: sparse index outside its range")
        vals[k] = vals[k] + pktv[v0 + j]


@njit(cache=True, _nrt=False)
def _hash_put(keys, hv, slots, k, v):
    h = (k * 40503) & (slots - 1)
    for p in range(HASH_PROBES):
        j = (h + p) & (slots - 1)
        if keys[j] == k:
            hv[j] = hv[j] + v
            return True
        if keys[j] < 0:
            keys[j] = k
            hv[j] = v
            return True
    return False


@njit(cache=True, _nrt=False)
def _hash_step(pkt, pktv, local, out, outv, keys, hv, slots, m, mem):
    """Flare's hash storage: the incoming pairs, then the local non-zeros, go into a table of
    ``slots`` entries (``keys``/``hv``; entries past ``slots`` hold the stash); pairs without a
    slot are stashed and sent on unaggregated. Returns (packet length, cycles)."""
    npairs = pkt[0:4].view(np.int32)[0]
    if npairs < 0 or _sparse_len(npairs) != pkt.shape[0]:
        raise ValueError("nic allreduce: malformed sparse packet")
    idx = pkt[SPARSE_HEADER:SPARSE_HEADER + 2 * npairs].view(np.uint16)
    v0 = _values_at(npairs) // 4
    for j in range(slots):
        keys[j] = -1
    n_st = 0
    for j in range(npairs):
        k = np.int64(idx[j])
        if k >= m:
            raise ValueError("nic allreduce: sparse index outside its range")
        if not _hash_put(keys, hv, slots, k, pktv[v0 + j]):
            keys[slots + n_st] = k
            hv[slots + n_st] = pktv[v0 + j]
            n_st += 1
    for i in range(m):
        if local[i] != 0 and not _hash_put(keys, hv, slots, i, local[i]):
            keys[slots + n_st] = i
            hv[slots + n_st] = local[i]
            n_st += 1
    mem[STASHED] += n_st
    nout = n_st
    for j in range(slots):
        if keys[j] >= 0 and hv[j] != 0:
            nout += 1
    cycles = slots + npairs + m
    if _sparse_len(nout) >= 4 * m:          # no saving: the dense values
        for i in range(m):
            local[i] = 0
        for j in range(slots + n_st):
            if j >= slots or keys[j] >= 0:
                local[keys[j]] = local[keys[j]] + hv[j]
        for i in range(m):
            outv[i] = local[i]
        mem[DENSE_FALLBACKS] += 1
        return 4 * m, cycles
    out[0:4].view(np.int32)[0] = nout
    sk = out[SPARSE_HEADER:SPARSE_HEADER + 2 * nout].view(np.uint16)
    o0 = _values_at(nout) // 4
    p = 0
    for j in range(slots + n_st):
        if j >= slots or (keys[j] >= 0 and hv[j] != 0):
            sk[p] = keys[j]
            outv[o0 + p] = hv[j]
            p += 1
    return _sparse_len(nout), cycles


# --- the handler ------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _encode(mem, byt, local, out, m):
    """The values at ``local`` as an outgoing packet; returns (buffer offset, length)."""
    mode, dtype, mtu = mem[MODE], mem[DTYPE], mem[MTU]
    if mode == DENSE:
        return local, m * (2 if dtype >= FLOAT16 else 4)
    ob = byt[out:out + mtu]
    if mode == INT8:
        return out, _quantize(byt[local:local + 4 * m].view(np.float32), ob, m)
    if dtype == INT32:
        n = _emit_dense_storage(byt[local:local + 4 * m].view(np.int32), ob, ob.view(np.int32), m)
    else:
        n = _emit_dense_storage(byt[local:local + 4 * m].view(np.float32), ob,
                                ob.view(np.float32), m)
    if n == 4 * m:
        mem[DENSE_FALLBACKS] += 1
    return out, n


@njit(cache=True, _nrt=False)
def _decode(mem, byt, pkt, local, m):
    """A packet's values (int8 or sparse encoding) into ``local``, as stored."""
    if pkt.shape[0] % 4 != 0 and mem[MODE] != INT8:
        raise ValueError("nic allreduce: malformed sparse packet")
    if mem[MODE] == INT8:
        _dequantize(pkt, byt[local:local + 4 * m].view(np.float32), m)
    elif mem[DTYPE] == INT32:
        v = byt[local:local + 4 * m].view(np.int32)
        v[:] = 0
        _add_sparse(pkt, pkt.view(np.int32), v, m)
    else:
        f = byt[local:local + 4 * m].view(np.float32)
        f[:] = 0
        _add_sparse(pkt, pkt.view(np.float32), f, m)


@njit(cache=True, _nrt=False)
def _combine(mem, byt, pkt, step, local, out, area, m):
    """local += the packet's values; returns (offset, length) of the packet to send on and the
    cycles of the work beyond one add per element."""
    mode, dtype, mtu = mem[MODE], mem[DTYPE], mem[MTU]
    if step == 0 or mode == DENSE:
        _add_dense(byt, local, pkt, m, dtype, out)
        if mode == DENSE:
            return local, m * (2 if dtype >= FLOAT16 else 4), (4 * m if dtype >= FLOAT16 else 0)
    elif mode == INT8:
        _decode(mem, byt, pkt, out, m)                # dequantize into the outgoing buffer
        v = byt[local:local + 4 * m].view(np.float32)
        d = byt[out:out + 4 * m].view(np.float32)
        for i in range(m):
            v[i] = v[i] + d[i]
    elif pkt.shape[0] % 4 != 0:
        raise ValueError("nic allreduce: malformed sparse packet")
    elif mode == SPARSE_HASH and pkt.shape[0] != 4 * m:
        slots = mem[HASH_SLOTS]
        table = area + 2 * mtu
        entries = slots + mtu // 2
        ob = byt[out:out + mtu]
        if dtype == INT32:
            return (out,) + _hash_step(pkt, pkt.view(np.int32),
                                       byt[local:local + 4 * m].view(np.int32), ob,
                                       ob.view(np.int32),
                                       byt[table:table + 4 * entries].view(np.int32),
                                       byt[table + 4 * entries:table + 8 * entries].view(np.int32),
                                       slots, m, mem)
        return (out,) + _hash_step(pkt, pkt.view(np.float32),
                                   byt[local:local + 4 * m].view(np.float32), ob,
                                   ob.view(np.float32),
                                   byt[table:table + 4 * entries].view(np.int32),
                                   byt[table + 4 * entries:table + 8 * entries].view(np.float32),
                                   slots, m, mem)
    elif dtype == INT32:
        _add_sparse(pkt, pkt.view(np.int32), byt[local:local + 4 * m].view(np.int32), m)
    else:
        _add_sparse(pkt, pkt.view(np.float32), byt[local:local + 4 * m].view(np.float32), m)
    o, n = _encode(mem, byt, local, out, m)
    return o, n, 2 * m


@njit(cache=True, _nrt=False)
def _written(ctx, mem, nbytes):
    """Count result bytes written; the last ones raise the host event."""
    mem[DONE] += nbytes
    if mem[DONE] == mem[TOTAL]:
        mem[EVENTS] += 1
        spin_host_event(ctx, 1)


@njit(cache=True, _nrt=False)
def _block_start(mem, block):
    """(first element, elements) of ``block``: the first COUNT % N blocks hold one more."""
    n = mem[N]
    base, extra = mem[COUNT] // n, mem[COUNT] % n
    return block * base + min(block, extra), base + (1 if block < extra else 0)


@njit(cache=True, _nrt=False)
def _block_of_element(mem, e):
    n = mem[N]
    base, extra = mem[COUNT] // n, mem[COUNT] % n
    if e < extra * (base + 1):
        return e // (base + 1)
    return extra + (e - extra * (base + 1)) // base


@njit(cache=True, _nrt=False)
def _received_block(n, rank, step):
    """The block rank ``rank`` receives from its left neighbour at ``step``: reduce-scatter
    steps 0..n-2 carry partials of block (rank-step-1), allgather steps n-1..2n-3 finished
    block (rank-step+n-1)."""
    if step < n - 1:
        return (rank - step - 1) % n
    return (rank - (step - n + 1)) % n


@njit(cache=True, _nrt=False)
def _slot(mem, block, k):
    """Byte offset of packet ``k`` of ``block``'s slot (one MTU) and index of its flag/length."""
    i = block * mem[PPB] + k
    return mem[SLOTS_OFF] + i * mem[MTU], i


@njit(cache=True, _nrt=False)
def _keep(byt, mem, i, at, src, ln):
    """Copy ``ln`` bytes of ``src`` into slot ``i`` (at byte ``at``) and record its length."""
    for j in range(ln):
        byt[at + j] = src[j]
    byt[mem[LENS_OFF]:mem[LENS_OFF] + 4 * mem[N] * mem[PPB]].view(np.int32)[i] = ln


@njit(cache=True, _nrt=False)
def _kept_len(byt, mem, i):
    return byt[mem[LENS_OFF]:mem[LENS_OFF] + 4 * mem[N] * mem[PPB]].view(np.int32)[i]


@njit(cache=True, _nrt=False)
def _arm(ctx, mem, byt):
    spin_set_timer(ctx, mem[TIMEOUT_PS], mem[QP], byt, 0, 4, TIMER_TAG << STEP_SHIFT)


@njit(cache=True, _nrt=False)
def _reduced(ctx, mem, byt, step, block, k, addr, at, i, o, ln, m, w):
    """Step ``step``'s partial of (block, k) is combined into the packet at ``o`` (``ln`` B):
    keep it in the slot (a neighbour's NACK resends it), write it to host memory if it is the
    finished sum, and send it on as step + 1."""
    _keep(byt, mem, i, at, byt[o:o + ln], ln)
    f = mem[FLAGS_OFF] + i
    byt[f] = byt[f] | RS_DONE
    if step == mem[N] - 2:
        local = spin_hpu(ctx) * mem[AREA]
        if mem[MODE] != DENSE:               # every rank holds what the others will decode
            _decode(mem, byt, byt[at:at + ln], local, m)
            spin_dma_to_host(ctx, addr, byt, local, m * w)
        else:
            spin_dma_to_host(ctx, addr, byt, at, m * w)
        _written(ctx, mem, m * w)
    spin_send_packet(ctx, mem[RIGHT], mem[QP], byt, at, ln, ((step + 1) << STEP_SHIFT) | addr)


@njit(cache=True, _nrt=False)
def _combine_into_slot(ctx, mem, byt, ring, local_src, step, block, k, addr, at, i, m, w):
    """The partial ``ring`` (a packet of step ``step``) plus this host's values ``local_src``,
    both complete now, whichever came second."""
    area = spin_hpu(ctx) * mem[AREA]
    local, out = area, area + mem[MTU]
    for j in range(m * w):
        byt[local + j] = local_src[j]
    o, ln, cycles = _combine(mem, byt, ring, step, local, out, area, m)
    spin_add_cycles(ctx, cycles)
    _reduced(ctx, mem, byt, step, block, k, addr, at, i, o, ln, m, w)


@njit(cache=True, _nrt=False)
def _local_packet(ctx, pkt, mem, byt, addr, w):
    """A packet of this host's vector, streamed by the NIC's DMA (the host's loopback post)."""
    n, rank = mem[N], mem[RANK]
    e = (addr - mem[DATA_ADDR]) // w
    block = _block_of_element(mem, e)
    bstart, belems = _block_start(mem, block)
    k = (addr - mem[DATA_ADDR] - bstart * w) // mem[MTU]
    m = min(mem[MTU] // w, belems - k * (mem[MTU] // w))
    if block >= n or k < 0 or m <= 0 or pkt.shape[0] != m * w:
        raise ValueError("nic allreduce: local packet outside the vector")
    if mem[TIMEOUT_PS] > 0 and mem[TIMER_ARMED] == 0:
        mem[TIMER_ARMED] = 1
        _arm(ctx, mem, byt)
    at, i = _slot(mem, block, k)
    f = mem[FLAGS_OFF] + i
    seen = byt[f]
    if seen & LOCAL_IN:
        mem[DUPLICATES] += 1
        return
    if block == rank:                       # step 0: the host's own block goes out as is
        byt[f] = seen | LOCAL_IN | RS_DONE
        _keep(byt, mem, i, at, pkt, m * w)
        spin_send_packet(ctx, mem[RIGHT], mem[QP], pkt, 0, m * w, addr)
        return
    byt[f] = seen | LOCAL_IN
    if seen & RING_IN:                      # the partial came first: it waits in the slot
        step = (rank - block - 1) % n
        _combine_into_slot(ctx, mem, byt, byt[at:at + _kept_len(byt, mem, i)], pkt, step,
                           block, k, addr, at, i, m, w)
    else:
        _keep(byt, mem, i, at, pkt, m * w)


@njit(cache=True, _nrt=False)
def _nack(ctx, mem, byt, step, addr, w):
    """The right neighbour misses step ``step`` of the range at ``addr``: resend what this NIC
    sent then, if it did (else its own timer recovers its input first)."""
    n = mem[N]
    if step < 0 or step > 2 * n - 3:
        raise ValueError("nic allreduce: NACK for a step outside the allreduce")
    block = _received_block(n, (mem[RANK] + 1) % n, step)
    bstart, belems = _block_start(mem, block)
    k = (addr - mem[DATA_ADDR] - bstart * w) // mem[MTU]
    if k < 0 or k * (mem[MTU] // w) >= belems:
        raise ValueError("nic allreduce: NACK for a range outside the vector")
    at, i = _slot(mem, block, k)
    seen = byt[mem[FLAGS_OFF] + i]
    if step < n - 1:
        have = (seen & RS_DONE) != 0 and (seen & AG_SEEN) == 0
    elif step == n - 1:
        have = (seen & RS_DONE) != 0
    else:
        have = (seen & AG_SEEN) != 0
    if have:
        mem[RESENDS] += 1
        spin_send_packet(ctx, mem[RIGHT], mem[QP], byt, at, _kept_len(byt, mem, i),
                         (step << STEP_SHIFT) | addr)


@njit(cache=True, _nrt=False)
def _tick(ctx, mem, byt, w):
    """The loss timer: while packets from the left are missing, and none arrived since the
    last tick, ask the left neighbour for every missing one (at most NACK_LIMIT a tick)."""
    mem[TICKS] += 1
    if mem[RECEIVED] >= mem[EXPECTED]:
        mem[TIMER_ARMED] = 0
        return
    if mem[RECEIVED] == mem[RECEIVED_AT_TICK]:
        n, rank, per = mem[N], mem[RANK], mem[MTU] // w
        sent, scanned = 0, 0
        for step in range(2 * n - 2):
            block = _received_block(n, rank, step)
            bstart, belems = _block_start(mem, block)
            for k in range((belems + per - 1) // per):
                scanned += 1
                seen = byt[mem[FLAGS_OFF] + block * mem[PPB] + k]
                got = (seen & (RING_IN | RS_DONE)) if step < n - 1 else (seen & AG_SEEN)
                if got == 0 and sent < NACK_LIMIT:
                    addr = mem[DATA_ADDR] + (bstart + k * per) * w
                    spin_send_packet(ctx, mem[LEFT], mem[QP], byt, 0, 4,
                                     ((NACK_TAG + step) << STEP_SHIFT) | addr)
                    sent += 1
        mem[NACKS_SENT] += sent
        spin_add_cycles(ctx, scanned)
    mem[RECEIVED_AT_TICK] = mem[RECEIVED]
    _arm(ctx, mem, byt)


# Per packet: one add per element (0.25 cycle/byte, as handlers/reduce.py) or a copy into the
# packet's slot, one send; re-encoding (int8, sparse) is charged per element in _combine.
@handler(cycles=60, cycles_per_byte=0.25)
def allreduce_payload(ctx, pkt, mem):
    va = spin_msg_addr(ctx) + spin_msg_offset(ctx)
    step = va >> STEP_SHIFT
    addr = va & ADDR_MASK
    n, rank = mem[N], mem[RANK]
    w = 2 if mem[DTYPE] >= FLOAT16 else 4
    byt = mem[HEADER_WORDS:].view(np.uint8)
    if step == LOCAL_TAG:
        _local_packet(ctx, pkt, mem, byt, addr, w)
        return SUCCESS
    if step == TIMER_TAG:
        _tick(ctx, mem, byt, w)
        return SUCCESS
    if step >= NACK_TAG:
        _nack(ctx, mem, byt, step - NACK_TAG, addr, w)
        return SUCCESS
    if step < 0 or step > 2 * n - 3:
        raise ValueError("nic allreduce: packet outside the allreduce's steps")
    block = _received_block(n, rank, step)
    bstart, belems = _block_start(mem, block)
    per = mem[MTU] // w
    k = (addr - mem[DATA_ADDR] - bstart * w) // mem[MTU]
    m = min(per, belems - k * per)
    if k < 0 or m <= 0 or k >= mem[PPB]:
        raise ValueError("nic allreduce: packet outside the allreduce's ranges")
    at, i = _slot(mem, block, k)
    f = mem[FLAGS_OFF] + i
    seen = byt[f]
    if step >= n - 1:                                            # allgather
        if seen & AG_SEEN:
            mem[DUPLICATES] += 1
            return SUCCESS
        mem[RECEIVED] += 1
        byt[f] = seen | AG_SEEN
        _keep(byt, mem, i, at, pkt, pkt.shape[0])                # for the right's NACKs
        if mem[MODE] == DENSE:
            spin_dma_to_host(ctx, addr, pkt, 0, m * w)
        else:
            local = spin_hpu(ctx) * mem[AREA]
            _decode(mem, byt, pkt, local, m)
            spin_dma_to_host(ctx, addr, byt, local, m * w)
            spin_add_cycles(ctx, m)
        _written(ctx, mem, m * w)
        if step < 2 * n - 3:
            spin_send_packet(ctx, mem[RIGHT], mem[QP], pkt, 0, pkt.shape[0],
                             ((step + 1) << STEP_SHIFT) | addr)
        return SUCCESS
    if seen & (RING_IN | RS_DONE):                               # reduce-scatter
        mem[DUPLICATES] += 1
        return SUCCESS
    mem[RECEIVED] += 1
    if seen & LOCAL_IN:
        _combine_into_slot(ctx, mem, byt, pkt, byt[at:at + m * w], step, block, k, addr, at, i,
                           m, w)
    else:                                   # this host's values are not here yet: park it
        byt[f] = seen | RING_IN
        mem[EARLY_PARTIALS] += 1
        _keep(byt, mem, i, at, pkt, pkt.shape[0])
    return SUCCESS


def area_bytes(mtu: int, hash_slots: int) -> int:
    """Work bytes per HPU: local values and outgoing packet (one MTU each), then the hash table
    and its stash (int32 keys and 4-byte values: ``hash_slots`` + MTU/2 entries)."""
    return -(-(2 * mtu + 8 * (hash_slots + mtu // 2)) // 8) * 8


def max_pairs(mtu: int) -> int:
    """Most (index, value) pairs of 4-byte values a packet of ``mtu`` payload bytes carries."""
    n = (mtu - SPARSE_HEADER) // 6
    while n > 0 and SPARSE_HEADER + -(-2 * n // 4) * 4 + 4 * n > mtu:
        n -= 1
    return n


def block_packets(count: int, n: int, width: int, mtu: int) -> list[int]:
    """Packets of every block (blocks as ``spin.collectives.common.block_counts``)."""
    base, extra = divmod(count, n)
    return [-(-((base + (b < extra)) * width) // mtu) for b in range(n)]


def expected_packets(count: int, n: int, rank: int, width: int, mtu: int) -> int:
    """Packets rank ``rank`` receives from its left neighbour: every reduce-scatter partial but
    of its own block, every finished range but of the block it finishes itself."""
    ppb = block_packets(count, n, width, mtu)
    return sum(ppb) - ppb[rank] + sum(ppb) - ppb[(rank + 1) % n]


def allreduce_memory(*, n: int, rank: int, left: int, right: int, qp: int, dtype: str,
                     mode: str, count: int, data_addr: int, mtu: int, hpus: int,
                     hash_slots: int = 64, timeout_ns: float = 0.0) -> np.ndarray:
    """Handler memory of rank ``rank``'s execution context (see the module docstring): the
    parameters, then per HPU a work area, the flag bytes, the slot lengths and the slots."""
    code = DTYPE_CODES[dtype]
    w = WIDTHS[code]
    per_block = -(-count // n)
    ppb = max(1, -(-(per_block * w) // mtu))
    area = area_bytes(mtu, hash_slots)
    flags = n * ppb
    lens_off = -(-(hpus * area + flags) // 8) * 8
    slots_off = lens_off + -(-(4 * flags) // 8) * 8
    words = HEADER_WORDS + -(-(slots_off + flags * mtu) // 8)
    mem = np.zeros(words, np.int64)
    mem[N], mem[RANK], mem[LEFT], mem[RIGHT], mem[QP] = n, rank, left, right, qp
    mem[DTYPE], mem[MODE] = code, MODES[mode]
    mem[TOTAL], mem[COUNT], mem[PPB], mem[MTU] = count * w, count, ppb, mtu
    mem[AREA], mem[HASH_SLOTS], mem[FLAGS_OFF] = area, hash_slots, hpus * area
    mem[LENS_OFF], mem[SLOTS_OFF] = lens_off, slots_off
    mem[MAX_PAIRS], mem[DATA_ADDR] = max_pairs(mtu), data_addr
    mem[TIMEOUT_PS] = round(timeout_ns * 1000)
    mem[EXPECTED] = expected_packets(count, n, rank, w, mtu)
    mem[RECEIVED_AT_TICK] = -1
    return mem


def local_address(addr: int) -> int:
    """RETH address of a host's post of its own bytes at ``addr`` to its NIC."""
    return (LOCAL_TAG << STEP_SHIFT) | addr


@program_factory
def nic_allreduce_program(memory: np.ndarray | None = None) -> HandlerProgram:
    """The program (one for every mode, dtype and rank: they differ only in handler memory, so
    all allreduce variants share one compiled engine)."""
    mem = memory if memory is not None else np.zeros(HEADER_WORDS, np.int64)
    return HandlerProgram("nic_allreduce", payload=allreduce_payload, memory=mem)
