"""Ping-pong answered by the pong NIC (PsPIN ``ping_pong``): data, the gain the cost model
predicts, and identical virtual time with the JIT disabled (sPIN's handler-debugging mode)."""
from __future__ import annotations


import numpy as np

from handlers.ping_pong import ping_pong_program, pong_payload
from spin.handler import ExecutionContext, HandlerProgram
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

ROUNDS, SIZE = 4, 512
PING_QP, PONG_QP = 1, 2
DATA, PING_ADDR = 0, 4096


def build(offload: bool, programs: list[HandlerProgram] | None = None) -> Scenario:
    """Node 0 pings node 1 ``ROUNDS`` times; the pong comes back to node 0 at PING_ADDR."""
    sc = Scenario(Topology.star(2), engine_programs=programs)
    sc.write_host_memory(0, DATA, np.arange(SIZE, dtype=np.uint8))
    ping, pong = sc.host_program(0), sc.host_program(1)
    for _ in range(ROUNDS):
        ping.send(1, SIZE, qp=PING_QP, local_addr=DATA, remote_addr=PING_ADDR)
        ping.wait_recv(qp=PONG_QP)
        if not offload:
            pong.wait_recv(qp=PING_QP)
            pong.send(0, SIZE, qp=PONG_QP, local_addr=PING_ADDR, remote_addr=PING_ADDR)
    ping.mark("done")
    if offload:
        sc.install(ExecutionContext(1, ping_pong_program(reply_qp=PONG_QP), match_qp=PING_QP))
    return sc


def _run(offload: bool, library):
    sim = Simulation(build(offload, library))
    return sim, sim.run()


def test_pong_data_and_gain(library, model):
    base_sim, base = _run(False, library)
    off_sim, off = _run(True, library)
    for sim in (base_sim, off_sim):
        echoed = sim.host_memory(0)[PING_ADDR:PING_ADDR + SIZE]
        np.testing.assert_array_equal(echoed, np.arange(SIZE, dtype=np.uint8))
    assert off.hosts[1].cpu_busy_ps == 0
    assert all(m.handled_by_nic for m in off.messages if m.dst == 1)
    # Per round the NIC saves at least the pong host's receive and send overheads, and two PCIe
    # latencies (ping written to host memory, pong read back), minus the handler's own cost.
    per_round = (model.o_recv_ps + model.o_send_ps + 2 * model.pcie_latency_ps
                 - model.handler_ps(pong_payload, SIZE))
    gain = base.mark("done", 0) - off.mark("done", 0)
    assert gain >= ROUNDS * per_round
    # ... and at most those plus the full PCIe path of the host pong (3 latencies, 2 transfers).
    upper = ROUNDS * (model.o_recv_ps + model.o_send_ps + 3 * model.pcie_latency_ps
                      + 2 * model.pcie_transfer_ps(SIZE))
    assert gain <= upper


def test_debug_mode_gives_same_virtual_time(library):
    """The handlers run as plain Python inside the compiled engine: identical results."""
    jit = Simulation(build(True, library)).run()
    debug = Simulation(build(True, library).with_debug_handlers()).run()
    assert (debug.mark("done", 0), debug.end_time_ps, debug.deterministic_digest()) == \
        (jit.mark("done", 0), jit.end_time_ps, jit.deterministic_digest())
