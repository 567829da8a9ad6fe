"""An in-switch monitor: counts, filters and rewrites the RoCE messages crossing a switch.

Installed on a switch (``ExecutionContext(node="s0", ...)``), it sees each message's packets in
sPIN order. The header handler counts the message per source and drops every message from the
blocked source (DROP from a header handler discards the whole message); the payload handler
counts bytes, notes the IPv4 TTL the packet arrived with (read from the whole frame) and stamps
a marker byte at the start of each forwarded packet, then PROCEEDs (forwards on the routed path;
the engine recomputes the ICRC of the rewritten frame); the completion handler counts finished
messages.

Handler memory (int64): ``[blocked_src, marker, messages, completed, payload_bytes, dropped,
last_ttl, per_source_messages[0..n)]``.
"""
import numpy as np

from spin.api import DROP, PROCEED, PROCESS_DATA, spin_frame, spin_source
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

BLOCKED, MARKER, MESSAGES, COMPLETED, BYTES, DROPPED, LAST_TTL, PER_SOURCE = range(8)
IPV4_TTL = 22   # byte offset of the IPv4 TTL in an Ethernet II frame


@handler(cycles=30)
def monitor_header(ctx, pkt, mem):
    src = spin_source(ctx)
    mem[MESSAGES] += 1
    if PER_SOURCE + src < mem.shape[0]:
        mem[PER_SOURCE + src] += 1
    if src == mem[BLOCKED]:
        mem[DROPPED] += 1
        return DROP
    return PROCESS_DATA


@handler(cycles=20)
def monitor_payload(ctx, pkt, mem):
    mem[BYTES] += pkt.shape[0]
    mem[LAST_TTL] = spin_frame(ctx)[IPV4_TTL]
    if pkt.shape[0] > 0:
        pkt[0] = np.uint8(mem[MARKER])
    return PROCEED


@handler(cycles=10)
def monitor_completion(ctx, pkt, mem):
    mem[COMPLETED] += 1
    return PROCEED


@program_factory
def switch_monitor_program(n_sources: int, blocked_src: int = -1,
                           marker: int = 0xAB) -> HandlerProgram:
    mem = np.zeros(PER_SOURCE + n_sources, np.int64)
    mem[BLOCKED] = blocked_src
    mem[MARKER] = marker
    return HandlerProgram("switch_monitor", header=monitor_header, payload=monitor_payload,
                          completion=monitor_completion, memory=mem)
