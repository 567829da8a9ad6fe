"""Out-of-order reorder buffer on the NIC (PsPIN ``ooorb``).

An application-level stream: single-packet messages of ``slot_bytes`` whose first 8 bytes are a
sequence number, arriving in any order within a window. The payload handler delivers the next
expected message straight to the host stream (``host_base + n * slot_bytes`` where ``n`` counts
in-order deliveries, so the host sees a contiguous, ordered stream); an early message is parked
in a handler-memory slot and flushed, in order, as soon as the gap before it is filled. Messages
outside the window (duplicates, or too far ahead) are dropped. The completion handler returns
PROCEED once the whole stream has been delivered, so the host takes one completion instead of
one per message; that notification is timed after every flush DMA of the stream.

In sPIN the check-and-flush would need a lock (PsPIN's ``ooorb`` uses one); the emulator runs
handlers atomically, so the plain read-modify-write here is safe.

Handler memory (int64): ``[next, total, host_base, slot_bytes, window, 0, 0, 0, valid[window],
buffer[window * slot_bytes / 8]]``.
"""
import numpy as np

from spin.api import DROP, PROCEED, SUCCESS, spin_add_cycles, spin_dma_to_host
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

NEXT, TOTAL, HOST_BASE, SLOT_BYTES, WINDOW, HEADER_WORDS = 0, 1, 2, 3, 4, 8
CYCLES_PER_FLUSH = 10  # clear the valid flag, compute the address, one DMA command


# Read the sequence number, compare with the window, deliver or park. Parking copies the packet
# into handler memory at 4 bytes per cycle (RI5CY is a 32-bit core): charged per byte below.
@handler(cycles=50)
def reorder_payload(ctx, pkt, mem):
    seq = pkt[:8].view(np.int64)[0]
    nxt = mem[NEXT]
    window = mem[WINDOW]
    slot = mem[SLOT_BYTES]
    if seq < nxt or seq >= nxt + window or pkt.shape[0] != slot:
        return DROP
    valid = HEADER_WORDS
    buf = mem[HEADER_WORDS + window:].view(np.uint8)
    if seq != nxt:
        w = seq % window
        for i in range(slot):  # an explicit loop: handlers are compiled without NRT
            buf[w * slot + i] = pkt[i]
        mem[valid + w] = 1
        spin_add_cycles(ctx, slot // 4)
        return SUCCESS
    spin_dma_to_host(ctx, mem[HOST_BASE] + nxt * slot, pkt, 0, slot)
    nxt += 1
    flushed = 0
    while mem[valid + nxt % window] == 1:
        w = nxt % window
        mem[valid + w] = 0
        spin_dma_to_host(ctx, mem[HOST_BASE] + nxt * slot, buf, w * slot, slot)
        nxt += 1
        flushed += 1
    mem[NEXT] = nxt
    spin_add_cycles(ctx, CYCLES_PER_FLUSH * flushed)
    return SUCCESS


@handler(cycles=10)  # one compare
def reorder_completion(ctx, pkt, mem):
    if mem[NEXT] == mem[TOTAL]:
        return PROCEED
    return SUCCESS


@program_factory
def reorder_program(host_base: int, total_messages: int, slot_bytes: int,
                    window: int = 64) -> HandlerProgram:
    """``window`` <= 255 keeps a flush within the 256 commands one handler may issue."""
    if slot_bytes < 8 or slot_bytes % 8 or not 1 <= window <= 255:
        raise ConfigError(f"reorder: slot_bytes={slot_bytes} must be a multiple of 8 >= 8 and "
                          f"window={window} within 1..255")
    mem = np.zeros(HEADER_WORDS + window + window * slot_bytes // 8, np.int64)
    mem[:5] = (0, total_messages, host_base, slot_bytes, window)
    return HandlerProgram("reorder", payload=reorder_payload, completion=reorder_completion,
                          memory=mem)
