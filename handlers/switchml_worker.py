"""The worker side of SwitchML, on the NIC: stream a vector through a window of switch slots.

The host starts a job with one control message to its own node (a KICK), which the NIC turns
around through its loopback: it crosses no link, so no loss can stall the job. Its packet p
makes the NIC send the first chunks of window part p (128 slots per part), each one
RDMA WRITE ONLY read straight from host memory with the SwitchML header in the RETH VA
(``spin.wire.switchml``; k elements of 4 bytes, or 2 for the 16-bit floats, as they are
stored in host memory). When a slot's result comes back, the NIC writes it to host memory
and reuses the slot for the chunk ``window`` chunks further, in the other set. A result for
a chunk the slot no longer waits for (a duplicate, e.g. an answered retransmission that
crossed the multicast) is ignored. With the last chunk's result the NIC raises one host event.

Retransmission: with ``timeout_ps > 0`` one handler timer (``spin_set_timer``, a TICK packet
the NIC gives itself) runs while a job has chunks outstanding. It expires at the earliest
deadline of an outstanding chunk (sent time plus ``timeout_ps``); each expiry resends every
chunk whose result is overdue, in the same slot and set (SwitchML's worker timeout), and sets
the timer again for the next deadline, until no chunk is outstanding. A local timer cannot be
lost, so one is armed at a time and nothing has to restart it.

Handler memory (int64): globals, up to 4 job descriptors, then per job and window slot
``[tsi (-1: idle), set, sent_ps]``.
"""
import numba as nb
import numpy as np

from handlers.switchml import element_bytes
from spin.api import (DROP, SUCCESS, spin_add_cycles, spin_dma_to_host, spin_msg_addr,
                      spin_msg_offset, spin_now_ps, spin_put_from_host, spin_qp, spin_set_timer)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

G_N_JOBS, G_TIMEOUT_PS, G_SELF, G_ARMED, G_RETRANSMITS, G_DUPLICATES, G_TICKS = range(7)
JOBS = 16
MAX_JOBS = 4
JOB_WORDS = 16
J_JOB, J_OP, J_WINDOW, J_SLOT_BASE, J_K, J_COUNT, J_IN, J_OUT, J_DST = range(9)
J_CHUNKS, J_DONE, J_STATE = 9, 10, 11
SLOT_WORDS = 3
PART_SLOTS = 128                     # slots started per KICK packet (commands per handler)
RESEND_LIMIT = 200                   # resends per expiry (a handler issues at most 256 commands)
MSG_CONTROL, CONTROL_KICK, CONTROL_TICK = 7, 1, 2      # as spin.wire.switchml


def _header(op, job, slot, s, tsi):
    return (np.int64(op) << 60) | (np.int64(job) << 48) | (np.int64(slot | (s << 15)) << 32) \
        | np.int64(tsi)


def _send_chunk(ctx, mem, j, w, s, tsi, now):
    """Chunk at element ``tsi`` into window slot ``w``, set ``s``, from host memory."""
    k = mem[j + J_K]
    n = min(k, mem[j + J_COUNT] - tsi)
    at = mem[j + J_STATE] + SLOT_WORDS * w
    mem[at], mem[at + 1], mem[at + 2] = tsi, s, now
    width = element_bytes(mem[j + J_OP])
    spin_put_from_host(ctx, mem[j + J_DST], spin_qp(ctx), mem[j + J_IN] + width * tsi, width * n,
                       _header(mem[j + J_OP], mem[j + J_JOB], mem[j + J_SLOT_BASE] + w, s, tsi))


def _arm(ctx, mem, delay_ps):
    """Set the retransmission timer (a TICK to this NIC's own handler)."""
    mem[G_ARMED] = 1
    spin_set_timer(ctx, max(delay_ps, 1), spin_qp(ctx), mem.view(np.uint8), 0, 0,
                   _header(MSG_CONTROL, 0, CONTROL_TICK, 0, 0))


def _tick(ctx, mem):
    """The timer expired: resend overdue chunks, then set it for the next deadline while any
    chunk is outstanding."""
    now = spin_now_ps(ctx)
    timeout = mem[G_TIMEOUT_PS]
    sent = 0
    nxt = -1                                    # earliest deadline after the resends
    for i in range(mem[G_N_JOBS]):
        j = JOBS + JOB_WORDS * i
        if mem[j + J_DONE] >= mem[j + J_CHUNKS]:
            continue
        for w in range(mem[j + J_WINDOW]):
            at = mem[j + J_STATE] + SLOT_WORDS * w
            if mem[at] < 0:
                continue
            if now - mem[at + 2] >= timeout and sent < RESEND_LIMIT:
                _send_chunk(ctx, mem, j, w, mem[at + 1], mem[at], now)
                mem[G_RETRANSMITS] += 1
                sent += 1
            if nxt < 0 or mem[at + 2] + timeout < nxt:
                nxt = mem[at + 2] + timeout
        spin_add_cycles(ctx, 2 * mem[j + J_WINDOW])
    mem[G_TICKS] += 1
    if nxt >= 0:
        _arm(ctx, mem, nxt - now)
    else:
        mem[G_ARMED] = 0


