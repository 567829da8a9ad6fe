"""The ideal of a flow (spin.workloads.metrics.PathModel, spin.workloads.paths.HostPaths) against
references computed the slow, obvious way: a Dijkstra on (hops, latency) per host pair, frame by
frame wire bytes, and the per-step busiest host of an iteration, on every host pair of small
fabrics."""
import heapq
import itertools
import math
import random

import pytest

from spin import Scenario
from spin.config import LinkConfig
from spin.errors import ConfigError
from spin.topologies import build_topology
from spin.topology import Link, Topology
from spin.units import ETHERNET_WIRE_OVERHEAD_BYTES
from spin.wire.headers import roce_frame_len
from spin.workloads import build_workload
from spin.workloads.metrics import PathModel, wire_bytes
from spin.workloads import paths as paths_module
from spin.workloads.paths import HostPaths


def reference_path(topo: Topology, switch_ps: dict[str, int], src: int, dst: int):
    """(latency, switches crossed) by Dijkstra on (hops, latency) from host src; hosts do not
    forward; entering a switch costs its pipeline latency."""
    adj = {d: [] for d in topo.device_names()}
    for link in topo.links:
        lat = int(round(link.config.latency_ns * 1000))
        adj[link.a].append((link.b, lat))
        adj[link.b].append((link.a, lat))
    start, goal = topo.hosts[src], topo.hosts[dst]
    best = {start: (0, 0)}
    heap = [(0, 0, start)]
    while heap:
        hops, lat, dev = heapq.heappop(heap)
        if dev == goal:
            return lat, hops - 1
        if (hops, lat) > best[dev] or (dev != start and dev not in switch_ps):
            continue
        for peer, l_ps in adj[dev]:
            cost = (hops + 1, lat + l_ps + switch_ps.get(peer, 0))
            if cost < best.get(peer, (1 << 62, 0)):
                best[peer] = cost
                heapq.heappush(heap, (*cost, peer))
    return None


def _all_pairs(topo):
    n = len(topo.hosts)
    return [(s, d) for s in range(n) for d in range(n)]


def _check_all_pairs(topo, switch_ps, paths):
    pairs = _all_pairs(topo)
    lat, switches = paths([s for s, _ in pairs], [d for _, d in pairs])
    got = list(zip(lat.tolist(), switches.tolist()))
    want = [reference_path(topo, switch_ps, s, d) for s, d in pairs]
    assert got == want


def _mixed_latency_custom():
    """Fewest hops against least latency: s0-s1 direct but slow, s0-s2-s1 fast; switch
    pipelines differ; two equal-hop routes s0 -> s3 with different latencies."""
    return build_topology(
        "custom", hosts=["h0", "h1", "h2", "h3"],
        switches=[{"name": "s0", "latency_ns": 50}, {"name": "s1", "latency_ns": 700},
                  {"name": "s2", "latency_ns": 0}, {"name": "s3"}, {"name": "s4",
                                                                     "latency_ns": 30}],
        edges=[("h0", "s0", {"latency_ns": 10}), ("h1", "s1", {"latency_ns": 20}),
               ("h2", "s2"), ("h3", "s3", {"latency_ns": 5}),
               ("s0", "s1", {"latency_ns": 5000}), ("s0", "s2", {"latency_ns": 1}),
               ("s2", "s1", {"latency_ns": 1}), ("s1", "s3", {"latency_ns": 300}),
               ("s2", "s4", {"latency_ns": 40}), ("s4", "s3", {"latency_ns": 40})])


TOPOLOGIES = {
    "fat_tree": lambda: build_topology("fat_tree", k=4),
    "leaf_spine": lambda: build_topology("leaf_spine", leaves=3, hosts_per_leaf=3, spines=2),
    "hamming_mesh": lambda: build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2,
                                           cols=3, mesh_latency_ns=80.0, router_latency_ns=20.0),
    "hamming_mesh_fat_tree_networks": lambda: build_topology(
        "hamming_mesh", board_rows=2, board_cols=1, rows=1, cols=3, switch_radix=4),
    "custom": _mixed_latency_custom,
    "star": lambda: build_topology("star", hosts=5),
    "pair": lambda: build_topology("pair"),
}


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_path_model_matches_dijkstra_on_every_host_pair(name):
    topo = TOPOLOGIES[name]()
    sc = Scenario(topo)
    switch_ps = {s: int(round(topo.switch_latency_ns(s, sc.switch.latency_ns) * 1000))
                 for s in topo.switches}
    model = PathModel(sc)
    _check_all_pairs(topo, switch_ps, model.paths)
    assert model.path(0, len(topo.hosts) - 1) == reference_path(topo, switch_ps, 0,
                                                                 len(topo.hosts) - 1)


def _hand_built(links, hosts, switches):
    """A Topology given as lists, without the builder's one-port-per-host rule."""
    return Topology(hosts=hosts, switches=switches,
                    links=[Link(a, b, LinkConfig(latency_ns=ns)) for a, b, ns in links])


