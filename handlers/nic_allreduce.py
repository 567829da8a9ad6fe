"""NIC-offloaded ring allreduce (sPIN / Flare style): the NICs reduce and forward, the hosts only
post their vector and wait for one event.

Rank r's host posts its block r (a plain RDMA write) to its right neighbour. From then on every
packet is handled on NICs, one payload-handler run per packet, with no host round trip:

* reduce-scatter step s (0..n-2): the packet carries the partial sum of one packet-sized range
  of block (r-s-1) mod n. The handler adds the same range of its own host's vector and sends
  the new partial on to the right (``spin_send_packet``). The host's vector is read once into
  handler memory, in chunks of ``chunk_packets`` packets: the first packet that needs a chunk
  reads it, and the next ``PREFETCH_CHUNKS`` of its block (``spin_dma_from_host``, blocking:
  that HPU waits for the PCIe transfers); a packet whose chunk is still in flight waits for it
  (``spin_add_cycles``, up to the read's completion estimated from the PCIe latency and rate).
  A read per packet instead would bind every HPU for a PCIe round trip: 32 HPUs x 1 KiB per
  ~1.1 µs is less than a 400 Gb/s link delivers. At step n-2 the sum is complete: it is
  DMAed to host memory (the rank's result) and sent on as allgather step n-1.
* allgather step s (n-1..2n-3): the packet carries a finished range; the handler DMAs it to host
  memory and forwards it until every rank has it.
* once every byte of its result is written, the handler raises one host event.

Block b is summed in the host ring's order (x_b + x_{b+1} + ... added one rank at a time), so
float results equal the host ring's bit for bit.

The step travels in the RETH address: ``va = step << STEP_SHIFT | host address of the range``.
Host posts use QP ``qp``, NIC-sent packets ``qp + 1`` (the receiver keys open messages on source
and QP: single-packet messages must not share a key with a host's multi-packet one), so the
execution context matches on the source (the left neighbour).

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

Loss and duplicates: a flag byte per (range, phase) makes every handler idempotent, and a
duplicate regenerates what the original sent downstream (from the host copy of the result once
that exists), so a host that re-posts its block repairs any packet lost along the ring.

Handler memory (int64): ``HEADER_WORDS`` words of parameters and counters (names below), then a
byte area: one work area per HPU (``area_bytes``: local values, outgoing packet, hash table),
the flag bytes (``block x packets_per_block + k``), the estimated ready time of every chunk of
the host's vector (int64, 0: not asked yet), and the cached vector at its host offsets.
"""
import math

import numba as nb
import numpy as np

from handlers.half_floats import bf16_bits, f16_bits, f16_value
from spin.api import (SUCCESS, spin_add_cycles, spin_dma_from_host, spin_dma_to_host,
                      spin_host_event, spin_hpu, spin_msg_addr, spin_msg_offset, spin_now_ps,
                      spin_send_packet)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

# parameter and counter words
(N, RANK, RIGHT, FWD_QP, DTYPE, MODE, TOTAL, DONE, COUNT, PPB, MTU, AREA, HASH_SLOTS,
 FLAGS_OFF, MAX_PAIRS, DATA_ADDR, EVENTS, DUPLICATES, STASHED, DENSE_FALLBACKS, CHUNK,
 CPB, READY_OFF, CACHE_OFF, PCIE_LAT_PS, PCIE_MPS_PER_BYTE, CYCLE_PS, CHUNK_READS) = range(28)
HEADER_WORDS = 32
PREFETCH_CHUNKS = 2
READ_ISSUE_CYCLES = 80   # the handler's work before its reads leave: base cost + bookkeeping

DENSE, INT8, SPARSE, SPARSE_HASH = 0, 1, 2, 3
MODES = {"dense": DENSE, "int8": INT8, "sparse": SPARSE, "sparse_hash": SPARSE_HASH}
INT32, FLOAT32, FLOAT16, BFLOAT16 = 0, 1, 2, 3
DTYPE_CODES = {"int32": INT32, "float32": FLOAT32, "float16": FLOAT16, "bfloat16": BFLOAT16}
WIDTHS = {INT32: 4, FLOAT32: 4, FLOAT16: 2, BFLOAT16: 2}

STEP_SHIFT = 40
ADDR_MASK = (1 << STEP_SHIFT) - 1
RS_SEEN, AG_SEEN = 1, 2
HASH_PROBES = 8
SPARSE_HEADER = 4


