"""sPIN-paper binomial broadcast driven by the NICs: each NIC forwards every packet to its
children as it arrives and delivers it locally, versus hosts that receive and re-send."""
from __future__ import annotations

import numpy as np

from handlers.broadcast import (CYCLES_PER_CHILD, binomial_children, binomial_levels,
                                broadcast_payload, broadcast_program)
from spin.config import LinkConfig
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

N_NODES, SIZE, QP, DATA = 8, 4096, 12, 0x2000


def build(offload: bool, library, data) -> Scenario:
    sc = Scenario(Topology.star(N_NODES), engine_programs=library)
    sc.write_host_memory(0, DATA, data)
    root = sc.host_program(0)
    for c in binomial_children(0, N_NODES):
        root.send(c, SIZE, qp=QP, local_addr=DATA, remote_addr=DATA)
    for r in range(1, N_NODES):
        host = sc.host_program(r).wait_recv(qp=QP).mark("have")
        if offload:
            sc.install(ExecutionContext(r, broadcast_program(binomial_children(r, N_NODES), SIZE),
                                        match_qp=QP))
        else:
            for c in binomial_children(r, N_NODES):
                host.send(c, SIZE, qp=QP, local_addr=DATA, remote_addr=DATA)
    return sc


def test_broadcast(library, model):
    data = np.random.default_rng(8).integers(0, 256, SIZE, np.uint8)
    runs = {}
    for offload in (False, True):
        sim = Simulation(build(offload, library, data))
        runs[offload] = sim.run()
        for r in range(N_NODES):
            np.testing.assert_array_equal(sim.host_memory(r)[DATA:DATA + SIZE], data)
    base, off = runs[False], runs[True]
    assert all(h.cpu_busy_ps == model.o_recv_ps for h in off.hosts[1:])
    # The deepest node, 2**levels - 1, is reached through a first child at every level, so
    # each forwarding host on its path pays one receive and one send overhead plus PCIe (the
    # data's write and completion, the re-send's read); a NIC forwards each packet in a handler
    # instead, with no store-and-forward of the message. The root's sends and the leaf's
    # receive are paid in both variants: levels - 1 forwarding hops differ.
    levels = binomial_levels(N_NODES)
    deepest = 2 ** levels - 1
    fanout = max(len(binomial_children(r, N_NODES)) for r in range(1, N_NODES))
    handler = model.handler_ps(broadcast_payload, extra_cycles=CYCLES_PER_CHILD * fanout)
    per_hop_min = model.o_recv_ps + model.o_send_ps + 2 * model.pcie_latency_ps - handler
    serialise = SIZE * 8 * 1000 // LinkConfig().rate_gbps  # the message on one link, ps
    per_hop_max = (model.o_recv_ps + model.o_send_ps + 3 * model.pcie_latency_ps
                   + 2 * model.pcie_transfer_ps(SIZE) + 2 * serialise)
    gain = base.mark("have", deepest) - off.mark("have", deepest)
    assert (levels - 1) * per_hop_min <= gain <= (levels - 1) * per_hop_max
    # Whole broadcast (last node served): at least the host overheads of the forwarding hops.
    makespan_gain = max(base.marks["have"].values()) - max(off.marks["have"].values())
    assert makespan_gain >= (levels - 1) * (model.o_recv_ps + model.o_send_ps)
