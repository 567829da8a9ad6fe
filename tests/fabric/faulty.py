"""A handler program that fails on purpose, to test error reporting."""
import numpy as np

from spin.api import SUCCESS
from spin.handler import HandlerProgram


def failing_payload(ctx, pkt, mem):
    if pkt[0] == 0xEE:
        raise ValueError("payload byte 0 is 0xEE")
    mem[0] += 1
    return SUCCESS


def failing_program() -> HandlerProgram:
    return HandlerProgram("failing", payload=failing_payload, memory=np.zeros(1, np.int64))
