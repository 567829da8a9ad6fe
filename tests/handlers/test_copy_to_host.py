"""PsPIN ``copy_to_host``: the NIC places each packet at a host buffer of its choosing. Same
bytes as the default RDMA-write path, at a cost bounded by the handler's declared cycles."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write

from handlers.copy_to_host import (copy_to_host_completion, copy_to_host_payload,
                                   copy_to_host_program)
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

SIZE, QP = 8 * 1024, 5
DATA, RETH_ADDR, NIC_BUFFER = 0, 0x1000, 0x40000


def build(offload: bool, library) -> Scenario:
    sc = Scenario(Topology.star(2), engine_programs=library)
    sc.write_host_memory(0, DATA, np.random.default_rng(2).integers(0, 256, SIZE, np.uint8))
    sc.host_program(0).send(1, SIZE, qp=QP, local_addr=DATA, remote_addr=RETH_ADDR)
    sc.host_program(1).wait_recv(qp=QP).mark("done")
    if offload:
        sc.install(ExecutionContext(1, copy_to_host_program(NIC_BUFFER), match_qp=QP))
    return sc


def test_copy_to_host(library, model):
    base_sim, off_sim = (Simulation(build(o, library)) for o in (False, True))
    base, off = base_sim.run(), off_sim.run()
    sent = base_sim.host_memory(0)[DATA:DATA + SIZE]
    np.testing.assert_array_equal(base_sim.host_memory(1)[RETH_ADDR:RETH_ADDR + SIZE], sent)
    np.testing.assert_array_equal(off_sim.host_memory(1)[NIC_BUFFER:NIC_BUFFER + SIZE], sent)
    assert not off_sim.host_memory(1)[RETH_ADDR:RETH_ADDR + SIZE].any()
    assert off.nics[1].dma_write_bytes == base.nics[1].dma_write_bytes == SIZE + CQE_BYTES
    # No gain to expect: the handler only adds its own latency to the last packet's DMA.
    extra = off.mark("done", 1) - base.mark("done", 1)
    assert 0 < extra <= (model.handler_ps(copy_to_host_payload, 1024)
                         + model.handler_ps(copy_to_host_completion))
