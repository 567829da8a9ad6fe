"""Bad input gets a clear error naming the field, the value and the valid choices."""
import numpy as np
import pytest

from spin.config import EngineConfig, LinkConfig, NicConfig
from spin.errors import ConfigError, HandlerError, TopologyError
from spin.handler import ExecutionContext, HandlerProgram
from spin.simulation import Scenario
from spin.topology import Topology


def test_config_error_names_field_value_and_choices():
    with pytest.raises(ConfigError) as info:
        EngineConfig.make(mtu_bytes=1000)
    msg = str(info.value)
    assert "mtu_bytes" in msg and "1000" in msg and "1024" in msg and "4096" in msg
    with pytest.raises(ConfigError) as info:
        NicConfig.make(hpus=0)
    assert "hpus" in str(info.value) and "0" in str(info.value)
    with pytest.raises(ConfigError) as info:
        LinkConfig.make(rate_gbsp=100)
    assert "rate_gbsp" in str(info.value) and "rate_gbps" in str(info.value)


def test_topology_errors():
    t = Topology()
    t.add_host("a")
    with pytest.raises(TopologyError, match="used twice"):
        t.add_host("a")
    with pytest.raises(TopologyError, match="'nope' is not a device"):
        t.add_link("a", "nope")


def _two(ctx, pkt):
    return 0


def _ok(ctx, pkt, mem):
    return 0


def test_handler_signature_is_checked_at_registration():
    with pytest.raises(HandlerError) as info:
        HandlerProgram("p", payload=_two)
    assert "_two" in str(info.value) and "(ctx, pkt, mem)" in str(info.value)
    with pytest.raises(HandlerError, match="module level"):
        HandlerProgram("p", payload=lambda ctx, pkt, mem: 0)
    with pytest.raises(HandlerError, match="no handler"):
        HandlerProgram("p")


def test_scenario_rejects_bad_nodes_qps_and_memory():
    sc = Scenario(Topology.star(2))
    with pytest.raises(ConfigError, match="node=5"):
        sc.host_program(5)
    with pytest.raises(ConfigError, match="qp=999"):
        sc.host_program(0).send(1, 10, qp=999)
    with pytest.raises(ConfigError, match="memory_bytes"):
        sc.write_host_memory(0, (1 << 20) - 4, np.zeros(8, np.uint8))
    prog = HandlerProgram("p", payload=_ok, memory=np.zeros(4, np.int32))
    with pytest.raises(ConfigError, match="dtype"):
        sc.install(ExecutionContext(0, prog, memory=np.zeros(4, np.int64)))
    with pytest.raises(ConfigError, match="reduce dtype"):
        sc.host_program(0).reduce(0, 64, 4, "complex64")


def test_exhausted_pool_names_the_config_field_to_raise():
    from spin.simulation import Simulation
    topo = Topology()
    a, b, s = topo.add_host(), topo.add_host(), topo.add_switch()
    topo.add_link(a, s, LinkConfig(rate_gbps=400))
    topo.add_link(s, b, LinkConfig(rate_gbps=100))   # frames pile up in the switch
    sc = Scenario(topo, engine=EngineConfig(buffer_slots=64))
    sc.host_program(0).send(1, 512 * 1024, qp=1)
    with pytest.raises(ConfigError, match=r"EngineConfig\.buffer_slots"):
        Simulation(sc).run()
