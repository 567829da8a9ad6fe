"""NIC-driven binomial-tree broadcast (sPIN paper; ``spcl/LogGOPSim2`` ``smp_code.c``).

The root's host sends the message to its children. On every other node the payload handler
forwards each packet to the node's children as it arrives (sPIN's PutFromDevice: one RDMA WRITE
ONLY per packet, same target address) and returns PROCEED to deliver it locally too; no host is
involved until its data is complete. The completion handler counts delivered bytes and returns
PROCEED once the whole broadcast has landed, so each host sees exactly one completion, ordered
after all of its data.

Handler memory (int64): ``[total_bytes, received, n_children, children...]``.
"""
import numpy as np

from spin.api import (PROCEED, SUCCESS, spin_add_cycles, spin_msg_addr, spin_msg_offset,
                      spin_msg_size, spin_qp, spin_send_packet)
from spin.handler import HandlerProgram, handler
from spin.scenario_code import program_factory

TOTAL, RECEIVED, N_CHILDREN, CHILDREN = 0, 1, 2, 3
CYCLES_PER_CHILD = 10  # build the header and issue one send command


@handler(cycles=40)  # like PsPIN ping_pong's send (~38 ns); per child charged below
def broadcast_payload(ctx, pkt, mem):
    addr = spin_msg_addr(ctx) + spin_msg_offset(ctx)
    n = mem[N_CHILDREN]
    for i in range(n):
        spin_send_packet(ctx, mem[CHILDREN + i], spin_qp(ctx), pkt, 0, pkt.shape[0], addr)
    spin_add_cycles(ctx, CYCLES_PER_CHILD * n)
    return PROCEED


@handler(cycles=20)  # add, compare
def broadcast_completion(ctx, pkt, mem):
    got = mem[RECEIVED] + spin_msg_size(ctx)
    if got >= mem[TOTAL]:
        mem[RECEIVED] = 0
        return PROCEED
    mem[RECEIVED] = got
    return SUCCESS


def binomial_children(rank: int, n_nodes: int, root: int = 0) -> list[int]:
    """Children of ``rank`` in a binomial tree rooted at ``root``: relative rank r sends to
    r + 2**k for every 2**k > r (its parent is r without its highest set bit), in increasing
    k, which is largest subtree first."""
    r = (rank - root) % n_nodes
    out, k = [], 1
    while k < n_nodes:
        if k > r and r + k < n_nodes:
            out.append((r + k + root) % n_nodes)
        k <<= 1
    return out


def binomial_levels(n_nodes: int) -> int:
    """Depth of the binomial tree: ceil(log2(n_nodes))."""
    return max(0, (n_nodes - 1).bit_length())


@program_factory
def broadcast_program(children: list[int], total_bytes: int) -> HandlerProgram:
    mem = np.zeros(CHILDREN + max(len(children), 1), np.int64)
    mem[TOTAL], mem[N_CHILDREN] = total_bytes, len(children)
    mem[CHILDREN:CHILDREN + len(children)] = children
    return HandlerProgram("broadcast", payload=broadcast_payload,
                          completion=broadcast_completion, memory=mem)