# --- 16-bit floats: add in float32, round once (as spin.collectives.common.sum_float16/bf16) ---
@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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
@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
def _dequantize(pkt, vals, m):
    scale = pkt[0:4].view(np.float32)[0]
    q = pkt[4:4 + m].view(np.int8)
    for i in range(m):
        vals[i] = np.float32(q[i]) * scale


# --- sparse (index, value) blocks -------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
def _values_at(npairs):
    return SPARSE_HEADER + ((2 * npairs + 3) // 4) * 4


@nb.njit(cache=True, _nrt=False)
def _sparse_len(npairs):
    return _values_at(npairs) + 4 * npairs


@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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


# --- the host's vector, cached in handler memory ---------------------------------------------
@nb.njit(cache=True, _nrt=False)
def _local_range(ctx, mem, byt, block, bstart_b, bbytes, k, addr):
    """Byte offset of the host's values at ``addr`` in the cache, after making sure the chunk
    holding them is read (or waited for) and the next PREFETCH_CHUNKS of the block are asked."""
    ch = mem[CHUNK]
    mtu = mem[MTU]
    c = k // ch
    ready = byt[mem[READY_OFF]:mem[READY_OFF] + 8 * mem[N] * mem[CPB]].view(np.int64)
    now = spin_now_ps(ctx)
    t = now + READ_ISSUE_CYCLES * mem[CYCLE_PS]
    last = (bbytes - 1) // (ch * mtu)
    for j in range(c, min(c + PREFETCH_CHUNKS, last) + 1):
        slot = block * mem[CPB] + j
        if ready[slot] != 0:
            continue
        lo = j * ch * mtu
        size = min(ch * mtu, bbytes - lo)
        spin_dma_from_host(ctx, mem[DATA_ADDR] + bstart_b + lo, byt,
                           mem[CACHE_OFF] + bstart_b + lo, size)
        t += 2 * mem[PCIE_LAT_PS] + (size * mem[PCIE_MPS_PER_BYTE] + 999) // 1000
        ready[slot] = t
        mem[CHUNK_READS] += 1
    wait = ready[block * mem[CPB] + c] - now
    if wait > 0:
        spin_add_cycles(ctx, (wait + mem[CYCLE_PS] - 1) // mem[CYCLE_PS])
    return mem[CACHE_OFF] + addr - mem[DATA_ADDR]


# --- the handler ------------------------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
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


@nb.njit(cache=True, _nrt=False)
def _written(ctx, mem, nbytes):
    """Count result bytes written; the last ones raise the host event."""
    mem[DONE] += nbytes
    if mem[DONE] == mem[TOTAL]:
        mem[EVENTS] += 1
        spin_host_event(ctx, 1)


# Per packet: a blocking PCIe read of the local range, one add per element (0.25 cycle/byte,
# as handlers/reduce.py), one send; re-encoding (int8, sparse) is charged per element below.
@handler(cycles=60, cycles_per_byte=0.25)
def allreduce_payload(ctx, pkt, mem):
    va = spin_msg_addr(ctx) + spin_msg_offset(ctx)
    step = va >> STEP_SHIFT
    addr = va & ADDR_MASK
    n, rank = mem[N], mem[RANK]
    w = 2 if mem[DTYPE] >= FLOAT16 else 4
    mtu = mem[MTU]
    block = (rank - step - 1) % n if step < n - 1 else (rank - (step - n + 1)) % n
    base, extra = mem[COUNT] // n, mem[COUNT] % n
    bstart = block * base + min(block, extra)
    belems = base + (1 if block < extra else 0)
    per = mtu // w
    k = (addr - mem[DATA_ADDR] - bstart * w) // mtu
    m = min(per, belems - k * per)
    if step < 0 or step > 2 * n - 3 or k < 0 or m <= 0 or k >= mem[PPB]:
        raise ValueError("nic allreduce: packet outside the allreduce's ranges")
    byt = mem[HEADER_WORDS:].view(np.uint8)
    area = spin_hpu(ctx) * mem[AREA]
    local, out = area, area + mtu
    flag = mem[FLAGS_OFF] + block * mem[PPB] + k
    seen = byt[flag]
    right, qp = mem[RIGHT], mem[FWD_QP]
    if step >= n - 1:                                            # allgather
        byt[flag] = seen | AG_SEEN
        if seen & AG_SEEN:
            mem[DUPLICATES] += 1
        else:
            if mem[MODE] == DENSE:
                spin_dma_to_host(ctx, addr, pkt, 0, m * w)
            else:
                _decode(mem, byt, pkt, local, m)
                spin_dma_to_host(ctx, addr, byt, local, m * w)
                spin_add_cycles(ctx, m)
            _written(ctx, mem, m * w)
        if step < 2 * n - 3:
            spin_send_packet(ctx, right, qp, pkt, 0, pkt.shape[0],
                             ((step + 1) << STEP_SHIFT) | addr)
        return SUCCESS
    final = step == n - 2                                       # reduce-scatter
    if seen != 0:
        # a duplicate: regenerate what went downstream, from the result once it exists
        mem[DUPLICATES] += 1
        if final or (seen & AG_SEEN) != 0:
            nxt = n - 1 if final else n + (rank - block) % n
            if nxt <= 2 * n - 3:
                spin_dma_from_host(ctx, addr, byt, local, m * w)
                o, ln = _encode(mem, byt, local, out, m)
                spin_send_packet(ctx, right, qp, byt, o, ln, (nxt << STEP_SHIFT) | addr)
            return SUCCESS
    byt[flag] = seen | RS_SEEN
    src = _local_range(ctx, mem, byt, block, bstart * w, belems * w, k, addr)
    for i in range(m * w):
        byt[local + i] = byt[src + i]
    o, ln, cycles = _combine(mem, byt, pkt, step, local, out, area, m)
    spin_add_cycles(ctx, cycles)
    if final:
        if mem[MODE] != DENSE:               # every rank holds what the others will decode
            _decode(mem, byt, byt[o:o + ln], local, m)
        spin_dma_to_host(ctx, addr, byt, local, m * w)
        _written(ctx, mem, m * w)
    spin_send_packet(ctx, right, qp, byt, o, ln, ((step + 1) << STEP_SHIFT) | addr)
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


def allreduce_memory(*, n: int, rank: int, right: int, fwd_qp: int, dtype: str, mode: str,
                     count: int, data_addr: int, mtu: int, hpus: int, pcie_latency_ns: float,
                     pcie_rate_gbytes_per_s: float, hpu_clock_mhz: int,
                     hash_slots: int = 64, chunk_packets: int = 32) -> np.ndarray:
    """Handler memory of rank ``rank``'s execution context (see the module docstring): the
    parameters, then per HPU a work area, the flag bytes, the chunks' ready times and the cache
    of the host's vector (its bytes, at the same offsets)."""
    code = DTYPE_CODES[dtype]
    w = WIDTHS[code]
    per_block = -(-count // n)
    ppb = max(1, -(-(per_block * w) // mtu))
    cpb = -(-ppb // chunk_packets)
    area = area_bytes(mtu, hash_slots)
    flags = n * ppb
    ready_off = -(-(hpus * area + flags) // 8) * 8
    cache_off = ready_off + 8 * n * cpb
    words = HEADER_WORDS + -(-(cache_off + count * w) // 8)
    mem = np.zeros(words, np.int64)
    mem[CHUNK], mem[CPB], mem[READY_OFF], mem[CACHE_OFF] = chunk_packets, cpb, ready_off, cache_off
    mem[PCIE_LAT_PS] = round(pcie_latency_ns * 1000)
    mem[PCIE_MPS_PER_BYTE] = round(1_000_000 / pcie_rate_gbytes_per_s)
    mem[CYCLE_PS] = 1_000_000 // hpu_clock_mhz
    mem[N], mem[RANK], mem[RIGHT], mem[FWD_QP] = n, rank, right, fwd_qp
    mem[DTYPE], mem[MODE] = code, MODES[mode]
    mem[TOTAL], mem[COUNT], mem[PPB], mem[MTU] = count * w, count, ppb, mtu
    mem[AREA], mem[HASH_SLOTS], mem[FLAGS_OFF] = area, hash_slots, hpus * area
    mem[MAX_PAIRS], mem[DATA_ADDR] = max_pairs(mtu), data_addr
    return mem


@program_factory
def nic_allreduce_program(memory: np.ndarray | None = None) -> HandlerProgram:
    """The program (one for every mode, dtype and rank: they differ only in handler memory, so
    all allreduce variants share one compiled engine)."""
    mem = memory if memory is not None else np.zeros(HEADER_WORDS, np.int64)
    return HandlerProgram("nic_allreduce", payload=allreduce_payload, memory=mem)
