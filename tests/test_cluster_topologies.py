"""AI-cluster topologies at their real size: the rail-optimised fat tree (DGX SuperPOD), the
leaf-spine-superspine fabric, HammingMesh at thousands of accelerators, and the block routing
tables that make 65,536 hosts fit (``switch_emulator.route_tables``), checked against an
independent oracle, plus the memory refusal that comes before anything large is built."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from spin.errors import ConfigError, TopologyError
from spin.topologies import build_topology, topology_inventory
from spin.topology import Topology
from switch_emulator.route_tables import RouteTables

RAIL_SMALL = [
    {},
    {"scale_up": False},
    {"servers": 8, "servers_per_su": 2, "gpus_per_server": 4, "sus_per_pod": 2},
    {"servers": 8, "servers_per_su": 4, "gpus_per_server": 2, "spines_per_pod": 2},
    {"servers": 2, "servers_per_su": 2, "gpus_per_server": 4},
    {"servers": 12, "servers_per_su": 2, "gpus_per_server": 2, "sus_per_pod": 3,
     "leaf_uplinks": 1, "spine_uplinks": 2, "cores_per_plane": 1},
]
LSS_SMALL = [
    {},
    {"pods": 1, "leaves_per_pod": 4},
    {"pods": 4, "leaves_per_pod": 2, "hosts_per_leaf": 4, "leaf_uplinks": 2, "spine_uplinks": 2,
     "superspines_per_plane": 1},
    {"pods": 2, "leaves_per_pod": 3, "hosts_per_leaf": 2, "spines_per_pod": 1},
    {"pods": 2, "leaves_per_pod": 2, "hosts_per_leaf": 40},          # 160 hosts: three blocks
]
CASES = ([("rail_optimized", p) for p in RAIL_SMALL]
         + [("leaf_spine_superspine", p) for p in LSS_SMALL]
         + [("fat_tree", {"k": 6}), ("hamming_mesh", {"board_rows": 2, "board_cols": 3}),
            ("supernode", {"gpus": 8, "planes": 2, "supernodes": 2,
                           "scale_out_gpus_per_leaf": 4}),
            ("star", {"hosts": 130})])


def ids(cases):
    return [f"{k}-{'-'.join(f'{a}{b}' for a, b in p.items())}" for k, p in cases]


def oracle(topo: Topology) -> dict[tuple[str, int], tuple[int, ...]]:
    """(switch, node) -> local ports one hop closer to the host, by networkx distances on the
    graph where hosts do not forward and a no-transit switch forwards only for its own hosts:
    such a switch that is not the destination's is left out, and its own distance is one more
    than its nearest neighbour's."""
    ports = topo.ports()
    out = {}
    for node, h in enumerate(topo.hosts):
        attach = ports[h][0][1]
        keep = {s for s in topo.switches if s not in topo.no_transit or s == attach} | {h}
        g = nx.MultiGraph()
        g.add_nodes_from(keep)
        g.add_edges_from((l.a, l.b) for l in topo.links if l.a in keep and l.b in keep)
        dist = nx.single_source_shortest_path_length(g, h)
        for s in topo.switches:
            near = [dist[v] for _, v in ports[s] if v in dist]
            if s in dist:
                ds = dist[s]
            elif near:
                ds = 1 + min(near)
            else:
                continue
            out[(s, node)] = tuple(p for p, (_, v) in enumerate(ports[s])
                                   if v in dist and dist[v] == ds - 1)
    return out


def tables_of(topo: Topology) -> RouteTables:
    wiring = topo.port_arrays()
    tables = RouteTables(len(topo.switches), len(topo.hosts))
    tables.add_epoch(wiring.port_dev, wiring.port_local, wiring.peer,
                     np.ones(len(wiring.peer), bool), wiring.transit)
    return tables


# --- routing: every (switch, host) pair against the oracle and the Python search ------------
@pytest.mark.parametrize("kind,params", CASES, ids=ids(CASES))
def test_block_tables_hold_every_equal_cost_next_hop(kind, params):
    topo = build_topology(kind, **params)
    tables = tables_of(topo)
    want = oracle(topo)
    ecp = topo.equal_cost_ports()
    for s, name in enumerate(topo.switches):
        for node in range(len(topo.hosts)):
            got = tables.next_hops(0, s, node)
            assert got == want.get((name, node), ()), (name, node)
            assert got == ecp[name].get(node, ()), (name, node)
    # identical blocks and groups are stored once
    blocks = {tuple(b) for b in tables.blocks.tolist()}
    assert len(blocks) == tables.n_blocks
    groups = {tuple(tables.ports[a:a + n]) for a, n in tables.groups.tolist()}
    assert len(groups) == tables.n_groups


