"""PsPIN ``histogram``: bins of a byte stream counted with atomics in handler memory, then DMAed
to the host; checked against numpy.bincount and against a host-side histogram baseline."""
from __future__ import annotations

import math

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write
import pytest

from handlers.histogram import histogram_completion, histogram_payload, histogram_program
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

N_SENDERS, SIZE, QP = 2, 32 * 1024, 9
RESULT, STAGING = 0x100, 0x10000


def _streams() -> list[np.ndarray]:
    rng = np.random.default_rng(5)  # skewed, so the bins differ
    return [np.minimum(rng.geometric(0.02, SIZE), 255).astype(np.uint8) for _ in range(N_SENDERS)]


def build(offload: bool, library, streams, nbins: int) -> Scenario:
    sc = Scenario(Topology.star(N_SENDERS + 1), engine_programs=library)
    for i, s in enumerate(streams, start=1):
        sc.write_host_memory(i, 0, s)
        sc.host_program(i).send(0, SIZE, qp=QP, local_addr=0, remote_addr=STAGING * i)
    root = sc.host_program(0)
    if offload:
        sc.install(ExecutionContext(0, histogram_program(RESULT, N_SENDERS, nbins), match_qp=QP))
        root.wait_event(1)
    else:  # one streaming pass over the received bytes at HostConfig.reduce_ps_per_byte
        root.wait_recv(qp=QP, count=N_SENDERS)
        root.compute(ns=N_SENDERS * SIZE * sc.host.reduce_ps_per_byte / 1000)
    root.mark("done")
    return sc


@pytest.mark.parametrize("nbins", [256, 16])
def test_histogram(library, model, nbins):
    streams = _streams()
    shift = 8 - int(math.log2(nbins))
    expect = np.bincount(np.concatenate(streams) >> shift, minlength=nbins)
    off_sim = Simulation(build(True, library, streams, nbins))
    off = off_sim.run()
    got = off_sim.host_memory(0)[RESULT:RESULT + 8 * nbins].view(np.int64)
    np.testing.assert_array_equal(got, expect)
    assert off.nics[0].dma_write_bytes == 8 * nbins + CQE_BYTES
    base = Simulation(build(False, library, streams, nbins)).run()
    # Saved: a receive overhead per extra message and the host's pass over the bytes. Added:
    # the NIC's bin updates (1 cycle/byte) where HPUs cannot keep up with the link, at most the
    # payload work of ceil(packets/HPUs) packets in a row, plus the completion handler and the
    # bins' PCIe write.
    total = N_SENDERS * SIZE
    saved = (N_SENDERS - 1) * model.o_recv_ps + model.host_stream_ps(total)
    backlog = math.ceil(total / 1024 / model.nic.hpus) + 1
    nic_extra = (backlog * model.handler_ps(histogram_payload, 1024)
                 + model.handler_ps(histogram_completion) + model.pcie_transfer_ps(8 * nbins))
    gain = base.mark("done", 0) - off.mark("done", 0)
    assert saved - nic_extra <= gain <= saved
