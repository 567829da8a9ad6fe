"""Host programs can run Python at a point in virtual time, touching host memory; results stay
deterministic across worker counts, and a failing call is named."""
import numpy as np
import pytest

from spin.config import EngineConfig
from spin.errors import SpinError
from spin.fabric import run_scenario
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

from tests.host_callbacks import BUF, N, broken, double_received


def _scenario(callback=double_received) -> Scenario:
    # host-memory digests on: the runs compared below must leave identical memory
    sc = Scenario(Topology.star(2), engine=EngineConfig(host_memory_digests=True))
    sc.write_host_memory(0, 0, np.arange(N, dtype=np.int32))
    sc.host_program(0).send(1, 4 * N, qp=1, remote_addr=BUF).wait_recv(qp=2).mark("back")
    (sc.host_program(1).wait_recv(qp=1).call(callback)
     .send(0, 4 * N, qp=2, local_addr=BUF, remote_addr=BUF))
    return sc


def test_call_modifies_host_memory_at_its_virtual_time():
    sim = Simulation(_scenario())
    result = sim.run()
    got = sim.host_memory(0)[BUF:BUF + 4 * N].view(np.int32)
    np.testing.assert_array_equal(got, 2 * np.arange(N, dtype=np.int32))
    assert result.mark("back", 0) > 0


@pytest.mark.slow
def test_calls_give_identical_results_with_two_workers():
    one = run_scenario(_scenario())
    two = run_scenario(_scenario(), workers=2, timeout_s=120)
    assert one.deterministic_digest() == two.deterministic_digest()


def test_failing_call_is_named():
    with pytest.raises(SpinError, match=r"'broken' on node 1 .* nothing to do on node 1"):
        Simulation(_scenario(broken)).run()


def test_call_needs_a_module_level_one_argument_function():
    sc = Scenario(Topology.pair())
    with pytest.raises(SpinError, match="module-level"):
        sc.host_program(0).call(lambda host: None)
    with pytest.raises(SpinError, match="one argument"):
        sc.host_program(0).call(np.add)
