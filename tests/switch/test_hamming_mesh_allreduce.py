"""The in-switch allreduce on a HammingMesh as row reductions then column reductions: exact int32
on every rank for both schemes and for shared and fat-tree networks, aggregation only in the
row and column network switches (the accelerators' routers relay), float32 within the bound,
identical on 1 and 2 workers; the generic tree elsewhere and when asked for."""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switchml import G_COMPLETED, G_CONTRIBUTIONS, JOB_INDEX
from spin.collectives import switch as SWC
from spin.collectives.hamming_mesh_allreduce import (accelerator_lines, network_switches,
                                                     resolve_scheme)
from spin.collectives.measure import allreduce_scenario, evaluate
from spin.collectives.switch_tree import aggregation_tree
from spin.errors import ConfigError
from spin.simulation import Scenario, Simulation
from spin.testing import run_both
from spin.topologies import build_topology

from .conftest import SWITCH_LIBRARY

K = 256                                   # elements per packet at the default 1 KiB MTU
COUNT = 2 * K + 5                         # halves of 257 and 256: the last packets are short
MESHES = {
    "boards": dict(board_rows=2, board_cols=2, rows=2, cols=2),
    "shared": dict(board_rows=2, board_cols=2, rows=2, cols=2, share_networks=True),
    "fat-tree rows": dict(board_rows=1, board_cols=2, rows=2, cols=4, switch_radix=4),
    # a column's middle accelerators reach the column network through the shared row network
    "tall shared": dict(board_rows=5, board_cols=1, rows=2, cols=2, share_networks=True),
}


def _scenario(mesh: str, dtype: str, scheme: str = "auto"):
    topo = build_topology("hamming_mesh", **MESHES[mesh])
    sc, plan, inputs = allreduce_scenario("switch", len(topo.hosts), COUNT, dtype,
                                          topology=topo, engine_programs=SWITCH_LIBRARY)
    if scheme != "auto":                   # the same inputs, built with another scheme
        sc = Scenario(topo, host=sc.host, engine_programs=SWITCH_LIBRARY)
        plan = SWC.build(sc, COUNT, dtype, inputs=inputs, scheme=scheme)
    return sc, plan, inputs


def _switchml_contexts(sc) -> dict:
    return {c.node: c for c in sc.contexts if c.program.name == "switchml"}


def _results(sim, plan) -> np.ndarray:
    return np.array([sim.host_memory(h)[:4 * plan.count].view(plan.storage_dtype)
                     for h in plan.hosts])


@pytest.mark.parametrize("mesh,scheme", [("boards", "row-column-split"),
                                         ("boards", "row-column"),
                                         ("shared", "row-column-split"),
                                         ("fat-tree rows", "row-column-split"),
                                         ("tall shared", "row-column-split")])
def test_int32_is_exact_and_aggregated_in_the_networks(mesh: str, scheme: str) -> None:
    sc, plan, inputs = _scenario(mesh, "int32", scheme)
    topo = sc.topology
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    assert not result.drops
    want = inputs.sum(axis=0, dtype=np.int32)
    out = _results(sim, plan)
    for rank in range(plan.n):
        assert np.array_equal(out[rank], want), (mesh, scheme, rank)
    # only network switches aggregate; every accelerator is the child of one switch per job
    contexts = _switchml_contexts(sc)
    assert contexts and all(topo.roles[s] != "accelerator" for s in contexts)
    roles = {topo.roles[s].split("-")[0] for s in contexts}
    assert roles == {"row", "column"}
    lines = accelerator_lines(topo, plan.hosts)
    halves = [COUNT] if scheme == "row-column" else [(COUNT + 1) // 2, COUNT // 2]
    chunks = sum(-(-n // K) for n in halves)       # packets per rank and line, both halves
    trees = [aggregation_tree(topo, line, None, network_switches(topo, kind))[1]
             for kind in ("row", "column") for line in lines[kind]]
    kinds = [kind for kind in ("row", "column") for _ in lines[kind]]
    assert all(topo.roles[s].startswith(kind + "-") for kind, tree in zip(kinds, trees)
               for s in tree)                      # a row's job only in its row network
    mems = {s: sim.handler_memory(c) for s, c in contexts.items()}
    # every line's job completes each chunk once at its root, and every tree node takes one
    # contribution per child and chunk: the hosts' at the switch they relay to, the partials
    assert sum(int(m[G_COMPLETED]) for m in mems.values()) == chunks * len(trees)
    assert sum(int(m[G_CONTRIBUTIONS]) for m in mems.values()) == chunks * sum(
        len(node.children) for tree in trees for node in tree.values())
    assert all(node.children and all(kind != "host" for kind, _, _ in node.children)
               for tree in trees for node in tree.values())      # accelerators are relayed
    jobs = {j for m in mems.values() for j in range(256) if m[JOB_INDEX + j] >= 0}
    assert len(jobs) == len(halves) * len(trees)

def test_float32_within_the_bound_and_identical_on_one_and_two_workers() -> None:
    sc, plan, inputs = _scenario("boards", "float32")
    result = run_both(sc, 2, read=plan.reads())
    m = evaluate(result, plan, inputs)
    assert m.correct
    assert m.max_abs_error > 0                # a different order of additions does round


def test_the_scheme_is_chosen_by_topology_and_refused_by_name() -> None:
    mesh = build_topology("hamming_mesh", **MESHES["boards"])
    n = len(mesh.hosts)
    assert resolve_scheme(mesh, "auto", range(n), False) == "row-column-split"
    assert resolve_scheme(mesh, "auto", range(n - 1), False) == "tree"     # not every host
    assert resolve_scheme(mesh, "auto", range(n), True) == "tree"          # quantized
    star = build_topology("star", hosts=4)
    assert resolve_scheme(star, "auto", range(4), False) == "tree"
    with pytest.raises(ConfigError, match="scheme='row-column': the topology is 'star'"):
        resolve_scheme(star, "row-column", range(4), False)
    one_row = build_topology("hamming_mesh", rows=1, cols=2)
    with pytest.raises(ConfigError, match="2 x 2 boards"):
        resolve_scheme(one_row, "row-column-split", range(8), False)
    long_rows = build_topology("hamming_mesh", board_rows=1, board_cols=4, rows=2, cols=8)
    assert resolve_scheme(long_rows, "auto", range(64), False) == "tree"   # 32 in a row
    with pytest.raises(ConfigError, match="row0 would take 32 children of one job"):
        resolve_scheme(long_rows, "row-column", range(64), False)
    shared = build_topology("hamming_mesh", board_rows=9, board_cols=1, rows=2, cols=2,
                            share_networks=True)
    with pytest.raises(ConfigError, match="row0 would hold 18 jobs"):
        resolve_scheme(shared, "row-column", range(36), False)
    with pytest.raises(ConfigError, match="valid choices: auto, tree, row-column"):
        resolve_scheme(mesh, "rows", range(n), False)
    with pytest.raises(ConfigError, match="job=250"):
        SWC.build(Scenario(mesh, engine_programs=SWITCH_LIBRARY), COUNT, "int32", job=250)


def test_tree_scheme_keeps_the_generic_tree() -> None:
    """``scheme="tree"`` on a HammingMesh is the one tree through the accelerators' routers."""
    sc, plan, inputs = _scenario("boards", "int32", "tree")
    contexts = _switchml_contexts(sc)
    assert any(sc.topology.roles[s] == "accelerator" for s in contexts)
    sim = Simulation(sc)
    sim.run().require_finished()
    want = inputs.sum(axis=0, dtype=np.int32)
    assert all(np.array_equal(r, want) for r in _results(sim, plan))
