"""The automatic partition: a METIS cut weighted by expected traffic and link latency."""
from __future__ import annotations

import numpy as np
import pytest

from spin.config import LinkConfig
from spin.assembly.partition import auto_partition, link_traffic
from spin.simulation import Scenario
from spin.topology import Topology


def _racks(cut_latency_ns: float, cross_every: int = 16) -> Scenario:
    topo = Topology()
    racks = [topo.add_switch("rack0"), topo.add_switch("rack1")]
    for sw in racks:
        for _ in range(6):
            topo.add_link(topo.add_host(), sw)
    topo.add_link(racks[0], racks[1], LinkConfig(latency_ns=cut_latency_ns))
    sc = Scenario(topo)
    for i in range(12):
        rack, k = divmod(i, 6)
        for m in range(32):
            dst = (i + 6) % 12 if m % cross_every == 0 else rack * 6 + (k + 1) % 6
            sc.host_program(i).send(dst, 8192, qp=1)
    return sc


def _cut(sc: Scenario, owner) -> list[int]:
    idx = {n: i for i, n in enumerate(sc.topology.device_names())}
    return [i for i, l in enumerate(sc.topology.links) if owner[idx[l.a]] != owner[idx[l.b]]]


def test_two_racks_are_cut_at_the_inter_rack_link():
    sc = _racks(1000.0)
    owner = auto_partition(sc, 2)
    assert _cut(sc, owner) == [12]  # the rack0-rack1 link only
    assert owner[0] == 0 and sorted(np.bincount(owner)) == [7, 7]
    assert auto_partition(_racks(1000.0), 2) == owner  # deterministic


def test_traffic_estimate_routes_sends_over_shortest_paths():
    sc = _racks(1000.0, cross_every=4)
    t = link_traffic(sc)
    # each host sends 8 x 8 KiB across racks and 24 x 8 KiB to its neighbour
    assert t[12] == pytest.approx(12 * 8 * 8192)
    host_links = t[:12]
    assert np.allclose(host_links, 32 * 8192 + 24 * 8192 + 8 * 8192)  # sent + in-rack in + cross in


def test_traffic_routed_per_switch_equals_routing_each_host():
    """Demand towards the hosts of one switch is routed once, towards that switch: the same
    link loads as routing to every host on its own, on a fat tree with a random permutation
    and hosts sending to neighbours under their own switch."""
    from spin.assembly import partition as P
    from spin.topologies import build_topology
    sc = Scenario(build_topology("fat_tree", k=4))
    rng = np.random.default_rng(7)
    for src, dst in enumerate(rng.permutation(16)):
        sc.host_program(src).send(int(dst), 8192 * (1 + src), qp=1)
        sc.host_program(src).send(src ^ 1, 4096, qp=2)
    topo = sc.topology
    n = len(topo.device_names())
    src_e, dst_e, link_e = P._edges(topo)
    forwards = np.zeros(n, bool)
    forwards[len(topo.hosts):] = True
    want = np.zeros(len(topo.links))
    for target, demand in sorted(P._demand(sc, n).items()):
        P._route(target, demand, src_e, dst_e, link_e, forwards, n, want)
    assert np.allclose(link_traffic(sc), want) and want.sum() > 0


def test_the_cut_avoids_short_links_when_traffic_is_equal():
    """Two switches in a line between two groups of hosts: cutting either switch-switch link
    moves the same traffic; the long one must be chosen (it sets the lookahead)."""
    topo = Topology()
    a, mid, b = topo.add_switch("a"), topo.add_switch("mid"), topo.add_switch("b")
    for sw in (a, b):
        for _ in range(4):
            topo.add_link(topo.add_host(), sw)
    topo.add_link(a, mid, LinkConfig(latency_ns=100.0))
    topo.add_link(mid, b, LinkConfig(latency_ns=5000.0))
    sc = Scenario(topo)
    for i in range(4):
        sc.host_program(i).send(4 + i, 4096, qp=1)
        sc.host_program(4 + i).send(i, 4096, qp=1)
    owner = auto_partition(sc, 2)
    assert _cut(sc, owner) == [9]  # mid-b (5 us), not a-mid (100 ns)


def test_fat_tree_gets_a_minimum_bisection():
    from spin.topologies import build_topology

    topo = build_topology("fat_tree", k=4)
    sc = Scenario(topo)
    n = len(topo.hosts)
    for i in range(n):
        sc.host_program(i).send((i + 5) % n, 65536, qp=1)
    owner = auto_partition(sc, 2)
    assert len(_cut(sc, owner)) == 8  # a minimum bisection of the k=4 fat tree (16 hosts, 8 links)
    # only switch-switch links are cut: their bound includes the receiving switch's pipeline,
    # so the lookahead is the longest any cut could have
    from spin.assembly.partition import link_lookahead_ps
    from spin.runtime.fabric_workers import cut_lookahead_ps
    assert cut_lookahead_ps(sc, owner) == int(link_lookahead_ps(sc).max())
    assert abs(int(np.bincount(owner)[0]) - int(np.bincount(owner)[1])) <= 2
    assert auto_partition(sc, 3) == auto_partition(sc, 3)
    assert set(auto_partition(sc, 4)) == {0, 1, 2, 3}


def test_an_explicit_assignment_is_completed_by_the_automatic_cut():
    from spin.errors import ConfigError
    from spin.runtime.fabric_workers import explicit_partition

    sc = _racks(1000.0)
    auto = auto_partition(sc, 2)
    names = sc.topology.device_names()
    owner = explicit_partition(sc, 2, {"h0": 1})
    assert owner[0] == 1 and owner[1:] == auto[1:]
    with pytest.raises(ConfigError, match="unknown devices"):
        explicit_partition(sc, 2, {"nope": 0})
    with pytest.raises(ConfigError, match=r"workers.assign.rack0 = 2; valid workers are 0..1"):
        explicit_partition(sc, 2, {"rack0": 2})
    assert len(names) == len(owner)


def test_cut_figures_count_the_frames_each_worker_handles_and_sends_across():
    """Two racks cut at their link: each worker handles its rack's frames, and sends or
    receives across the cut exactly the inter-rack traffic; the predicted time grows with the
    cost of a crossing frame and of a round, and one worker has neither."""
    from spin.assembly.cut_cost import CutCosts, cut_figures
    sc = _racks(1000.0, cross_every=4)
    mtu = sc.engine.mtu_bytes
    one, two = cut_figures(sc, 1), cut_figures(sc, 2)
    cross = link_traffic(sc)[12] / mtu
    assert two.frames_crossing == pytest.approx((cross, cross))
    assert sum(two.frames_handled) == pytest.approx(sum(one.frames_handled))
    assert two.lookahead_ps == 1_000_000 + 450_000        # the link, then the far switch
    cheap, dear = CutCosts(1e-6, 1e-6, 1e-4), CutCosts(1e-6, 5e-6, 1e-3)
    assert two.time_s(cheap, 10**9) < two.time_s(dear, 10**9)
    assert one.time_s(dear, 10**9) == pytest.approx(1e-6 * sum(one.frames_handled))
