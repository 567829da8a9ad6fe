"""sPIN-paper strided vector datatype: the NIC scatters a packed stream into strided blocks of
host memory (one DMA per block piece), versus a host that receives it packed and unpacks."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write
import pytest

from handlers.datatypes import (CYCLES_PER_SEGMENT, datatypes_completion, datatypes_header,
                                datatypes_payload, datatypes_program)
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

QP, DST, STAGING = 14, 0x10000, 0x80000
SHAPES = [(64, 256, 256), (96, 160, 200)]  # (blocklen, stride, count); 96 B blocks straddle packets


def build(offload: bool, library, packed, blocklen, stride, count, memory=None) -> Scenario:
    sc = Scenario(Topology.star(2), engine_programs=library)
    sc.write_host_memory(0, 0, packed)
    sc.host_program(0).send(1, packed.nbytes, qp=QP, local_addr=0,
                            remote_addr=DST if offload else STAGING)
    host = sc.host_program(1)
    if offload:
        sc.install(ExecutionContext(1, datatypes_program(blocklen, stride), match_qp=QP,
                                    memory=memory))
        host.wait_recv(qp=QP)
    else:
        # The host unpacks block by block: an int64 add into the zeroed destination is a
        # streaming copy, charged at HostConfig.reduce_ps_per_byte by the engine.
        host.wait_recv(qp=QP)
        for b in range(count):
            host.reduce(DST + b * stride, STAGING + b * blocklen, blocklen // 8, "int64")
    host.mark("done")
    return sc


def _expected(packed, blocklen, stride, count):
    out = np.zeros(count * stride, np.uint8)
    out.reshape(count, stride)[:, :blocklen] = packed.reshape(count, blocklen)
    return out


@pytest.mark.parametrize("blocklen,stride,count", SHAPES)
def test_datatypes(library, model, blocklen, stride, count):
    packed = np.random.default_rng(10).integers(1, 256, blocklen * count, np.uint8)
    expect = _expected(packed, blocklen, stride, count)
    runs = {}
    for offload in (False, True):
        sim = Simulation(build(offload, library, packed, blocklen, stride, count))
        runs[offload] = sim.run()
        np.testing.assert_array_equal(sim.host_memory(1)[DST:DST + expect.size], expect)
    base, off = runs[False], runs[True]
    assert off.nics[1].dma_write_bytes == packed.nbytes + CQE_BYTES
    # Saved: the host's unpack. Added: the last packet's handler (one segment per block piece),
    # the completion handler, and the header stall (matching + header handler): packets that
    # arrive meanwhile are released together and their DMAs queue on PCIe.
    saved = model.host_stream_ps(packed.nbytes)
    pieces = 1024 // blocklen + 2
    nic_extra = (model.handler_ps(datatypes_payload, extra_cycles=CYCLES_PER_SEGMENT * pieces)
                 + model.handler_ps(datatypes_completion) + model.header_match_ps
                 + model.handler_ps(datatypes_header))
    gain = base.mark("done", 1) - off.mark("done", 1)
    assert saved - nic_extra <= gain <= saved


def test_invalid_datatype_drops_message(library):
    packed = np.ones(4096, np.uint8)
    bad = np.array([64, 32], np.int64)  # stride < blocklen
    sc = build(True, library, packed, 64, 256, 64, memory=bad)
    sim = Simulation(sc)
    result = sim.run()
    assert result.drops == {"handler_drop": 4}
    assert result.hosts[1].messages_received == 0
    assert not sim.host_memory(1)[DST:DST + 64 * 256].any()