@pytest.mark.parametrize("kind,params", CASES, ids=ids(CASES))
def test_every_host_reaches_every_host(kind, params):
    """Following the tables from each host's first switch reaches every other host, on a
    shortest path, never through another host or another GPU's router."""
    topo = build_topology(kind, **params)
    tables = tables_of(topo)
    ports = topo.ports()
    index = {s: i for i, s in enumerate(topo.switches)}
    for src in range(0, len(topo.hosts), max(1, len(topo.hosts) // 12)):
        first = ports[topo.hosts[src]][0][1]
        for dst, host in enumerate(topo.hosts):
            if dst == src:
                continue
            frontier, hops = {first}, 0
            while host not in frontier:
                hops += 1
                assert hops <= len(topo.switches), f"{src} -> {dst}: a loop"
                nxt = set()
                for s in frontier:
                    assert s in index, f"{src} -> {dst}: forwarded to host {s}"
                    assert s not in topo.no_transit or s == first or \
                        ports[host][0][1] == s, f"{src} -> {dst}: through router {s}"
                    group = tables.next_hops(0, index[s], dst)
                    assert group, f"{src} -> {dst}: no route at {s}"
                    nxt |= {ports[s][p][1] for p in group}
                frontier = nxt
                assert host not in frontier or frontier == {host}, "paths of unequal length"


# --- rail-optimised structure ---------------------------------------------------------------
def test_rail_optimized_counts():
    topo = build_topology("rail_optimized", servers=8, servers_per_su=2, gpus_per_server=4,
                          sus_per_pod=2)
    inv = topology_inventory(topo)
    # 4 SUs in 2 pods; a leaf per rail per SU (16); 2 spines per pod (one per uplink of a
    # leaf); a spine has 8 leaf links, so 8 uplinks, one to each of 8 cores in each of 2
    # planes; a router per GPU and an NVLink switch per server
    assert inv.hosts == 32
    assert dict(inv.switches_by_role) == {"accelerator": 32, "core": 16, "leaf": 16,
                                          "scale-up": 8, "spine": 4}
    assert {kind: n for _, kind, n in inv.links_by_rate_kind} == {
        "internal": 32, "nvlink": 32, "rail": 32, "leaf-spine": 32, "spine-core": 32}
    assert topo.no_transit == {s for s in topo.switches if topo.switch_role(s) == "accelerator"}
    flat = topology_inventory(build_topology("rail_optimized", servers=8, servers_per_su=2,
                                             gpus_per_server=4, scale_up=False))
    assert dict(flat.switches_by_role) == {"leaf": 16, "spine": 2}
    assert {kind: n for _, kind, n in flat.links_by_rate_kind} == {"rail": 32,
                                                                   "leaf-spine": 32}


def test_rails_put_same_rank_gpus_of_a_unit_one_switch_apart():
    """GPU i of every server of an SU hangs off leaf i: same rank, one network switch between
    them; another rank crosses the spines; a GPU of the same server is one NVLink hop away."""
    g = 4
    topo = build_topology("rail_optimized", servers=8, servers_per_su=4, gpus_per_server=g)
    ports = topo.ports()
    index = {s: i for i, s in enumerate(topo.switches)}
    tables = tables_of(topo)

    def network_switches(src: int, dst: int) -> set[tuple[str, ...]]:
        """Roles of the non-accelerator switches on every shortest path src -> dst."""
        paths = set()

        def walk(s, roles):
            if s == topo.hosts[dst]:
                paths.add(roles)
                return
            role = topo.switch_role(s)
            roles = roles if role == "accelerator" else roles + (role,)
            for p in tables.next_hops(0, index[s], dst):
                walk(ports[s][p][1], roles)
        walk(ports[topo.hosts[src]][0][1], ())
        return paths

    for server, other in ((0, 1), (0, 3), (2, 1)):               # same SU (servers 0..3)
        for i in range(g):
            leaf = f"su0r{i}"
            assert {s for _, s in ports[f"s{other}g{i}"]} >= {leaf}
            assert network_switches(server * g + i, other * g + i) == {("leaf",)}
            assert network_switches(server * g + i, other * g + (i + 1) % g) == {
                ("leaf", "spine", "leaf")}
    assert network_switches(0, 4 * g) == {("leaf", "spine", "leaf")}      # next SU, same rank
    assert network_switches(0, 1) == {("scale-up",)}                      # NVLink in the server


@pytest.mark.parametrize("params", RAIL_SMALL, ids=[str(p) for p in RAIL_SMALL])
def test_rail_bisection_max_flow_equals_the_formula(params):
    inv = topology_inventory(build_topology("rail_optimized", **params))
    assert inv.bisection_formula_gbps is not None
    assert inv.bisection_gbps == pytest.approx(inv.bisection_formula_gbps)


def test_leaf_spine_superspine_counts():
    topo = build_topology("leaf_spine_superspine", pods=4, leaves_per_pod=3, hosts_per_leaf=4,
                          leaf_uplinks=2, spine_uplinks=3, superspines_per_plane=1)
    inv = topology_inventory(topo)
    assert inv.hosts == 48
    # 2 spines a pod (one per leaf uplink), 2 planes of one superspine each
    assert dict(inv.switches_by_role) == {"leaf": 12, "spine": 8, "superspine": 2}
    assert {kind: n for _, kind, n in inv.links_by_rate_kind} == {
        "host": 48, "leaf-spine": 24, "spine-superspine": 24}
    assert all(len(ports) == 12 for s, ports in topo.ports().items()
               if s.startswith("superspine"))         # 3 parallel links to each of 4 pods
    # 2:1 at the leaves: the pods pass half of what their hosts send
    assert inv.bisection_gbps == pytest.approx(2 * 3 * 2 * 400)
    assert inv.bisection_formula_gbps == pytest.approx(inv.bisection_gbps)


# --- HammingMesh at thousands of accelerators -----------------------------------------------
@pytest.mark.parametrize("params,hosts", [
    ({"board_rows": 2, "board_cols": 2, "rows": 32, "cols": 32}, 4096),
    ({"board_rows": 4, "board_cols": 4, "rows": 32, "cols": 32}, 16384),
])
def test_hamming_mesh_at_thousands_of_accelerators_routes_every_pair(params, hosts):
    topo = build_topology("hamming_mesh", **params)
    assert len(topo.hosts) == hosts
    assert sum(topo.switch_role(s) == "accelerator" for s in topo.switches) == hosts
    tables = tables_of(topo)
    used = np.unique(tables.epochs[0])
    assert used.min() >= 0 and (tables.blocks[used] >= 0).all()   # every (switch, host) pair
    # on-board neighbours go straight over the mesh link; far ones leave by a network port
    ports = topo.ports()
    a = f"a0.0.0.0"
    assert [ports[a][p][1] for p in tables.next_hops(0, topo.switches.index(a), 1)] == \
        [f"a0.0.0.1"]


# --- parameter errors -----------------------------------------------------------------------
@pytest.mark.parametrize("kind,params,needles", [
    ("rail_optimized", {"servers": 5, "servers_per_su": 2},
     ["topology.servers = 5", "multiple of servers_per_su = 2"]),
    ("rail_optimized", {"servers": 8, "servers_per_su": 2, "sus_per_pod": 3},
     ["topology.sus_per_pod = 3", "divide the 4 scalable units"]),
    ("rail_optimized", {"servers": 4, "servers_per_su": 4, "spines_per_pod": 3},
     ["topology.spines_per_pod = 3", "divide the 4 uplinks"]),
    ("rail_optimized", {"servers": 8, "servers_per_su": 2, "sus_per_pod": 2,
                        "cores_per_plane": 3}, ["topology.cores_per_plane = 3", "divide"]),
    ("rail_optimized", {"spine_uplinks": 2}, ["topology.spine_uplinks = 2", "single pod"]),
    ("rail_optimized", {"gpus_per_server": 17}, ["topology.gpus_per_server = 17", "1..16"]),
    ("rail_optimized", {"nvlink_rate_gbps": 3600}, ["nvlink_rate_gbps = 3600", "1600"]),
    ("rail_optimized", {"rails": 8}, ["topology.rails = 8", "unknown parameter",
                                      "gpus_per_server"]),
    ("leaf_spine_superspine", {"pods": 0}, ["topology.pods = 0", "1..512"]),
    ("leaf_spine_superspine", {"hosts_per_leaf": 4, "spines_per_pod": 3},
     ["topology.spines_per_pod = 3", "divide the 4 uplinks", "leaf_uplinks"]),
    ("leaf_spine_superspine", {"pods": 2, "superspines_per_plane": 3},
     ["topology.superspines_per_plane = 3", "spine_uplinks"]),
])
def test_bad_parameters_name_field_value_and_valid_range(kind, params, needles):
    with pytest.raises(ConfigError) as info:
        build_topology(kind, **params)
    for n in needles:
        assert n in str(info.value), f"{n!r} not in {info.value}"


# --- memory: refused before anything large is built -----------------------------------------
COUNTED = CASES + [("hamming_mesh", {"board_rows": 1, "board_cols": 2, "rows": 4, "cols": 2,
                                     "switch_radix": 4}),
                   ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 2, "cols": 3,
                                     "share_networks": True}),
                   ("supernode", {"gpus": 8, "planes": 2, "layers": 2, "gpus_per_leaf": 2}),
                   ("leaf_spine", {"leaves": 4, "hosts_per_leaf": 8, "oversubscription": 4}),
                   ("pair", {})]


