"""Two-dimensional rings (spin.collectives.ring2d, host programs): integer results exactly
numpy's on HammingMesh instances with 2 x 2 and 4 x 4 boards and on other grids, with every
stream count and with pipelined chunks; the grid follows the accelerators' rows and columns.
"""
import numpy as np
import pytest

from spin.collectives import ring2d
from spin.collectives.grid import grid_for, id_order_grid, near_square
from spin.collectives.measure import allreduce_scenario, evaluate
from spin.config import HostConfig
from spin.errors import ConfigError
from spin.runs import run
from spin.describe.scenario import Scenario
from spin.topologies import build_topology
from spin.topology import Topology


def _hamming(board: int, boards: tuple[int, int]):
    return build_topology("hamming_mesh", board_rows=board, board_cols=board, rows=boards[0],
                          cols=boards[1])


def _run(topo, count, *, streams=None, host=None, shape=None, seed=1):
    n = len(topo.hosts)
    sc, _, inputs = allreduce_scenario("ring2d", n, count, "int32", seed=seed, topology=topo)
    sc = Scenario(topo, host=host or sc.host, nic=sc.nic, switch=sc.switch, engine=sc.engine)
    plan = ring2d.build(sc, count, "int32", inputs=inputs, streams=streams, shape=shape)
    result = run(sc, 1, read=plan.reads())
    return evaluate(result, plan, inputs), inputs, [result.read(*r) for r in plan.reads()]


@pytest.mark.parametrize(("board", "boards"), [(2, (2, 2)), (2, (2, 3)), (4, (1, 2))])
@pytest.mark.parametrize("streams", [1, 2, 4])
def test_exact_on_hamming_mesh(board, boards, streams):
    """Integer sums wrap and are associative: every rank holds numpy's sum bit for bit, for
    counts that leave blocks of unequal length (1009 is prime) or empty (3)."""
    topo = _hamming(board, boards)
    for count in (3, 1009):
        m, inputs, outputs = _run(topo, count, streams=streams, seed=count)
        ref = np.sum(inputs, axis=0, dtype=np.int32)
        for out in outputs:
            np.testing.assert_array_equal(out, ref)
        assert m.correct


def test_exact_with_pipelined_chunks_and_any_grid():
    """Chunked steps (HostConfig.pipeline_chunk_bytes) and an explicit grid on a star."""
    host = HostConfig(pipeline_chunk_bytes=256)
    m, _, _ = _run(_hamming(4, (1, 2)), 5000, streams=4, host=host)
    assert m.correct
    for n, shape in ((6, None), (6, (3, 2)), (7, None)):
        m, _, _ = _run(Topology.star(n), 777, streams=4, shape=shape)
        assert m.correct


