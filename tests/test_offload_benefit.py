"""A max-reduce on the root's NIC beats the host baseline (docs/tutorials/offload-benefit-test.md shows this file)."""
import numpy as np

from examples.max_reduce import max_reduce_program
from spin import ExecutionContext, Scenario, Topology

HOSTS, N, QP, SLOT = 8, 16384, 1, 1 << 16          # 7 hosts send int32[N] to host 0
DATA = np.random.default_rng(0).integers(-2**31, 2**31, (HOSTS, N)).astype(np.int32)
PROGRAMS = [max_reduce_program(N, HOSTS - 1)]


def build(offload: bool) -> Scenario:
    sc = Scenario(Topology.star(HOSTS))
    root = sc.host_program(0).mark("start")
    for h in range(HOSTS):
        sc.write_host_memory(h, 0, DATA[h])
        if h:
            sc.host_program(h).send(0, 4 * N, qp=QP, remote_addr=SLOT * (1 if offload else h))
    if offload:                    # the NIC writes the max of 7 vectors to SLOT, then one event
        sc.install(ExecutionContext(0, PROGRAMS[0], match_qp=QP))
        root.wait_event().reduce(0, SLOT, N, "int32", op="max")
    else:                          # the host receives 7 vectors and reduces them itself
        root.wait_recv(qp=QP, count=HOSTS - 1)
        for h in range(1, HOSTS):
            root.reduce(0, SLOT * h, N, "int32", op="max")
    root.mark("done")
    return sc


def test_max_reduce_is_faster_offloaded(spin_runner):       # runs with 1 and 2 workers
    cmp = spin_runner.compare(build(False), build(True), read=[(0, 0, N, "int32")])
    for result in (cmp.baseline_result, cmp.offload_result):
        assert np.array_equal(result.read(0, 0, N, "int32"), DATA.max(axis=0))
    cmp.assert_faster(at_least=3.0).assert_less_host_cpu(at_least=3.0).assert_no_drops()
