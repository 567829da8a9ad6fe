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
from spin.runtime.scenario import Scenario
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
