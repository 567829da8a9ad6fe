"""Topology builders, inventories, bisection bandwidth and equal-cost routing (pure Python)."""
from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import networkx as nx
import pytest

from spin.cli import main as cli_main
from spin.config import LinkConfig
from spin.errors import ConfigError, TopologyError
from spin.tools.scenario_file import load_scenario, load_scenario_text
from spin.topologies import build_topology, topology_inventory, topology_kinds
from spin.topology import Topology

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "topologies"

# (kind, params) small enough to check every (switch, host) pair against an independent oracle
SMALL = [
    ("pair", {}),
    ("star", {"hosts": 5}),
    ("leaf_spine", {"leaves": 4, "hosts_per_leaf": 3}),
    ("leaf_spine", {"leaves": 4, "hosts_per_leaf": 8, "oversubscription": 4}),
    ("leaf_spine", {"leaves": 2, "spines": 2, "hosts_per_leaf": 8, "oversubscription": 2}),
    ("leaf_spine", {"leaves": 1, "hosts_per_leaf": 6}),
    ("fat_tree", {"k": 4}),
    ("fat_tree", {"k": 6}),
    ("fat_tree", {"k": 4, "oversubscription": 2}),
    ("fat_tree", {"k": 4, "host_rate_gbps": 100, "edge_agg_rate_gbps": 200,
                  "agg_core_rate_gbps": 50}),
    ("hamming_mesh", {}),
    ("hamming_mesh", {"board_rows": 2, "board_cols": 3, "rows": 2, "cols": 3}),
    ("hamming_mesh", {"board_rows": 3, "board_cols": 2, "rows": 3, "cols": 2}),
    ("hamming_mesh", {"board_rows": 1, "board_cols": 2, "rows": 4, "cols": 2, "switch_radix": 4}),
    ("hamming_mesh", {"board_rows": 2, "board_cols": 2, "rows": 2, "cols": 3,
                      "share_networks": True}),
    ("leaf_spine_superspine", {}),
    ("leaf_spine_superspine", {"pods": 2, "leaves_per_pod": 3, "hosts_per_leaf": 2,
                               "spines_per_pod": 1}),
    ("supernode", {}),
    ("supernode", {"gpus": 8, "planes": 2, "supernodes": 2, "scale_out_gpus_per_leaf": 4}),
    ("supernode", {"gpus": 8, "planes": 2, "layers": 2, "gpus_per_leaf": 2}),
    ("supernode", {"gpus": 8, "planes": 3, "layers": 2, "gpus_per_leaf": 4, "plane_spines": 1,
                   "scale_out": False}),
]


def ids(cases):
    return [f"{k}-{'-'.join(f'{a}{b}' for a, b in p.items())}" for k, p in cases]


# --- an independent oracle: networkx distances with the destination as the only host ---------
def oracle_groups(topo: Topology, down: frozenset[int] = frozenset()):
    """(switch, node) -> set of local ports whose peer is one hop closer to the host."""
    ports = topo.ports()
    out = {}
    for node, h in enumerate(topo.hosts):
        g = nx.MultiGraph()
        g.add_nodes_from(topo.switches + [h])
        g.add_edges_from((l.a, l.b) for i, l in enumerate(topo.links)
                         if i not in down and {l.a, l.b} <= set(g.nodes))
        dist = nx.single_source_shortest_path_length(g, h)
        for s in topo.switches:
            if s not in dist:
                continue
            out[(s, node)] = {p for p, (li, peer) in enumerate(ports[s])
                              if li not in down and peer in dist and dist[peer] == dist[s] - 1}
    return out


def follow_all_paths(topo: Topology, ecp, s: str, node: int, hops_left: int) -> None:
    """Every next hop leads to the host in exactly the shortest number of hops (no loop)."""
    host = topo.hosts[node]
    assert hops_left >= 1, f"at {s} for {host}: path longer than the shortest"
    for port in ecp[s][node]:
        _, peer = topo.ports()[s][port]
        if peer == host:
            assert hops_left == 1
        else:
            assert peer in topo.roles, f"{s} forwards {host} to host {peer}"
            follow_all_paths(topo, ecp, peer, node, hops_left - 1)


