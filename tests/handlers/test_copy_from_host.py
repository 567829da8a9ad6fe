"""PsPIN ``copy_from_host``: the NIC answers read requests from host memory. The requester gets
the host's bytes; the HPU time includes one PCIe round trip per block (blocking DMA read)."""
from __future__ import annotations

import numpy as np

from handlers.copy_from_host import (CYCLES_PER_BLOCK, copy_from_host_payload,
                                     copy_from_host_program)
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

BLOCK, N_BLOCKS = 1024, 16
REQ_QP, REPLY_QP = 6, 7
TABLE, REQUEST, REPLY_BASE = 0, 0x8000, 0x20000
WANTED = np.array([5, 2, 11, 0], dtype=np.int64)


def build(offload: bool, library) -> Scenario:
    sc = Scenario(Topology.star(2), engine_programs=library)
    table = np.random.default_rng(3).integers(0, 256, BLOCK * N_BLOCKS, np.uint8)
    sc.write_host_memory(1, TABLE, table)
    sc.write_host_memory(0, REQUEST, WANTED)
    client = sc.host_program(0)
    client.send(1, WANTED.nbytes, qp=REQ_QP, local_addr=REQUEST, remote_addr=REQUEST)
    client.wait_recv(qp=REPLY_QP, count=len(WANTED)).mark("done")
    if offload:
        sc.install(ExecutionContext(1, copy_from_host_program(TABLE, BLOCK, REPLY_QP, REPLY_BASE),
                                    match_qp=REQ_QP))
    else:  # the server's host reads the request and posts one send per block
        server = sc.host_program(1).wait_recv(qp=REQ_QP)
        for k in WANTED:
            server.send(0, BLOCK, qp=REPLY_QP, local_addr=TABLE + int(k) * BLOCK,
                        remote_addr=REPLY_BASE + int(k) * BLOCK)
    return sc


def test_copy_from_host(library, model):
    runs = {}
    for offload in (False, True):
        sim = Simulation(build(offload, library))
        runs[offload] = sim.run()
        table, got = sim.host_memory(1), sim.host_memory(0)
        for k in WANTED:
            np.testing.assert_array_equal(got[REPLY_BASE + k * BLOCK:REPLY_BASE + (k + 1) * BLOCK],
                                          table[TABLE + k * BLOCK:TABLE + (k + 1) * BLOCK])
    base, off = runs[False], runs[True]
    # One handler call; its HPU waits a full PCIe round trip for every block it reads.
    round_trip = 2 * model.pcie_latency_ps + model.pcie_transfer_ps(BLOCK)
    hpu = model.handler_ps(copy_from_host_payload, extra_cycles=CYCLES_PER_BLOCK * len(WANTED))
    assert off.nics[1].hpu_busy_ps == hpu + len(WANTED) * round_trip
    assert off.nics[1].dma_read_bytes == len(WANTED) * BLOCK
    assert off.hosts[1].cpu_busy_ps == 0
    # The server host's receive and per-block send overheads disappear; the NIC spends its
    # serial round trips instead.
    gain = base.mark("done", 0) - off.mark("done", 0)
    assert gain >= model.o_recv_ps + len(WANTED) * model.o_send_ps - off.nics[1].hpu_busy_ps