def test_hosts_with_several_ports_and_direct_host_links():
    """Each accelerator has four ports to different switches and a direct link to a neighbour:
    the best port pair wins, and a direct link (one hop) beats every switch path."""
    hosts = [f"x{i}" for i in range(4)]
    switches = ["n", "s", "w", "e", "core"]
    links = [("x0", "x1", 900.0), ("x2", "x3", 2.0), ("n", "core", 10.0),
             ("w", "core", 1.0), ("core", "e", 3.0)]
    for i, h in enumerate(hosts):
        links += [(h, "n", 100.0 + i), (h, "s", 50.0 * i + 1), (h, "w", 7.0), (h, "e", 3.0 * i + 0.5)]
    topo = _hand_built(links, hosts, switches)
    switch_ps = {"n": 10, "s": 2000, "w": 0, "e": 300, "core": 5}
    _check_all_pairs(topo, switch_ps, HostPaths(topo, switch_ps).paths)


@pytest.mark.parametrize("batch_cells", [1, 50, 1 << 22])
def test_every_pair_of_a_random_graph(monkeypatch, batch_cells):
    """Random switch graphs with random latencies, hosts on one to three switches; source
    switches searched one, a few or all at a time."""
    monkeypatch.setattr(paths_module, "_BATCH_CELLS", batch_cells)
    for seed in range(6):
        rng = random.Random(seed)
        switches = [f"s{i}" for i in range(9)]
        hosts = [f"h{i}" for i in range(7)]
        links = [(switches[i], switches[i + 1], float(rng.randint(1, 400)))
                 for i in range(len(switches) - 1)]
        links += [(a, b, float(rng.randint(1, 400)))
                  for a, b in itertools.combinations(switches, 2) if rng.random() < 0.2]
        for h in hosts:
            links += [(h, s, float(rng.randint(1, 50))) for s in rng.sample(switches,
                                                                               rng.randint(1, 3))]
        topo = _hand_built(links, hosts, switches)
        switch_ps = {s: rng.randint(0, 300) for s in switches}
        _check_all_pairs(topo, switch_ps, HostPaths(topo, switch_ps).paths)


def test_an_unreachable_host_is_named():
    topo = _hand_built([("h0", "s0", 1.0), ("h1", "s0", 1.0), ("h2", "s1", 1.0)],
                       ["h0", "h1", "h2"], ["s0", "s1"])
    paths = HostPaths(topo, {"s0": 0, "s1": 0})
    assert paths.paths([0], [1])[1].tolist() == [1]
    with pytest.raises(ConfigError, match="host 1 cannot reach host 2"):
        paths.paths([0, 1], [1, 2])


def reference_wire_bytes(nbytes, mtu):
    frames = max(1, -(-nbytes // mtu))
    return sum(roce_frame_len(max(min(mtu, nbytes - k * mtu), 0), k == 0)
               + ETHERNET_WIRE_OVERHEAD_BYTES for k in range(frames))


@pytest.mark.parametrize("mtu", [256, 1024, 4096])
def test_wire_bytes_frame_by_frame(mtu):
    for n in [0, 1, 2, 3, 5, mtu - 1, mtu, mtu + 1, 2 * mtu - 3, 2 * mtu, 2 * mtu + 2,
              7 * mtu + 5, 2_000_000, 262_144]:
        assert wire_bytes(n, mtu) == reference_wire_bytes(n, mtu), n


@pytest.mark.parametrize("kind,params", [("ring_allreduce", {"message_bytes": 4 * 3000}),
                                         ("all_to_all", {"message_bytes": 5000}),
                                         ("permutation", {"message_bytes": 70_000, "seed": 4})])
def test_ideal_figures_match_their_definition(kind, params):
    """Per flow: serialisation at the pair's rate plus the base latency; per iteration: the
    sum over steps of the busiest host's bytes at its rate plus the step's longest base."""
    sc = Scenario(build_topology("leaf_spine", leaves=2, hosts_per_leaf=2, spines=2,
                                 host_rate_gbps=100, fabric_rate_gbps=200))
    wl = build_workload(sc, kind, **params)
    model = PathModel(sc)
    flows = [f for f in wl.flows if f.iteration == 0]
    frame = reference_wire_bytes(sc.engine.mtu_bytes, sc.engine.mtu_bytes)
    pcie = sc.nic.pcie_rate_gbytes_per_s * 8

    def ser(nbytes, rate):
        return math.ceil(nbytes * 8000 / rate)

    def base(s, d):
        lat, switches = model.path(s, d)
        return lat + switches * ser(frame, model.rate_gbps(s, d)) + \
            2 * int(round(sc.nic.pcie_latency_ns * 1000))

    for f in flows:
        want = ser(reference_wire_bytes(f.nbytes, sc.engine.mtu_bytes),
                   model.rate_gbps(f.src, f.dst)) + base(f.src, f.dst)
        assert model.ideal_fct_ps(f) == want
    total = 0
    for step in sorted({f.step for f in flows}):
        load = {}
        for f in (f for f in flows if f.step == step):
            for key in (("tx", f.src), ("rx", f.dst)):
                load[key] = load.get(key, 0) + ser(
                    reference_wire_bytes(f.nbytes, sc.engine.mtu_bytes),
                    min(model.host_rate_gbps[key[1]], pcie))
        total += max(load.values()) + max(0, max(base(f.src, f.dst) for f in flows
                                                  if f.step == step))
    assert model.ideal_iteration_ps(flows) == total
    assert model.ideal_iteration_ps([]) == 0
