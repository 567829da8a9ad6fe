"""Equal-cost multipath routing: per-flow ECMP spreads flows over every spine, deterministically,
and keeps each flow on one path (no reordering)."""
from __future__ import annotations

import numpy as np

from spin.simulation import Simulation
from spin.topologies import build_topology

from .conftest import pattern, scenario

MTU = 1024


def _leaf_spine_permutation(spines: int = 4, hosts_per_leaf: int = 8, qps: int = 4):
    topo = build_topology("leaf_spine", leaves=2, spines=spines, hosts_per_leaf=hosts_per_leaf)
    sc = scenario(topo)
    size = 8 * MTU
    for h in range(hosts_per_leaf):
        dst = hosts_per_leaf + h
        sc.write_host_memory(h, 0, pattern(h, qps * size))
        for q in range(qps):
            sc.host_program(h).send(dst, size, qp=q, local_addr=q * size, remote_addr=q * size)
        sc.host_program(dst).mark("start")
    sim = Simulation(sc)
    return sim, sim.run(), size


def test_ecmp_spreads_flows_over_every_spine() -> None:
    sim, result, size = _leaf_spine_permutation()
    up = [l for l in result.links if l.from_device == "leaf0" and l.to_device.startswith("spine")]
    assert len(up) == 4
    volumes = np.array([l.tx_bytes for l in up])
    assert (volumes > 0).all(), volumes                 # every spine carries traffic
    assert volumes.max() / volumes.mean() < 2.0, volumes
    # every byte crossed exactly one spine, and every message arrived whole
    frames_up = sum(l.tx_frames for l in up)
    assert frames_up == 8 * 4 * (size // MTU)
    assert len(result.messages) == 32 and not result.drops
    for h in range(8):
        assert np.array_equal(sim.host_memory(8 + h)[:4 * size], pattern(h, 4 * size))


def test_ecmp_is_deterministic_and_per_flow() -> None:
    a = _leaf_spine_permutation()[1]
    b = _leaf_spine_permutation()[1]
    assert a.to_dict(include_wall=False) == b.to_dict(include_wall=False)
    # one flow (one QP) takes one spine: with one QP per host and 8 hosts, a spine's byte count
    # is a whole number of flows
    _, one, size = _leaf_spine_permutation(qps=1)
    for l in one.links:
        if l.from_device == "leaf0" and l.to_device.startswith("spine"):
            assert l.tx_frames % (size // MTU) == 0


def test_every_equal_cost_next_hop_is_installed() -> None:
    """The engine's route groups hold every next hop on a shortest path (fat tree k=4)."""
    topo = build_topology("fat_tree", k=4)
    sim = Simulation(scenario(topo))
    st = sim.st
    from spin.engine import state as S
    ports = topo.ports()
    n_hosts = len(topo.hosts)
    expected = topo.equal_cost_ports()
    for s, name in enumerate(topo.switches):
        for h in range(n_hosts):
            g = st.rblock[st.route[0, s, h >> S.ROUTE_BLOCK_SHIFT], h % S.ROUTE_BLOCK]
            first, count = st.rgroup[g]
            got = tuple(sorted(int(p) for p in st.rport[first:first + count]))
            assert got == tuple(sorted(expected[name][h])), (name, h)
    # an edge switch reaches a host in another pod over k/2 = 2 aggregation switches
    edge = next(n for n in topo.switches if topo.switch_role(n) == "edge")
    far = n_hosts - 1
    assert len(expected[edge][far]) == 2
    assert all(ports[edge][p][1] in topo.switches for p in expected[edge][far])
    assert S.D_SW_SEED  # per-switch seeds differ, against ECMP polarisation
    seeds = {int(st.dev[n_hosts + s, S.D_SW_SEED]) for s in range(len(topo.switches))}
    assert len(seeds) == len(topo.switches)