@pytest.mark.parametrize("kind,params", SMALL, ids=ids(SMALL))
def test_routing_uses_every_equal_cost_port_and_reaches_every_host(kind, params):
    topo = build_topology(kind, **params)
    ecp = topo.equal_cost_ports()
    want = oracle_groups(topo)
    got = {(s, n): set(g) for s, table in ecp.items() for n, g in table.items()}
    assert got == want
    assert all(list(g) == sorted(g) and g for t in ecp.values() for g in t.values())
    dist = {}
    for s in topo.switches:                   # connected: every switch reaches every host
        assert set(ecp[s]) == set(range(len(topo.hosts)))
    g = topo.graph()
    for (s, n) in list(want)[:400]:
        sub = g.subgraph(topo.switches + [topo.hosts[n]])
        dist[(s, n)] = nx.shortest_path_length(sub, s, topo.hosts[n])
        follow_all_paths(topo, ecp, s, n, dist[(s, n)])
    routes = topo.switch_routes()
    assert routes == {s: {n: grp[0] for n, grp in t.items()} for s, t in ecp.items()}


@pytest.mark.parametrize("kind,params", SMALL, ids=ids(SMALL))
def test_bisection_max_flow_equals_the_builders_formula(kind, params):
    inv = topology_inventory(build_topology(kind, **params))
    assert inv.bisection_formula_gbps is not None
    assert inv.bisection_gbps == pytest.approx(inv.bisection_formula_gbps)
    assert inv.bisection_gbps > 0


