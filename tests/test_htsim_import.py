"""htsim imports: connection matrices (sizes, start times, trigger chains and barriers) run as
host programs with their dependencies kept, topology files build the fabric they describe, and
both reject malformed input naming the file and line."""
from pathlib import Path

import pytest

from spin import Scenario, Simulation
from spin.errors import ConfigError, TopologyError
from spin.topologies import build_topology
from spin.workloads import flow_messages, load_htsim_cm, load_htsim_topo
from spin.workloads.htsim_cm import parse_htsim_cm

HTSIM = Path(__file__).resolve().parent.parent / "examples" / "htsim"


def test_topo_file_builds_the_fat_tree_it_describes():
    topo = load_htsim_topo(HTSIM / "fat_tree_16.topo")
    ref = build_topology("fat_tree", k=4)
    assert topo.kind == "fat_tree" and topo.params["k"] == 4
    assert (topo.hosts, topo.switches) == (ref.hosts, ref.switches)
    assert [(l.a, l.b, l.config) for l in topo.links] == [(l.a, l.b, l.config) for l in ref.links]
    assert all(topo.switch_latency_ns(s, 0.0) == 450 for s in topo.switches)


def test_non_standard_topo_builds_a_custom_graph(tmp_path):
    f = tmp_path / "ls.topo"                 # 2 tiers, 8 hosts, 4:1 oversubscribed ToRs
    f.write_text("Nodes 8\nTiers 2\n\nTier 0\nOversubscribed 4\nDownlink_speed_Gbps 100\n"
                 "Radix_Down 4\nRadix_Up 1\nDownlink_Latency_ns 500\nSwitch_Latency_ns 0\n\n"
                 "Tier 1\nDownlink_speed_Gbps 100\nRadix_Down 2\nDownlink_Latency_ns 500\n")
    topo = load_htsim_topo(f)
    assert topo.kind == "custom" and len(topo.hosts) == 8 and len(topo.switches) == 3
    assert len(topo.links) == 8 + 2
    f.write_text(f.read_text().replace("Radix_Up 1", "Radix_Up 2"))
    with pytest.raises(TopologyError, match=r"ls.topo:8: tier 0 Radix_Up 2 does not match"):
        load_htsim_topo(f)
    f.write_text("Nodes 8\nTiers 2\nColour blue\n")
    with pytest.raises(TopologyError, match=r"ls.topo:3: 'Colour': unknown key"):
        load_htsim_topo(f)


def test_connection_matrix_runs_with_its_triggers():
    topo = load_htsim_topo(HTSIM / "fat_tree_16.topo")
    sc = Scenario(topo)
    matrix = load_htsim_cm(HTSIM / "chains_8.cm")
    wl = matrix.apply(sc)
    sim = Simulation(sc, quiet=True)
    result = sim.run(quiet=True)
    result.require_finished()
    assert len(wl.flows) == 12
    for f in wl.flows:
        got = sim.host_memory(f.dst)[f.remote_addr:f.remote_addr + f.nbytes].tobytes()
        assert got == wl.expected_bytes(f)
    msgs = {(m.src, m.dst): m for m in flow_messages(wl, result)}
    assert len(msgs) == 12
    conn = {c.flow_id: c for c in matrix.connections}
    done = {fid: msgs[(c.src, c.dst)].t_done_ps for fid, c in conn.items()}
    post = {fid: msgs[(c.src, c.dst)].t_post_ps for fid, c in conn.items()}
    for fid, c in conn.items():
        if c.start_ps is not None:
            assert post[fid] >= c.start_ps
            continue
        fired_by = sorted(done[s] for s, d in conn.items() if c.trigger in d.done_triggers)
        t = matrix.triggers[c.trigger]
        need = (t.count or len(fired_by)) if t.kind == "barrier" else 1
        assert post[fid] > fired_by[need - 1], (fid, c)
    assert post[10] > max(done[4], done[7])          # the barrier waited for both sources


