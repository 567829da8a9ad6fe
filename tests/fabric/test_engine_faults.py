"""Failures inside the engine are reported with the handler, context, packet and worker."""
import numpy as np
import pytest

from spin.errors import HandlerError, WorkerError
from spin.fabric import run_scenario
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

from tests.probe_handlers import engine_test_programs, failing_program


def _scenario() -> Scenario:
    sc = Scenario(Topology.star(4), engine_programs=engine_test_programs())
    sc.install(ExecutionContext(3, failing_program(), match_qp=1))
    payload = np.zeros(64, np.uint8)
    payload[0] = 0xEE
    sc.write_host_memory(1, 0, payload)
    sc.host_program(1).send(3, 64, qp=1, remote_addr=0)
    return sc


def test_failing_handler_is_named_with_its_packet():
    with pytest.raises(HandlerError) as info:
        Simulation(_scenario()).run()
    msg = str(info.value)
    assert "failing_payload" in msg and "payload handler" in msg
    assert "program 'failing'" in msg and "node 3" in msg
    assert "src host 'h1' (node 1)" in msg and "qp 1" in msg and "payload byte 0 is 0xEE" in msg


@pytest.mark.slow
def test_failing_handler_in_a_worker_stops_the_run_naming_the_worker():
    with pytest.raises(HandlerError):
        Simulation(_scenario()).run()  # warm the engine cache for the worker processes
    with pytest.raises(WorkerError) as info:
        run_scenario(_scenario(), workers=2, timeout_s=120)
    msg = str(info.value)
    assert "h3" in msg and "failing_payload" in msg