# --- counts --------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [4, 6, 8, 10])
def test_fat_tree_counts(k):
    topo = build_topology("fat_tree", k=k)
    inv = topology_inventory(topo)
    assert inv.hosts == k ** 3 // 4 and inv.switches == 5 * k * k // 4
    assert dict(inv.switches_by_role) == {"edge": k * k // 2, "agg": k * k // 2, "core": k * k // 4}
    assert {kind: n for _, kind, n in inv.links_by_rate_kind} == {
        "host": k ** 3 // 4, "edge-agg": k ** 3 // 4, "agg-core": k ** 3 // 4}
    assert inv.switch_ports == 5 * k ** 3 // 4 and inv.accelerator_ports == 0
    assert inv.bisection_gbps == k ** 3 / 8 * 400
    assert all(len(p) == k for s, p in topo.ports().items() if s in topo.roles)


def test_fat_tree_k16_builds_and_routes_fast():
    t0 = time.perf_counter()
    topo = build_topology("fat_tree", k=16)
    t1 = time.perf_counter()
    ecp = topo.equal_cost_ports()
    t2 = time.perf_counter()
    assert len(topo.hosts) == 1024 and len(topo.switches) == 320
    assert all(len(t) == 1024 for t in ecp.values())
    assert all(len(ecp["p3e2"][n]) == 8 for n in range(1024) if not 3 * 64 + 16 <= n < 3 * 64 + 24)
    # generous bound against an accidental per-host search; typically ~0.2 s on one core
    assert t2 - t1 < 10.0 and t1 - t0 < 10.0


def test_fat_tree_groups_at_each_tier():
    k, half = 8, 4
    topo = build_topology("fat_tree", k=k)
    ecp, ports = topo.equal_cost_ports(), topo.ports()
    per_pod = half * half
    for n in range(len(topo.hosts)):
        edge_hosts = range(0, half)              # hosts on p0e0
        grp = ecp["p0e0"][n]
        if n in edge_hosts:
            assert len(grp) == 1 and ports["p0e0"][grp[0]][1] == topo.hosts[n]
        else:
            assert len(grp) == half and {ports["p0e0"][p][1] for p in grp} == {
                f"p0a{a}" for a in range(half)}
        agg = ecp["p0a1"][n]
        if n < per_pod:                          # same pod: down to the host's edge switch
            assert [ports["p0a1"][p][1] for p in agg] == [f"p0e{n // half}"]
        else:                                    # other pod: every core port of the agg switch
            assert len(agg) == half and {ports["p0a1"][p][1] for p in agg} == {
                f"c{c}" for c in range(half, 2 * half)}
        core = ecp["c0"][n]
        assert [ports["c0"][p][1] for p in core] == [f"p{n // per_pod}a0"]


def test_leaf_spine_oversubscription_rules():
    topo = build_topology("leaf_spine", leaves=4, hosts_per_leaf=16, oversubscription=4)
    assert sum(r == "spine" for r in topo.roles.values()) == 4          # 16*400/(4*400)
    topo = build_topology("leaf_spine", leaves=4, spines=2, hosts_per_leaf=16,
                          oversubscription=4)
    assert {l.config.rate_gbps for l in topo.links if l.kind == "leaf-spine"} == {800}
    topo = build_topology("leaf_spine", leaves=2, hosts_per_leaf=8, host_rate_gbps=100,
                          fabric_rate_gbps=400)
    assert sum(r == "spine" for r in topo.roles.values()) == 2          # non-blocking by default
    inv = topology_inventory(topo)
    assert inv.bisection_gbps == 800.0
    with pytest.raises(TopologyError, match=r"topology\.oversubscription = 3\.0: .*whole"):
        build_topology("leaf_spine", leaves=4, hosts_per_leaf=8, oversubscription=3)
    with pytest.raises(TopologyError, match=r"oversubscription = 2\.0: inconsistent"):
        build_topology("leaf_spine", hosts_per_leaf=8, spines=2, fabric_rate_gbps=400,
                       oversubscription=2)


def test_hamming_mesh_structure_and_accelerator_ports():
    a, b, rows, cols = 2, 3, 2, 4
    topo = build_topology("hamming_mesh", board_rows=a, board_cols=b, rows=rows, cols=cols)
    n = a * b * rows * cols
    inv = topology_inventory(topo)
    roles = dict(inv.switches_by_role)
    assert inv.hosts == n and roles["accelerator"] == n
    assert inv.accelerator_ports == 4 * n            # N, S, W, E on every accelerator
    assert roles["row-switch"] == rows * a and roles["column-switch"] == cols * b
    ports = topo.ports()
    for i, h in enumerate(topo.hosts):
        (li, router), = ports[h]
        assert topo.switch_role(router) == "accelerator" and topo.links[li].kind == "internal"
        assert len(ports[router]) == 5
    mesh = sum(nn for _, kind, nn in inv.links_by_rate_kind if kind == "mesh")
    assert mesh == rows * cols * (a * (b - 1) + b * (a - 1))
    # rows even and b > a: cutting the board columns is cheaper, hosts are ordered that way
    assert inv.bisection_gbps == rows * a * cols * 400
    shared = topology_inventory(build_topology(
        "hamming_mesh", board_rows=a, board_cols=b, rows=rows, cols=cols, share_networks=True))
    roles = dict(shared.switches_by_role)
    assert roles["row-switch"] == rows and roles["column-switch"] == cols
    assert shared.bisection_gbps == inv.bisection_gbps and shared.cables == inv.cables
    big = build_topology("hamming_mesh", board_rows=1, board_cols=1, rows=1, cols=40,
                         switch_radix=16)
    roles = dict(topology_inventory(big).switches_by_role)
    assert roles["row-leaf"] == 10 and roles["row-spine"] == 8


def test_supernode_structure():
    topo = build_topology("supernode", gpus=8, planes=3, supernodes=2, scale_out_gpus_per_leaf=4)
    inv = topology_inventory(topo)
    roles = dict(inv.switches_by_role)
    assert roles == {"accelerator": 16, "plane": 6, "leaf": 4, "spine": 4}
    assert inv.accelerator_ports == 16 * (3 + 1)
    assert inv.bisection_gbps == 8 * 400                # only scale-out crosses the halves
    two = build_topology("supernode", gpus=16, planes=2, layers=2, gpus_per_leaf=4,
                         scale_out=False)
    roles = dict(topology_inventory(two).switches_by_role)
    assert roles == {"accelerator": 16, "plane-leaf": 8, "plane-spine": 8}


def test_per_switch_roles_and_latency():
    topo = build_topology("hamming_mesh", router_latency_ns=20.0)
    r = topo.switches[0]
    assert topo.switch_role(r) == "accelerator" and topo.switch_latency_ns(r, 450.0) == 20.0
    assert topo.switch_latency_ns("row0", 450.0) == 450.0
    t = Topology()
    s = t.add_switch("tor", role="leaf", latency_ns=300.0)
    t.add_link(t.add_host(), s)
    assert t.switch_role("tor") == "leaf" and t.switch_latency_ns("tor", 450.0) == 300.0
    assert t.links[0].kind == "host"
    with pytest.raises(TopologyError, match=r"'h0' is not a switch; switches: tor"):
        t.switch_role("h0")
    with pytest.raises(TopologyError, match=r"latency_ns = -1"):
        t.add_switch("x", latency_ns=-1)
    back = pickle.loads(pickle.dumps(topo))
    assert back == topo and back.equal_cost_ports() == topo.equal_cost_ports()


def test_classmethods_and_custom_graph():
    star = Topology.star(3, LinkConfig(rate_gbps=100))
    assert star.hosts == ["h0", "h1", "h2"] and star.kind == "star"
    assert {l.config.rate_gbps for l in star.links} == {100}
    assert Topology.pair().switches == [] and Topology.pair().equal_cost_ports() == {}
    g = nx.Graph()
    g.add_nodes_from(["a", "b", "c", "d"], kind="host")
    g.add_node("x", role="leaf")
    g.add_node("y", role="leaf", latency_ns=10.0)
    g.add_edges_from([("a", "x"), ("b", "x"), ("c", "y"), ("d", "y")])
    g.add_edge("x", "y", rate_gbps=100, kind="trunk")
    topo = build_topology("custom", graph=g)
    assert topo.hosts == ["a", "b", "c", "d"] and topo.switch_latency_ns("y", 1.0) == 10.0
    assert [l.kind for l in topo.links][-1] == "trunk"
    assert topology_inventory(topo).bisection_gbps == 100.0   # {a, b} vs {c, d}: the trunk
    edges = build_topology("custom", hosts=["a", "b"], edges=[("a", "s"), ("b", "s", {
        "rate_gbps": 100})])
    assert edges.switches == ["s"] and edges.links[1].config.rate_gbps == 100


# --- down links and disconnection -----------------------------------------------------------
def test_down_links_are_avoided_and_rerouted():
    topo = build_topology("fat_tree", k=4)
    ports = topo.ports()
    up = next(i for i, l in enumerate(topo.links) if l.kind == "edge-agg" and l.a == "p0e0")
    down = frozenset({up})
    ecp = topo.equal_cost_ports(down)
    assert {(s, n): set(g) for s, t in ecp.items() for n, g in t.items()} == \
        oracle_groups(topo, down)
    for n in range(4, 16):                       # remote hosts: one uplink left at p0e0
        (p,) = ecp["p0e0"][n]
        assert ports["p0e0"][p][0] != up
    # the aggregation switch that lost its link reaches p0e0's hosts by bouncing off the pod's
    # other edge switch (3 hops; through the core it would take 5)
    agg = topo.links[up].b
    for n in (0, 1):
        assert [ports[agg][p][1] for p in ecp[agg][n]] == ["p0e1"]
    host_link = next(i for i, l in enumerate(topo.links) if l.a == "h5" or l.b == "h5")
    cut = topo.equal_cost_ports(frozenset({host_link}))
    assert all(5 not in t for t in cut.values()) and all(4 in t for t in cut.values())


def test_disconnected_topologies_are_named():
    t = Topology()
    s0, s1 = t.add_switch(), t.add_switch()
    t.add_link(t.add_host(), s0)
    t.add_link(t.add_host(), s1)
    with pytest.raises(TopologyError, match=r"host 'h0' cannot reach host 'h1'"):
        t.validate()
    with pytest.raises(TopologyError, match=r"cannot reach .*'h1'"):
        build_topology("custom", hosts=["h0", "h1"], switches=["a", "b"],
                       edges=[("h0", "a"), ("h1", "b")])
    lonely = Topology()
    lonely.add_host()
    lonely.add_link(lonely.add_host(), lonely.add_switch())
    with pytest.raises(TopologyError, match=r"'h0'.*no link"):
        lonely.validate()
    island = Topology.star(2)
    island.add_switch("far")
    with pytest.raises(TopologyError, match=r"cannot reach switch 'far'"):
        island.validate()
    through_host = Topology()       # h1 sits between two switches' worth of hosts: no transit
    a, b = through_host.add_switch("a"), through_host.add_switch("b")
    through_host.add_link(through_host.add_host(), a)
    through_host.add_link(through_host.add_host(), b)
    with pytest.raises(TopologyError, match="disconnected"):
        through_host.validate()


# --- parameter errors ----------------------------------------------------------------------
@pytest.mark.parametrize("kind,params,needles", [
    ("fat_tree", {"k": 5}, ["topology.k = 5", "even", "4, 6, 8"]),
    ("fat_tree", {"k": 66}, ["topology.k = 66", "4..64"]),
    ("fat_tree", {"kk": 4}, ["topology.kk = 4", "unknown parameter", "valid parameters: k,"]),
    ("ring", {}, ["topology.kind = 'ring'", "valid choices: custom, fat_tree, hamming_mesh"]),
    ("star", {}, ["topology.hosts = None", "required"]),
    ("supernode", {"layers": 3}, ["topology.layers = 3", "1, 2"]),
    ("supernode", {"layers": 2, "gpus": 8, "gpus_per_leaf": 3}, ["gpus_per_leaf = 3", "divid"]),
    ("supernode", {"supernodes": 2, "scale_out": False}, ["scale_out = False"]),
    ("hamming_mesh", {"rows": 0}, ["topology.rows = 0", "1..64"]),
    ("hamming_mesh", {"cols": 64, "board_cols": 16, "switch_radix": 8},
     ["switch_radix = 8", "at most 32 ports"]),
    ("leaf_spine", {"host_rate_gbps": 0}, ["host_rate_gbps = 0", "> 0"]),
    ("custom", {"hosts": ["a"], "edges": [("a", "zz", "x")]}, ["edges[0]", "(a, b, {attrs})"]),
    ("custom", {"hosts": ["a"], "links": [{"a": "a", "b": "s", "speed": 1}]},
     ["links[0]", "valid keys: a, b, rate_gbps"]),
])
def test_bad_parameters_name_field_value_and_valid_range(kind, params, needles):
    with pytest.raises(ConfigError) as info:
        build_topology(kind, **params)
    for n in needles:
        assert n in str(info.value), f"{n!r} not in {info.value}"


def test_kinds_listed():
    assert topology_kinds() == ["custom", "fat_tree", "hamming_mesh", "leaf_spine",
                                "leaf_spine_superspine", "pair", "rail_optimized", "star",
                                "supernode"]


# --- scenario files, CLI, examples ---------------------------------------------------------
def test_scenario_file_topology_section():
    sc, _ = load_scenario_text("[topology]\nkind = 'fat_tree'\nk = 4\nhost_rate_gbps = 100\n"
                               "[link]\nrate_gbps = 200\nlatency_ns = 50.0\n", "t.toml")
    rates = {l.kind: l.config.rate_gbps for l in sc.topology.links}
    assert rates == {"host": 100, "edge-agg": 200, "agg-core": 200}
    assert {l.config.latency_ns for l in sc.topology.links} == {50.0}
    with pytest.raises(ConfigError, match=r"t\.toml: topology\.k = 7: must be even"):
        load_scenario_text("[topology]\nkind = 'fat_tree'\nk = 7\n", "t.toml")
    with pytest.raises(ConfigError, match=r"t\.toml: topology\.kind = 'torus': .*valid choices"):
        load_scenario_text("[topology]\nkind = 'torus'\n", "t.toml")
    with pytest.raises(ConfigError, match=r"t\.toml: topology\.planes = 0: .*1\.\.64"):
        load_scenario_text("[topology]\nkind = 'supernode'\nplanes = 0\n", "t.toml")


def test_cli_topo(capsys, tmp_path):
    out_json = tmp_path / "inv.json"
    assert cli_main(["topo", "fat_tree", "--param", "k=4", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "fat_tree k=4" in out and "3.2 Tb/s" in out and "links: agg-core at 400 Gb/s" in out
    assert json.loads(out_json.read_text())[0]["bisection_gbps"] == 3200.0
    assert cli_main(["topo", "star:hosts=4", "leaf_spine:leaves=2,hosts_per_leaf=2"]) == 0
    out = capsys.readouterr().out
    assert "star hosts=4" in out and "leaf_spine leaves=2 hosts_per_leaf=2" in out
    assert cli_main(["topo", "fat_tree", "--param", "k=5"]) == 2
    assert "topology.k = 5" in capsys.readouterr().err
    assert cli_main(["topo", "--list"]) == 0
    assert "fat_tree: Three-tier k-ary fat tree." in capsys.readouterr().out


EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))


def test_one_example_per_topology():
    kinds = {load_scenario(p)[0].topology.kind for p in EXAMPLE_FILES}
    assert kinds == set(topology_kinds()) - {"pair", "star"}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_examples_load_and_route(path):
    sc, opts = load_scenario(path)
    topo = sc.topology
    assert sc.host_programs and opts.checks
    ecp = topo.equal_cost_ports()
    ports = topo.ports()
    first_hops = {ports[h][0][1] for h in topo.hosts}      # a host's own switch reaches all
    assert all(set(ecp[s]) == set(range(len(topo.hosts))) for s in first_hops)


@pytest.mark.parametrize("spec, needle", [
    ("star:hosts=2,link=5", "topology.link = 5: unknown parameter 'link' of kind = 'star'; "
                            "valid parameters: hosts"),
    ("star:hosts=2,name=x", "topology.name = 'x': unknown parameter 'name'"),
    ("star:hosts=2,where=1", "topology.where = 1: unknown parameter 'where'"),
    ("fat_tree:k=4,k=8", "fat_tree:k=4,k=8: parameter 'k' is given twice"),
    ("star:hosts=true", "topology.hosts = True: a boolean is not a count or a number; "
                        "valid: 1..4096"),
])
def test_cli_parameters_named_like_build_arguments_or_given_twice_are_refused(capsys, spec,
                                                                              needle):
    """``link``, ``name`` and ``where`` are build_topology's own arguments: given as a kind's
    parameter they once reached it as keywords (a TypeError), and a boolean was taken for 1."""
    assert cli_main(["topo", spec]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("line, needle", [
    ("link = 5", "t.toml: topology.link = 5: unknown parameter 'link' of kind = 'star'"),
    ("name = 'x'", "t.toml: topology.name = 'x': unknown parameter 'name'"),
    ("hosts = true", "t.toml: topology.hosts = True: a boolean is not a count or a number"),
])
def test_scenario_file_topology_parameters_are_checked_the_same_way(line, needle):
    text = "[topology]\nkind = 'star'\n" + ("" if line.startswith("hosts") else "hosts = 2\n")
    with pytest.raises(ConfigError) as info:
        load_scenario_text(text + line + "\n", "t.toml")
    assert needle in str(info.value)


def test_above_the_max_flow_limit_the_builders_formula_stands_in(monkeypatch):
    """262,144 hosts ran the max-flow for more than 400 s without a word."""
    from spin.topologies import inventory
    from spin.topologies.inventory_tables import inventory_table
    topo = build_topology("fat_tree", k=4)
    exact = topology_inventory(topo)
    monkeypatch.setattr(inventory, "MAX_FLOW_HOSTS", 8)
    monkeypatch.setattr("spin.topologies.inventory_tables.MAX_FLOW_HOSTS", 8)
    inv = topology_inventory(topo)
    assert (exact.bisection_method, inv.bisection_method) == ("max-flow", "formula")
    assert inv.bisection_gbps == exact.bisection_gbps == inv.bisection_formula_gbps
    table = inventory_table([("fat_tree k=4", inv)])
    assert "3.2 Tb/s*" in table and "max-flow is not computed above 8 hosts" in table