_header = nb.njit(_nrt=False)(_header)        # handlers are built without NRT
_send_chunk = nb.njit(_nrt=False)(_send_chunk)
_arm = nb.njit(_nrt=False)(_arm)
_tick = nb.njit(_nrt=False)(_tick)


@handler(cycles=80)   # decode, bookkeeping and two commands (write the result, send the next)
def switchml_worker_payload(ctx, pkt, mem):
    va = spin_msg_addr(ctx)
    op = (va >> 60) & 0xF
    job = (va >> 48) & 0xFF
    pool = (va >> 32) & 0xFFFF
    tsi = va & 0xFFFFFFFF
    if op == MSG_CONTROL and pool == CONTROL_TICK:
        _tick(ctx, mem)
        return SUCCESS
    j = -1
    for i in range(mem[G_N_JOBS]):
        if mem[JOBS + JOB_WORDS * i + J_JOB] == job:
            j = JOBS + JOB_WORDS * i
    if j < 0:
        return DROP
    window = mem[j + J_WINDOW]
    k = mem[j + J_K]
    now = spin_now_ps(ctx)
    if op == MSG_CONTROL:                       # KICK: start window part p
        p = spin_msg_offset(ctx) // max(pkt.shape[0], 1)
        for w in range(p * PART_SLOTS, min(window, (p + 1) * PART_SLOTS)):
            if w * k < mem[j + J_COUNT]:
                _send_chunk(ctx, mem, j, w, 0, w * k, now)
        if mem[G_TIMEOUT_PS] > 0 and mem[G_ARMED] == 0:
            _arm(ctx, mem, mem[G_TIMEOUT_PS])
        return SUCCESS
    w = (pool & 0x7FFF) - mem[j + J_SLOT_BASE]
    s = pool >> 15
    at = mem[j + J_STATE] + SLOT_WORDS * w
    if w < 0 or w >= window or mem[at] != tsi or mem[at + 1] != s:
        mem[G_DUPLICATES] += 1
        return SUCCESS
    mem[j + J_DONE] += 1
    last = mem[j + J_DONE] == mem[j + J_CHUNKS]
    spin_dma_to_host(ctx, mem[j + J_OUT] + element_bytes(mem[j + J_OP]) * tsi, pkt, 0,
                     pkt.shape[0], last)
    nxt = tsi + window * k
    if nxt < mem[j + J_COUNT]:
        _send_chunk(ctx, mem, j, w, 1 - s, nxt, now)
    else:
        mem[at] = -1
    return SUCCESS


def worker_memory(node: int, jobs: list[dict], timeout_ps: int = 0) -> np.ndarray:
    """Handler memory of worker ``node``'s NIC: ``jobs`` are dicts with ``job``, ``op``
    (msg_type), ``window`` (slots), ``slot_base``, ``k`` (elements per packet), ``count``
    (elements), ``input_addr``, ``output_addr`` (host memory) and ``dst`` (the host the
    contributions are addressed to; switches take them on the way; never ``node`` itself,
    whose frames would stay in the NIC's loopback)."""
    if not 1 <= len(jobs) <= MAX_JOBS:
        raise ValueError(f"{len(jobs)} SwitchML jobs on node {node}; 1..{MAX_JOBS}")
    if any(job["dst"] == node for job in jobs):
        raise ValueError(f"SwitchML worker on node {node}: contributions addressed to itself "
                         f"would never leave its NIC (loopback); address another host")
    total = JOBS + JOB_WORDS * MAX_JOBS + sum(SLOT_WORDS * j["window"] for j in jobs)
    mem = np.zeros(total, np.int64)
    mem[G_N_JOBS], mem[G_TIMEOUT_PS], mem[G_SELF] = len(jobs), timeout_ps, node
    nxt = JOBS + JOB_WORDS * MAX_JOBS
    for i, job in enumerate(jobs):
        j = JOBS + JOB_WORDS * i
        vals = (job["job"], job["op"], job["window"], job["slot_base"], job["k"], job["count"],
                job["input_addr"], job["output_addr"], job["dst"],
                -(-job["count"] // job["k"]), 0, nxt)
        mem[j:j + len(vals)] = vals
        mem[nxt:nxt + SLOT_WORDS * job["window"]:SLOT_WORDS] = -1
        nxt += SLOT_WORDS * job["window"]
    return mem


@program_factory
def switchml_worker_program(memory: np.ndarray | None = None) -> HandlerProgram:
    mem = memory if memory is not None else np.zeros(JOBS + JOB_WORDS * MAX_JOBS, np.int64)
    return HandlerProgram("switchml_worker", payload=switchml_worker_payload, memory=mem)
