"""Many-to-one int32 reduction on the root's NIC (PsPIN ``reduce``): exact result, earlier
root, fewer PCIe bytes, with the gain bounded from the cost model."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write

from handlers.reduce import reduce_completion, reduce_payload, reduce_program
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

N_NODES, N_ELEMS, QP = 4, 4096, 3
VEC_BYTES = 4 * N_ELEMS
RESULT = 0x10000


def _vectors() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.integers(-2**31, 2**31, N_ELEMS, dtype=np.int64).astype(np.int32)
            for _ in range(N_NODES)]


def build(offload: bool, library, vecs) -> Scenario:
    """Every contributor writes its vector to the root (node 0), which adds its own."""
    sc = Scenario(Topology.star(N_NODES), engine_programs=library)
    for i, v in enumerate(vecs):
        sc.write_host_memory(i, 0, v)
    root = sc.host_program(0)
    for i in range(1, N_NODES):
        sc.host_program(i).send(0, VEC_BYTES, qp=QP, local_addr=0,
                                remote_addr=RESULT if offload else RESULT * i)
    if offload:
        sc.install(ExecutionContext(0, reduce_program(N_ELEMS, N_NODES - 1), match_qp=QP))
        root.wait_event(1)
        root.reduce(RESULT, 0, N_ELEMS, "int32")
    else:
        root.wait_recv(qp=QP, count=N_NODES - 1)
        for i in range(1, N_NODES):
            root.reduce(0, RESULT * i, N_ELEMS, "int32")
    root.mark("done")
    return sc


def test_reduce_exact_faster_fewer_pcie_bytes(library, model):
    vecs = _vectors()
    expect = np.sum(np.stack(vecs), axis=0, dtype=np.int32)  # int32 wraparound, as the NIC
    runs = {}
    for offload, addr in ((False, 0), (True, RESULT)):
        sim = Simulation(build(offload, library, vecs))
        runs[offload] = sim.run()
        got = sim.host_memory(0)[addr:addr + VEC_BYTES].view(np.int32)
        np.testing.assert_array_equal(got, expect)
    base, off = runs[False], runs[True]
    # PCIe at the root: one write per contributor vs one write of the result.
    assert base.nics[0].dma_write_bytes == (N_NODES - 1) * (VEC_BYTES + CQE_BYTES)
    assert off.nics[0].dma_write_bytes == VEC_BYTES + CQE_BYTES
    # The root saves N-2 receive overheads and N-2 host reductions; the NIC adds at most one
    # packet's payload handler, the completion handler and the result's PCIe transfer.
    saved = (N_NODES - 2) * (model.o_recv_ps + model.host_stream_ps(VEC_BYTES))
    nic_extra = (model.handler_ps(reduce_payload, 1024) + model.handler_ps(reduce_completion)
                 + model.pcie_transfer_ps(VEC_BYTES))
    gain = base.mark("done", 0) - off.mark("done", 0)
    assert saved - nic_extra <= gain <= saved
