"""In-switch multicast: one sender's message is replicated by a switch to a group of ports.

The payload handler multicasts each packet to the group declared with
``Scenario.multicast_group`` (its id is handler memory word 0) and consumes the original
(SUCCESS). Copies leaving towards a host are addressed to that host (the switch rewrites the
destination per replica at egress, as SwitchML's result multicast does), so every member NIC
receives a complete RDMA WRITE message.

Handler memory (int64): ``[group, packets_replicated]``.
"""
import numpy as np

from spin.api import SUCCESS, spin_multicast
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

GROUP, REPLICATED = 0, 1


@handler(cycles=25)
def multicast_payload(ctx, pkt, mem):
    spin_multicast(ctx, mem[GROUP])
    mem[REPLICATED] += 1
    return SUCCESS


@program_factory
def switch_multicast_program(group: int = 0) -> HandlerProgram:
    return HandlerProgram("switch_multicast", payload=multicast_payload,
                          memory=np.array([group, 0], np.int64))
