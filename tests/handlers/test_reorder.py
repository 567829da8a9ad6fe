"""PsPIN ``ooorb``: a stream of sequence-numbered messages sent in permuted order is delivered
to the host in sequence order by a reorder buffer in handler memory; the baseline host takes
one completion per message and copies each into place itself."""
from __future__ import annotations

import numpy as np

from handlers.reorder import (CYCLES_PER_FLUSH, reorder_completion, reorder_payload,
                              reorder_program)
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

N_MSGS, SLOT, WINDOW, QP = 48, 256, 16, 11
STAGING, LOG = 0x10000, 0x40000


def _stream():
    """Messages (seq in the first 8 bytes) and a send order shuffled within windows of 8."""
    rng = np.random.default_rng(7)
    msgs = rng.integers(0, 256, (N_MSGS, SLOT), np.uint8)
    msgs[:, :8] = np.arange(N_MSGS, dtype=np.int64).view(np.uint8).reshape(N_MSGS, 8)
    order = np.concatenate([rng.permutation(np.arange(b, b + 8)) for b in range(0, N_MSGS, 8)])
    return msgs, order


def build(offload: bool, library, msgs, order, window: int = WINDOW) -> Scenario:
    """The sender posts message ``order[i]`` as its i-th send, to staging slot i."""
    sc = Scenario(Topology.star(2), engine_programs=library)
    sc.write_host_memory(0, 0, msgs)
    sender, host = sc.host_program(0), sc.host_program(1)
    for i, seq in enumerate(order):
        sender.send(1, SLOT, qp=QP, local_addr=int(seq) * SLOT, remote_addr=STAGING + i * SLOT)
    if offload:
        sc.install(ExecutionContext(1, reorder_program(LOG, len(order), SLOT, window), match_qp=QP))
        host.wait_recv(qp=QP)
    else:  # one completion per message, then copy each into its sequence slot (an int64 add
        # into the zeroed log: a streaming copy charged at HostConfig.reduce_ps_per_byte)
        host.wait_recv(qp=QP, count=len(order))
        for i, seq in enumerate(order):
            host.reduce(LOG + int(seq) * SLOT, STAGING + i * SLOT, SLOT // 8, "int64")
    host.mark("done")
    return sc


def test_reorder(library, model):
    msgs, order = _stream()
    assert (order != np.arange(N_MSGS)).any()
    runs = {}
    for offload in (False, True):
        sim = Simulation(build(offload, library, msgs, order))
        runs[offload] = sim.run()
        log = sim.host_memory(1)[LOG:LOG + msgs.nbytes].reshape(N_MSGS, SLOT)
        np.testing.assert_array_equal(log, msgs)  # sequence order
    base, off = runs[False], runs[True]
    assert off.drops == {} and off.hosts[1].messages_received == 1
    # Saved: N-1 receive overheads and the host's copies. Added at most: the final in-order
    # message's handler flushing a whole window, those DMAs, and the completion handler.
    saved = (N_MSGS - 1) * model.o_recv_ps + model.host_stream_ps(msgs.nbytes)
    nic_extra = (model.handler_ps(reorder_payload, extra_cycles=CYCLES_PER_FLUSH * WINDOW)
                 + WINDOW * model.pcie_transfer_ps(SLOT) + model.handler_ps(reorder_completion))
    gain = base.mark("done", 1) - off.mark("done", 1)
    assert saved - nic_extra <= gain <= saved


def test_reorder_drops_outside_window(library):
    msgs, _ = _stream()
    order = np.array([0, 5, 1, 2, 3, 4])  # with a window of 4, seq 5 arrives too early
    sim = Simulation(build(True, library, msgs, order, window=4))
    result = sim.run()
    assert result.drops == {"handler_drop": 1}
    assert result.hosts[1].messages_received == 0  # the stream never completes
    log = sim.host_memory(1)[LOG:LOG + 6 * SLOT].reshape(6, SLOT)
    np.testing.assert_array_equal(log[:5], msgs[:5])
    assert not log[5].any()
