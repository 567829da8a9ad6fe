"""Scenarios shared by the multi-worker tests (importable, so worker processes can unpickle them)."""
import numpy as np

from handlers.ping_pong import ping_pong_program
from handlers.reduce import reduce_program
from spin.config import EngineConfig
from spin.handler import ExecutionContext
from spin.simulation import Scenario
from spin.topology import Topology

N_ELEMS = 2048
ROOT_ADDR = 0x10000


def engine_programs():
    return [ping_pong_program(2), reduce_program(N_ELEMS, 1)]


def eight_host_mix(capture: bool = True) -> Scenario:
    """8 hosts on one switch: hosts 1-7 reduce int32 vectors onto node 0's NIC (offloaded), while
    host 2 ping-pongs with host 5's NIC and host 3 sends plain RDMA writes to host 6."""
    n = 8
    sc = Scenario(Topology.star(n), engine_programs=engine_programs(),
                  engine=EngineConfig(host_memory_digests=True))   # compare delivered bytes
    rng = np.random.default_rng(7)
    for i in range(n):
        sc.write_host_memory(i, 0, rng.integers(-2**31, 2**31 - 1, N_ELEMS, dtype=np.int64)
                             .astype(np.int32))
    sc.install(ExecutionContext(0, reduce_program(N_ELEMS, n - 1), match_qp=3))
    sc.install(ExecutionContext(5, ping_pong_program(reply_qp=2), match_qp=1))
    for i in range(1, n):
        sc.host_program(i).send(0, 4 * N_ELEMS, qp=3, remote_addr=ROOT_ADDR)
    sc.host_program(0).wait_event(1).mark("reduced")
    h2 = sc.host_program(2)
    for _ in range(3):
        h2.send(5, 256, qp=1, remote_addr=0x20000).wait_recv(qp=2)
    h2.mark("pingpong")
    sc.host_program(3).send(6, 10000, qp=4, remote_addr=0x30000).send(6, 3000, qp=4, remote_addr=0x40000)
    sc.host_program(6).wait_recv(qp=4, count=2).mark("writes")
    if capture:
        sc.capture()
    return sc


def expected_reduction() -> np.ndarray:
    rng = np.random.default_rng(7)
    vecs = [rng.integers(-2**31, 2**31 - 1, N_ELEMS, dtype=np.int64).astype(np.int32) for _ in range(8)]
    return np.sum(np.stack(vecs[1:]), axis=0, dtype=np.int32)
