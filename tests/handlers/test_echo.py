"""Large-message echo answered from host memory by the completion handler (sPIN ping-pong with
PutFromHost): data comes back intact and the echoing host's two software overheads disappear."""
import numpy as np

from nic_emulator.pcie import CQE_BYTES
from handlers.echo import ECHOES, FIRST_SENDER, echo_program
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

SIZE, ROUNDS = 8192, 3
ECHO_QP, REPLY_QP, ADDR = 1, 2, 0x4000


def build(offload: bool, library):
    sc = Scenario(Topology.star(3), engine_programs=library)
    data = np.random.default_rng(5).integers(0, 256, SIZE, dtype=np.uint8)
    sc.write_host_memory(2, 0, data)
    sender, echoer = sc.host_program(2), sc.host_program(1)
    for _ in range(ROUNDS):
        sender.send(1, SIZE, qp=ECHO_QP, remote_addr=ADDR).wait_recv(qp=REPLY_QP)
        if not offload:
            echoer.wait_recv(qp=ECHO_QP)
            echoer.send(2, SIZE, qp=REPLY_QP, local_addr=ADDR, remote_addr=ADDR)
    sender.mark("done")
    ctx = None
    if offload:
        ctx = sc.install(ExecutionContext(1, echo_program(REPLY_QP), match_qp=ECHO_QP))
    return sc, ctx, data


def test_echo_from_host_memory(library, model):
    results = {}
    for offload in (False, True):
        sc, ctx, data = build(offload, library)
        sim = Simulation(sc)
        r = sim.run()
        np.testing.assert_array_equal(sim.host_memory(2)[ADDR:ADDR + SIZE], data)
        np.testing.assert_array_equal(sim.host_memory(1)[ADDR:ADDR + SIZE], data)
        if offload:
            mem = sim.handler_memory(ctx)
            assert mem[ECHOES] == ROUNDS and mem[FIRST_SENDER] == 2 + 1
            assert r.hosts[1].cpu_busy_ps == 0
        results[offload] = r
    base, off = results[False], results[True]
    saved = base.mark("done", 2) - off.mark("done", 2)
    # per round the echo host's receive + send overheads disappear, and so does the completion
    # entry's trip to the host (its PCIe write and latency); the NIC adds its handler invocations
    per_round = (model.o_recv_ps + model.o_send_ps + model.pcie_latency_ps
                 + model.pcie_transfer_ps(CQE_BYTES))
    nic_added = 2 * 40 * model.cycle_ps + 10 * model.cycle_ps * (SIZE // 1024)
    # the baseline also queues its send's PCIe reads behind the echo's last data writes: allow a
    # few MTU transfers of PCIe queueing on top
    queueing = 3 * model.pcie_transfer_ps(1024)
    assert ROUNDS * (per_round - nic_added) <= saved <= ROUNDS * (per_round + queueing)
