"""Ping-pong answered by the NIC (PsPIN ``ping_pong``; sPIN paper ping-pong).

The payload handler echoes every packet of a ping straight back to its sender, to the same
address on ``reply_qp``; the pong never touches the receiving host, so its software overhead and
two PCIe crossings disappear from the round trip.
"""
import numpy as np

from spin.api import SUCCESS, spin_msg_addr, spin_msg_offset, spin_send_packet, spin_source
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

REPLY_QP_WORD = 0  # handler memory word holding the QP the pong is sent to


@handler(cycles=40)  # PsPIN ping_pong: 29 instructions, ~38 ns warm at 1 GHz
def pong_payload(ctx, pkt, mem):
    spin_send_packet(ctx, spin_source(ctx), mem[REPLY_QP_WORD], pkt, 0, pkt.shape[0],
                     spin_msg_addr(ctx) + spin_msg_offset(ctx))
    return SUCCESS


@program_factory
def ping_pong_program(reply_qp: int) -> HandlerProgram:
    return HandlerProgram("ping_pong", payload=pong_payload,
                          memory=np.array([reply_qp], dtype=np.int64))
