"""sPIN-paper accumulate: the NIC combines an incoming vector with host memory by DMA
read-modify-write (int32/float32/float64 add, complex64 multiply), checked against numpy."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write
import pytest

from handlers.accumulate import (accumulate_completion, accumulate_payload,
                                 accumulate_program)
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

SIZE, QP, TARGET, STAGING = 16 * 1024, 13, 0x10000, 0x40000
DTYPES = {"add_int32": np.int32, "add_float32": np.float32, "add_float64": np.float64,
          "mul_complex64": np.complex64}


def _vectors(op: str):
    rng = np.random.default_rng(9)
    dt = np.dtype(DTYPES[op])
    n = SIZE // dt.itemsize
    if dt.kind == "i":
        return [rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(dt) for _ in range(2)]
    if dt.kind == "c":
        return [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
                for _ in range(2)]
    return [rng.standard_normal(n).astype(dt) for _ in range(2)]


def build(offload: bool, library, op, x, y) -> Scenario:
    """Node 0 sends y; node 1 holds x at TARGET and ends with x (op) y there."""
    sc = Scenario(Topology.star(2), engine_programs=library)
    sc.write_host_memory(0, 0, y)
    sc.write_host_memory(1, TARGET, x)
    sc.host_program(0).send(1, SIZE, qp=QP, local_addr=0,
                            remote_addr=TARGET if offload else STAGING)
    host = sc.host_program(1)
    if offload:
        sc.install(ExecutionContext(1, accumulate_program(op), match_qp=QP))
        host.wait_recv(qp=QP)
    else:
        host.wait_recv(qp=QP)
        host.reduce(TARGET, STAGING, x.size, x.dtype)
    host.mark("done")
    return sc


@pytest.mark.parametrize("op", list(DTYPES))
def test_accumulate_matches_numpy(library, op):
    x, y = _vectors(op)
    expect = x * y if op == "mul_complex64" else x + y  # int32: numpy's wraparound, as the NIC
    sim = Simulation(build(True, library, op, x, y))
    sim.run()
    got = sim.host_memory(1)[TARGET:TARGET + SIZE].view(x.dtype)
    if x.dtype.kind == "c":
        np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expect)


def test_accumulate_timing(library, model):
    x, y = _vectors("add_float64")
    base = Simulation(build(False, library, "add_float64", x, y)).run()
    off = Simulation(build(True, library, "add_float64", x, y)).run()
    # Every packet's HPU waits one PCIe round trip (blocking read) on top of its cycles; reads
    # of packets released together after the first packet's matching queue on the PCIe link.
    packets = SIZE // 1024
    round_trip = 2 * model.pcie_latency_ps + model.pcie_transfer_ps(1024)
    busy = off.nics[1].hpu_busy_ps - model.handler_ps(accumulate_completion)
    floor = packets * (model.handler_ps(accumulate_payload, 1024) + round_trip)
    assert floor <= busy <= floor + packets * (packets - 1) // 2 * model.pcie_transfer_ps(1024)
    # The cost of RMW: the data crosses PCIe twice (read + write) instead of once.
    assert off.nics[1].dma_read_bytes == SIZE
    assert off.nics[1].dma_write_bytes == SIZE + CQE_BYTES
    assert base.nics[1].dma_write_bytes == SIZE + CQE_BYTES and base.nics[1].dma_read_bytes == 0
    # The gain: the host's reduction, minus what the last packet's RMW adds to the NIC path.
    saved = model.host_stream_ps(SIZE)
    nic_extra = (model.handler_ps(accumulate_payload, 1024) + round_trip
                 + model.handler_ps(accumulate_completion) + model.header_match_ps)
    gain = base.mark("done", 1) - off.mark("done", 1)
    assert saved - nic_extra <= gain <= saved
