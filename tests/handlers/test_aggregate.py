"""PsPIN ``aggregate``: every int32 of every message summed into one scalar on the NIC. The
total is accumulated in int64, so it is exact where an int32 accumulator would wrap."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write

from handlers.aggregate import aggregate_completion, aggregate_payload, aggregate_program
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

N_SENDERS, N_VALUES, QP = 3, 4096, 8
VEC_BYTES = 4 * N_VALUES
RESULT, STAGING = 0x100, 0x10000


def build(offload: bool, library, vecs) -> Scenario:
    sc = Scenario(Topology.star(N_SENDERS + 1), engine_programs=library)
    for i, v in enumerate(vecs, start=1):
        sc.write_host_memory(i, 0, v)
        sc.host_program(i).send(0, VEC_BYTES, qp=QP, local_addr=0, remote_addr=STAGING * i)
    root = sc.host_program(0)
    if offload:
        sc.install(ExecutionContext(0, aggregate_program(RESULT, N_SENDERS), match_qp=QP))
        root.wait_event(1)
    else:  # the host receives every vector and sums it itself
        root.wait_recv(qp=QP, count=N_SENDERS)
        # one streaming pass over all values at HostConfig.reduce_ps_per_byte
        root.compute(ns=N_SENDERS * VEC_BYTES * sc.host.reduce_ps_per_byte / 1000)
    root.mark("done")
    return sc


def test_aggregate_exact_and_faster(library, model):
    rng = np.random.default_rng(4)
    vecs = [rng.integers(2**30, 2**31, N_VALUES, dtype=np.int64).astype(np.int32)
            for _ in range(N_SENDERS)]
    expect = int(np.sum(np.concatenate(vecs), dtype=np.int64))
    assert expect != int(np.sum(np.concatenate(vecs), dtype=np.int32))  # int32 would wrap
    off_sim = Simulation(build(True, library, vecs))
    off = off_sim.run()
    assert int(off_sim.host_memory(0)[RESULT:RESULT + 8].view(np.int64)[0]) == expect
    base = Simulation(build(False, library, vecs)).run()
    assert off.nics[0].dma_write_bytes == 8 + CQE_BYTES               # result + event
    assert base.nics[0].dma_write_bytes == N_SENDERS * (VEC_BYTES + CQE_BYTES)
    # Saved: all but one receive overhead and the host's pass over the data. Added: the last
    # packet's payload handler and the completion handler (then one 8 B write).
    saved = (N_SENDERS - 1) * model.o_recv_ps + model.host_stream_ps(N_SENDERS * VEC_BYTES)
    nic_extra = (model.handler_ps(aggregate_payload, 1024)
                 + model.handler_ps(aggregate_completion) + model.pcie_transfer_ps(8))
    gain = base.mark("done", 0) - off.mark("done", 0)
    assert saved - nic_extra <= gain <= saved
