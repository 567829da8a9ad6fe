"""``EngineWorker.deliver`` validates like the transport path (issue 18, item 7): an
out-of-range port (which made the engine write outside its state), a negative port (dropped
uncounted), a frame for another worker's device, a short frame and a time in the past are each
refused, naming the frame, before the engine sees the batch; a valid batch is delivered."""
from __future__ import annotations

import numpy as np
import pytest

from spin.errors import TransportError
from spin.runtime.fabric_workers import EngineWorker, PartitionedScenario, auto_partition
from spin.parallel.batch import FrameBatch
from spin.simulation import Scenario
from spin.topology import Topology


@pytest.fixture(scope="module")
def worker() -> EngineWorker:
    sc = Scenario(Topology.star(4))
    for i in range(4):
        sc.host_program(i).send((i + 1) % 4, 4096, qp=1)
    spec = PartitionedScenario(sc, auto_partition(sc, 2))
    w = EngineWorker(spec, 0, 2)
    w.run_until(50_000)
    return w


def _batch(worker: EngineWorker, **change) -> FrameBatch:
    """One well-formed 64 B frame for a port of a device worker 0 owns, from its link peer."""
    check = worker.check
    port = int(np.nonzero(check.owner[check.port_dev] == 0)[0][0])
    peer = int(check.peer_dev[port])
    f = dict(arrival_ps=np.array([10**9], np.int64), dst_device=np.array([check.port_dev[port]], np.int32),
             dst_port=np.array([port], np.int32), order_key=np.array([peer << 40], np.int64),
             length=np.array([64], np.int32), frames=np.zeros((1, check.slot_bytes), np.uint8))
    for k, v in change.items():
        f[k] = np.array([v], f[k].dtype)
    return FrameBatch.trusted(**f)


@pytest.mark.parametrize("change, reason", [
    (dict(dst_port=10**6), "bad_port"),
    (dict(dst_port=-1), "bad_port"),
    (dict(length=10), "bad_length"),
    (dict(length=10**6), "bad_length"),
    (dict(arrival_ps=0), "arrival_in_past"),
])
def test_deliver_refuses_what_the_transport_refuses(worker, change, reason):
    events = worker.events_processed()
    pending = worker.next_event_ps()
    with pytest.raises(TransportError, match=rf"deliver refused a batch of 1 frames \({reason}\): frame 0"):
        worker.deliver(_batch(worker, **change))
    assert worker.next_event_ps() == pending and worker.events_processed() == events


def test_deliver_refuses_a_port_of_another_workers_device(worker):
    check = worker.check
    foreign = int(np.nonzero(check.owner[check.port_dev] != 0)[0][0])
    with pytest.raises(TransportError, match=r"\(not_owned\)"):
        worker.deliver(_batch(worker, dst_port=foreign))


def test_a_valid_batch_is_delivered(worker):
    worker.deliver(_batch(worker))
    assert worker.next_event_ps() <= 10**9
