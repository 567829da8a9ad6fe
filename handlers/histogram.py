"""Histogram of the bytes of a stream, built on the NIC (PsPIN ``histogram``).

Each payload handler bins every byte of its packet (bin = byte >> shift, so 256 >> shift bins)
with ``spin_fetch_add`` on handler memory, as PsPIN's handler does with ``amo_add`` into L1.
After ``expected`` messages the completion handler DMAs the int64 bins to the host with
``generate_event`` set, so the host's event is ordered after the data, and clears the bins.

Handler memory (int64): ``[host_addr, done, expected, shift, bins...]``.
"""
import numpy as np

from spin.api import SUCCESS, spin_dma_to_host, spin_fetch_add
from spin.errors import ConfigError
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

HOST_ADDR, DONE, EXPECTED, SHIFT, BINS = 0, 1, 2, 3, 4


# Per byte: load, shift, atomic add (an L1 AMO is single-cycle issue on RI5CY): ~1 cycle/byte.
@handler(cycles=40, cycles_per_byte=1.0)
def histogram_payload(ctx, pkt, mem):
    shift = mem[SHIFT]
    for i in range(pkt.shape[0]):
        spin_fetch_add(mem, BINS + (np.int64(pkt[i]) >> shift), 1)
    return SUCCESS


# Counter update and one DMA command; clearing the bins costs one store per bin.
@handler(cycles=300)
def histogram_completion(ctx, pkt, mem):
    if spin_fetch_add(mem, DONE, 1) + 1 == mem[EXPECTED]:
        nbins = 256 >> mem[SHIFT]
        spin_dma_to_host(ctx, mem[HOST_ADDR], mem[BINS:BINS + nbins].view(np.uint8), 0,
                         8 * nbins, True)
        for i in range(nbins):
            mem[BINS + i] = 0
        mem[DONE] = 0
    return SUCCESS


@program_factory
def histogram_program(host_addr: int, expected_messages: int, nbins: int = 256) -> HandlerProgram:
    if nbins not in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        raise ConfigError(f"histogram: nbins={nbins}; valid choices: powers of two 1..256")
    mem = np.zeros(BINS + nbins, np.int64)
    mem[:BINS] = (host_addr, 0, expected_messages, 8 - (nbins.bit_length() - 1))
    return HandlerProgram("histogram", payload=histogram_payload,
                          completion=histogram_completion, memory=mem)
