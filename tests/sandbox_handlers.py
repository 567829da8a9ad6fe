"""Handlers that try to leave the sandbox of a NIC core: Python object mode, C through ctypes,
recursion (direct, through a helper, mutual). Only ever constructed into programs, never run."""
import ctypes
import os

import numba
from numba import objmode as quiet_mode

import numpy as np

from spin.api import SUCCESS
from spin.engine import handler_abi
from spin.engine.handler_abi import array_at
from spin.engine.heap import push_event

_system = ctypes.CDLL(None).system
_system.argtypes = [ctypes.c_char_p]
_system.restype = ctypes.c_int


def objmode_payload(ctx, pkt, mem):
    with numba.objmode():
        os.system("true")
    return SUCCESS


def aliased_objmode_payload(ctx, pkt, mem):
    with quiet_mode():
        os.system("true")
    return SUCCESS


def ctypes_payload(ctx, pkt, mem):
    _system(b"true")
    return SUCCESS


def recursive_payload(ctx, pkt, mem):
    if mem[0] > 10:
        return SUCCESS
    mem[0] += 1
    return recursive_payload(ctx, pkt, mem)


@numba.njit
def _depth(n):
    if n <= 0:
        return 0
    return 1 + _depth(n - 1)


def deep_helper_payload(ctx, pkt, mem):
    mem[0] = _depth(100_000_000)
    return SUCCESS


def _ping(n):
    return 0 if n <= 0 else _pong(n - 1)


def _pong(n):
    return _ping(n - 1)


def mutual_payload(ctx, pkt, mem):
    mem[0] = _ping(5)
    return SUCCESS


def _double(x):
    return 2 * x


def fine_payload(ctx, pkt, mem):
    mem[0] = _double(_double(pkt.shape[0]))     # a helper called twice is no recursion
    return SUCCESS


def raw_memory_payload(ctx, pkt, mem):
    mem[0] = array_at(8, 1, np.int64)[0]
    return SUCCESS


def engine_internal_payload(ctx, pkt, mem):
    mem[0] = handler_abi.array_at(8, 1, np.int64)[0]
    return SUCCESS


def engine_function_payload(ctx, pkt, mem):
    push_event(mem, 0, 0, 0, 0, 0, 0)
    return SUCCESS