def test_connection_matrix_round_trips_through_text(tmp_path):
    m = parse_htsim_cm(HTSIM / "chains_8.cm")
    out = tmp_path / "again.cm"
    out.write_text(m.to_text())
    again = parse_htsim_cm(out)
    strip = lambda conns: [c.__class__(0, *list(c.__dict__.values())[1:]) for c in conns]  # noqa: E731
    assert strip(again.connections) == strip(m.connections)
    assert {k: (t.kind, t.count) for k, t in again.triggers.items()} == \
        {k: (t.kind, t.count) for k, t in m.triggers.items()}


@pytest.mark.parametrize("line, why", [
    ("0->1 id 1 size 10", "needs exactly one of 'start' \\(ps\\) or 'trigger'"),
    ("0->0 id 1 start 0 size 10", "a connection from a node to itself"),
    ("0->1 id 1 start 0 size 0", "size 0 \\(an endless flow in htsim\\)"),
    ("0->1 id 1 start 0 size 10 colour red", "'colour': unknown connection attribute"),
    ("0->9 id 1 start 0 size 10", "nodes are 0..3"),
    ("0->1 id 1 trigger 5 size 10", "trigger 5 is used but never declared"),
    ("0->1 id x start 0 size 10", "id 'x': id must be an integer"),
])
def test_bad_connection_lines_name_file_and_line(tmp_path, line, why):
    f = tmp_path / "bad.cm"
    f.write_text(f"Nodes 4\n# a comment\n{line}\n")
    with pytest.raises(ConfigError, match=rf"bad.cm:3: .*{why}|bad.cm:3: {why}"):
        parse_htsim_cm(f)


def test_matrix_errors_against_the_scenario(tmp_path):
    f = tmp_path / "big.cm"
    f.write_text("Nodes 64\nConnections 1\n0->40 id 1 start 0 size 100\n")
    with pytest.raises(ConfigError, match=r"big.cm:3: 0->40: the topology has 16 hosts"):
        load_htsim_cm(f).apply(Scenario(build_topology("fat_tree", k=4)))
    f.write_text("Nodes 4\nConnections 2\nTriggers 2\n0->1 id 1 trigger 1 size 8 "
                 "send_done_trigger 2\n1->0 id 2 trigger 2 size 8 send_done_trigger 1\n"
                 "trigger id 1 oneshot\ntrigger id 2 oneshot\n")
    with pytest.raises(ConfigError, match=r"big.cm: triggers \[1, 2\] depend on each other"):
        load_htsim_cm(f).apply(Scenario(build_topology("star", hosts=4)))
    f.write_text("Nodes 99999999999\nConnections 1\n0->1 id 1 start 0 size 100\n")
    with pytest.raises(ConfigError, match=r"big.cm: Nodes 99,999,999,999 but the topology has "
                                          r"16 hosts"):
        load_htsim_cm(f).apply(Scenario(build_topology("fat_tree", k=4)))
    f.write_text("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 8\nConnections 3\n")
    with pytest.raises(ConfigError, match=r"header says Connections 3, the file has 1"):
        parse_htsim_cm(f)


def test_a_topo_file_too_large_for_memory_is_refused_before_it_is_built(tmp_path, monkeypatch):
    """The host count the file states sizes the frame pool; past the memory limit the file is
    refused from its header (building a million-host fabric first took 48 s and 3.6 GB)."""
    from spin.loadbalancing.htsim_run import htsim_scenario
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "16GiB")
    tiers = "".join(f"Tier {t}\nDownlink_speed_Gbps 100\nRadix_Down 1024\n"
                    + ("Radix_Up 1024\n" if t == 0 else "") + "Downlink_Latency_ns 1000\n"
                    for t in (0, 1))
    topo = tmp_path / "huge.topo"
    topo.write_text(f"Nodes 1048576\nTiers 2\n{tiers}")
    cm = tmp_path / "one.cm"
    cm.write_text("Nodes 1048576\nConnections 1\n0->5 id 1 start 0 size 65536\n")
    built = []
    monkeypatch.setattr("spin.loadbalancing.htsim_run.load_htsim_topo", built.append)
    with pytest.raises(ConfigError, match=r"huge.topo: 1,048,576 hosts: the engine's frame pool "
                       r"alone needs at least 32.0 GiB .*the memory limit is 16.0 GiB"):
        htsim_scenario(topo, cm)
    assert built == []
