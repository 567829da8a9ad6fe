"""Large-message echo from host memory (sPIN paper ping-pong: the completion handler replies with
a put from host memory).

Payload handlers let every packet take the default path into host memory (PROCEED); once the
whole message is there, the completion handler puts it back to the sender from host memory with
``spin_put_from_host``, which segments a message of any size. The echoing host's CPU is never
involved. A compare-and-swap in handler memory records the first sender seen, and a fetch-add
counts echoes.

Handler memory (int64): ``[reply_qp, echoes, first_sender + 1]``.
"""
import numpy as np

from spin.api import (PROCEED, SUCCESS, spin_compare_and_swap, spin_fetch_add, spin_msg_addr,
                      spin_msg_size, spin_put_from_host, spin_source)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

REPLY_QP, ECHOES, FIRST_SENDER = 0, 1, 2


@handler(cycles=10)
def echo_payload(ctx, pkt, mem):
    return PROCEED


@handler(cycles=40)  # issue one command: comparable to PsPIN's ping-pong handler
def echo_completion(ctx, pkt, mem):
    src = spin_source(ctx)
    spin_compare_and_swap(mem, FIRST_SENDER, 0, src + 1)
    spin_fetch_add(mem, ECHOES, 1)
    spin_put_from_host(ctx, src, mem[REPLY_QP], spin_msg_addr(ctx), spin_msg_size(ctx),
                       spin_msg_addr(ctx))
    return SUCCESS


@program_factory
def echo_program(reply_qp: int) -> HandlerProgram:
    mem = np.zeros(3, np.int64)
    mem[REPLY_QP] = reply_qp
    return HandlerProgram("echo", payload=echo_payload, completion=echo_completion, memory=mem)
