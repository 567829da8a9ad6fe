"""A handler that sets a timer (or sends to its own node) when a packet comes, and records when
and how the timer's packet came back: for the timer and loopback tests (tests/switch).

Handler memory (int64): the mode, the delay, when the arming handler started, when the timer's
handler started, how many timers fired, the timer packet's source, payload length and first
word; from byte ``PAYLOAD_OFF`` on the bytes the timer packet carries.
"""
import numpy as np

from spin.api import (SUCCESS, spin_msg_addr, spin_node, spin_now_ps, spin_put_from_host, spin_qp,
                      spin_send_packet, spin_set_timer, spin_source)
from spin.engine import state as S
from spin.engine.handler_context import HC_PEND_N
from spin.handler import HandlerProgram, handler

MODE, DELAY, ARMED_AT, FIRED_AT, FIRES, FIRED_SRC, FIRED_LEN, FIRED_WORD = range(8)
PAYLOAD_OFF = 64                      # bytes: words 8 and 9 hold what the timer packet carries
PAYLOAD_BYTES = 16
MODE_TIMER, MODE_SEND_SELF, MODE_PUT_SELF, MODE_FORGED_TIMER = range(4)
TIMER_VA = 0x5EED_0000                # the RETH address that marks the timer's packet
DATA_QP = 9                           # sends to its own node use this QP (no handler on it)
SEND_ADDR, PUT_ADDR, PUT_BYTES = 4096, 8192, 3000


@handler(cycles=20)
def timer_probe_payload(ctx, pkt, mem):
    if spin_msg_addr(ctx) == TIMER_VA:
        mem[FIRED_AT] = spin_now_ps(ctx)
        mem[FIRES] += 1
        mem[FIRED_SRC] = spin_source(ctx)
        mem[FIRED_LEN] = pkt.shape[0]
        word = np.int64(0)
        for i in range(min(8, pkt.shape[0])):
            word |= np.int64(pkt[i]) << (8 * i)
        mem[FIRED_WORD] = word
        return SUCCESS
    mem[ARMED_AT] = spin_now_ps(ctx)
    mode = mem[MODE]
    if mode == MODE_TIMER:
        spin_set_timer(ctx, mem[DELAY], spin_qp(ctx), mem.view(np.uint8), PAYLOAD_OFF,
                       PAYLOAD_BYTES, TIMER_VA)
    elif mode == MODE_SEND_SELF:
        spin_send_packet(ctx, spin_node(ctx), DATA_QP, mem.view(np.uint8), PAYLOAD_OFF,
                         PAYLOAD_BYTES, SEND_ADDR)
    elif mode == MODE_PUT_SELF:
        spin_put_from_host(ctx, spin_node(ctx), DATA_QP, 0, PUT_BYTES, PUT_ADDR)
    elif mode == MODE_FORGED_TIMER:
        ctx.pend[0, 0] = S.ACT_TIMER                  # a timer of delay 0, written by hand
        ctx.pend[0, 1] = 0
        ctx.pend[0, 2] = spin_qp(ctx)
        ctx.ctl[HC_PEND_N] = 1
    return SUCCESS


def timer_probe_program(mode: int = MODE_TIMER, delay_ps: int = 0,
                        word: int = 0x0123_4567_89AB_CDEF) -> HandlerProgram:
    mem = np.zeros(PAYLOAD_OFF // 8 + PAYLOAD_BYTES // 8, np.int64)
    mem[MODE], mem[DELAY], mem[PAYLOAD_OFF // 8] = mode, delay_ps, word
    return HandlerProgram("timer_probe", payload=timer_probe_payload, memory=mem)