@pytest.mark.parametrize("kind,params", COUNTED, ids=ids(COUNTED))
def test_counts_from_parameters_are_the_built_ones(kind, params):
    """What a builder declares it will build, for the refusal before building, is what it
    builds."""
    from spin.config import LinkConfig
    from spin.topologies import TOPOLOGIES
    spec = TOPOLOGIES.get(kind, "kind")
    topo = build_topology(kind, **params)
    assert spec.counts(spec.params(**params), LinkConfig()) == (
        len(topo.hosts), len(topo.switches), len(topo.links))



def test_a_topology_too_large_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "64MiB")

    def no_build(*args, **kwargs):
        raise AssertionError("the topology was being built")
    monkeypatch.setattr(Topology, "add_switch", no_build)
    with pytest.raises(TopologyError) as info:
        build_topology("rail_optimized", servers=8192, servers_per_su=32, sus_per_pod=4)
    text = str(info.value)
    assert "\n" not in text
    for needle in ("topology.kind = 'rail_optimized' (servers = 8192", "65,536 hosts",
                   "78,848 switches", "need about", "routing tables", "topology (",
                   "the memory limit is 64.0 MiB (SPIN_MEMORY_LIMIT)"):
        assert needle in text, (needle, text)


def test_an_engine_state_too_large_is_refused_before_its_routing_tables(monkeypatch):
    from spin.assembly.state_builder import build_state
    from spin.describe.scenario import Scenario
    sc = Scenario(build_topology("fat_tree", k=8))
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "16MiB")     # host memory alone: 128 MiB

    def no_tables(*args, **kwargs):
        raise AssertionError("routing tables were computed")
    monkeypatch.setattr(RouteTables, "add_epoch", no_tables)
    with pytest.raises(ConfigError) as info:
        build_state(sc, [], set())
    text = str(info.value)
    assert "the engine state needs about" in text and "the memory limit is 16.0 MiB" in text
    assert "\n" not in text


# --- a run on each new topology -------------------------------------------------------------
@pytest.mark.parametrize("kind,params", [
    ("rail_optimized", {"servers": 4, "servers_per_su": 2, "gpus_per_server": 4}),
    ("rail_optimized", {"servers": 8, "servers_per_su": 2, "gpus_per_server": 2,
                        "sus_per_pod": 2, "scale_up": False}),
    ("leaf_spine_superspine", {"pods": 2, "leaves_per_pod": 2, "hosts_per_leaf": 4}),
], ids=["rail", "rail-three-tiers-no-nvlink", "leaf-spine-superspine"])
def test_a_permutation_completes(kind, params):
    """Every host writes 64 KiB to its image under a permutation, per-flow ECMP and spraying
    over the Ultra-Ethernet-style transport: every flow arrives, no frame is dropped."""
    from spin.loadbalancing.compare import add_workload, fabric_scenario, run_schemes
    sc = fabric_scenario(kind, params, transport="ue")
    workload = add_workload(sc, "permutation", message_bytes=64 * 1024, seed=0)
    for run in run_schemes(sc, workload, ["ecmp", "spray"]):
        assert run.completed == run.flows == len(sc.topology.hosts), run.scheme
        assert run.result.drops == {}, run.scheme