def test_grid_follows_accelerator_rows_and_columns():
    """On a HammingMesh a row of the grid is an accelerator row across its boards, in
    board-column then on-board order, so ring neighbours are mesh or row-network neighbours."""
    topo = _hamming(2, (2, 3))
    grid = grid_for(topo, tuple(range(len(topo.hosts))))
    assert (grid.q, grid.p) == (4, 6)
    names = {h: None for h in range(len(topo.hosts))}
    ports = topo.ports()
    for h in names:
        names[h] = ports[topo.hosts[h]][0][1]            # the host's accelerator router
    for i, row in enumerate(grid.rows):
        routers = [names[h] for h in row]
        coords = [tuple(int(x) for x in r[1:].split(".")) for r in routers]
        assert {(R, a) for R, _, a, _ in coords} == {(i // 2, i % 2)}
        assert [(C, b) for _, C, _, b in coords] == [(C, b) for C in range(3) for b in range(2)]


def test_near_square_and_refusals():
    assert near_square(4096) == (64, 64) and near_square(12) == (3, 4) and near_square(7) == (1, 7)
    assert id_order_grid(6).rows == ((0, 1, 2), (3, 4, 5))
    with pytest.raises(ConfigError, match="must hold the 6 ranks"):
        id_order_grid(6, (4, 2))
    sc, _, _ = allreduce_scenario("ring2d", 4, 16, "int32", topology=Topology.star(4))
    with pytest.raises(ConfigError, match="streams=3; valid choices: 1, 2, 4"):
        ring2d.build(Scenario(Topology.star(4), host=sc.host), 16, "int32", streams=3)


def test_plan_memory_covers_every_grid():
    """The registry sizes host memory before the grid is known: enough for any grid."""
    for n in (4, 12, 16, 64):
        need = ring2d.plan_memory(n, 1000, "int32")
        for q in (d for d in range(1, n + 1) if n % d == 0):
            for streams in (1, 2, 4):
                assert ring2d.layout(n // q, q, 1000, 4, streams)[1] <= need


# --- NIC-offloaded (handlers/nic_ring2d.py) -------------------------------------------------

def _nic_run(topo, count, dtype="int32", *, streams=None, nic=None, seed=1):
    from spin.collectives import nic_ring2d
    n = len(topo.hosts)
    configs = {"nic": nic} if nic is not None else {}
    sc, _, inputs = allreduce_scenario("nic-ring2d", n, count, dtype, seed=seed, topology=topo,
                                       **configs)
    sc = Scenario(topo, host=sc.host, nic=sc.nic, switch=sc.switch, engine=sc.engine,
                  engine_programs=nic_ring2d.programs())
    plan = nic_ring2d.build(sc, count, dtype, inputs=inputs, streams=streams)
    result = run(sc, 1, read=plan.reads())
    return sc, plan, evaluate(result, plan, inputs), inputs, [result.read(*r) for r in plan.reads()]


@pytest.mark.parametrize(("board", "boards"), [(2, (2, 2)), (4, (1, 2))])
@pytest.mark.parametrize("streams", [1, 4])
def test_nic_exact_on_hamming_mesh(board, boards, streams):
    """The NICs' packet-by-packet reduction gives numpy's integer sum on every rank, for
    vectors shorter than the grid (most blocks empty) and of a prime length."""
    topo = _hamming(board, boards)
    for count in (5, 1009, 20011):
        *_, m, inputs, outputs = _nic_run(topo, count, streams=streams, seed=count)
        ref = np.sum(inputs, axis=0, dtype=np.int32)
        for out in outputs:
            np.testing.assert_array_equal(out, ref)
        assert m.correct


def test_nic_floats_same_bits_everywhere_and_other_grids():
    """Every packet is summed once, at its owner, so every rank holds the same float bits;
    on a star the grid is the ranks in id order (6 = 2 x 3, 7 a single ring)."""
    *_, m, _, outputs = _nic_run(_hamming(2, (2, 2)), 3001, "float32", streams=4)
    assert m.correct and all(o.tobytes() == outputs[0].tobytes() for o in outputs)
    for n in (6, 7):
        *_, m, _, _ = _nic_run(Topology.star(n), 999, streams=4)
        assert m.correct


def test_nic_four_streams_near_the_four_port_bound():
    """On 16 accelerators (2 x 2 boards of 2 x 2) with the accelerator NIC of the topology
    comparison, 8 MiB per rank takes at most 1.4x the injection bound 2(n-1)/n S / (4 x 400
    Gb/s x framing) (1.27x measured: pipeline fill and the phases' overlap on a port), and
    four streams beat one by more than 2x (2.6x measured: one stream leaves most port
    directions idle)."""
    from spin.collectives.nic_ring2d import ACCELERATOR_NIC, run_configs
    from spin.collectives.theory import injection_bound_ps, injection_gbps
    from spin.config import NicConfig
    topo = _hamming(2, (2, 2))
    nbytes = 8 << 20
    nic = NicConfig.make(**{**run_configs(16, nbytes)["nic"].model_dump(), **ACCELERATOR_NIC})
    sc, plan, four, *_ = _nic_run(topo, nbytes // 4, streams=4, nic=nic)
    assert injection_gbps(topo, 0) == 1600.0
    bound = injection_bound_ps(topo, plan.hosts, nbytes, mtu_bytes=sc.engine.mtu_bytes,
                               pcie_gbytes_per_s=sc.nic.pcie_rate_gbytes_per_s)
    assert four.correct and bound < four.time_ps < 1.4 * bound
    *_, one, _, _ = _nic_run(topo, nbytes // 4, streams=1, nic=nic)
    assert one.time_ps > 2 * four.time_ps
