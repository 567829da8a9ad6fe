"""Host ops whose host-memory ranges leave ``HostConfig.memory_bytes`` are refused before a run
(``spin.describe.limits.check_host_op_addresses``), naming the first offending host in node
order and the op, whether the programs are checked in one batch or in many."""
import pytest

from spin import Scenario
from spin.config import HostConfig
from spin.describe import limits
from spin.errors import ConfigError
from spin.handler import ExecutionContext
from spin.topologies import build_topology

from .kit_programs import KIT_PROGRAMS

MEMORY = 4096


def _scenario():
    sc = Scenario(build_topology("star", hosts=6), host=HostConfig(memory_bytes=MEMORY))
    for h in range(6):
        sc.host_program(h).send((h + 1) % 6, 1024, local_addr=0, remote_addr=2048)
        sc.host_program(h).wait_recv()
    return sc


@pytest.fixture(params=[1, 3, 1 << 20], ids=["one-op-batches", "small-batches", "one-batch"])
def batches(request, monkeypatch):
    monkeypatch.setattr(limits, "_CHECK_BATCH_OPS", request.param)


def test_ranges_inside_memory_pass(batches):
    limits.check_host_op_addresses(_scenario())


def test_the_first_host_in_node_order_is_named(batches):
    sc = _scenario()
    sc.host_program(4).send(0, 100, local_addr=MEMORY - 10)          # op 2 of host 4
    sc.host_program(2).compute(5.0).send(1, 64, remote_addr=MEMORY)  # op 3 of host 2
    with pytest.raises(ConfigError) as err:
        limits.check_host_op_addresses(sc)
    assert str(err.value) == ("host 'h2' (node 2) op 3 (send): remote_addr = 4096: [4096, "
                              "4160) is outside host memory (host.memory_bytes = 4096)")


def test_a_reduce_range_counts_its_element_width(batches):
    sc = _scenario()
    sc.host_program(5).reduce(0, MEMORY - 256, 64, "int32")          # 256 B: fits
    limits.check_host_op_addresses(sc)
    sc.host_program(5).reduce(0, MEMORY - 256, 64, "float64")        # 512 B: does not
    with pytest.raises(ConfigError, match=r"host 'h5' \(node 5\) op 3 \(reduce\): src_addr = "
                                          r"3840: \[3840, 4352\) is outside"):
        limits.check_host_op_addresses(sc)


def test_a_remote_range_is_left_to_a_handler_on_the_destination(batches):
    sc = _scenario()
    sc.host_program(1).send(3, 512, remote_addr=MEMORY + 100)
    sc.install(ExecutionContext(3, KIT_PROGRAMS[0], match_qp=0))
    limits.check_host_op_addresses(sc)
    sc.host_program(1).send(3, 512, local_addr=MEMORY)
    with pytest.raises(ConfigError, match=r"host 'h1' \(node 1\) op 3 \(send\): local_addr"):
        limits.check_host_op_addresses(sc)
