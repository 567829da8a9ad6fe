"""Errors, tables and results speak the user's words: devices by the names the topology gave
them (``h1``, ``s0``), Python-side mistakes with the host, the op and its index, and results
readable the old dict way with a warning naming the attribute."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from handlers.ping_pong import ping_pong_program
from spin.errors import ConfigError, RunIncompleteError
from spin.handler import ExecutionContext
from spin.results.records import HostStats, LinkStats, Totals
from spin.results.report import nic_table, run_summary
from spin.results import SCHEMA_VERSION, RunResult
from spin.simulation import Scenario
from spin.topologies import build_topology
from spin.topology import Topology


# --- Python-side mistakes ---------------------------------------------------------------------
def test_send_to_a_missing_node_names_host_op_index_and_hosts():
    sc = Scenario(Topology.star(2))
    prog = sc.host_program(0).send(1, 64).compute(10)
    with pytest.raises(ConfigError) as err:
        prog.send(5, 64)
    assert str(err.value) == ("host 'h0' (node 0) op 2 (send): dst=5 is not a host; give a node "
                              "id 0..1 or a host name: h0 (node 0), h1 (node 1)")
    with pytest.raises(ConfigError, match=r"op 2 \(send\): dst='s0' is not a host"):
        prog.send("s0", 64)


def test_a_send_made_bad_after_the_fact_is_refused_before_the_run():
    sc = Scenario(Topology.star(2))
    sc.host_program(1).send(0, 64)
    sc.host_program(1).ops[0][1] = 9          # what no builder checked (a hand-made op table)
    with pytest.raises(ConfigError, match=r"^host 'h1' \(node 1\) op 0 \(send\): dst=9 is not "
                       r"a host; hosts: h0 \(node 0\), h1 \(node 1\)$"):
        sc.run()


def test_a_host_memory_write_out_of_range_names_the_host():
    sc = Scenario(Topology.star(2))
    with pytest.raises(ConfigError, match=r"^host 'h1' \(node 1\) memory write at addr=1048572 "
                       r"of 8 B exceeds HostConfig.memory_bytes=1048576$"):
        sc.write_host_memory("h1", (1 << 20) - 4, np.zeros(8, np.uint8))


def test_hosts_are_given_by_name_as_well_as_by_node_id():
    sc = Scenario(Topology.star(3))
    assert sc.host_program("h2") is sc.host_program(2)
    sc.host_program("h0").send("h2", 64)
    assert sc.host_programs[0].ops[0][1] == 2
    sc.write_host_memory("h1", 0, np.ones(4, np.uint8))
    assert sc.host_memory[-1][0] == 1
    with pytest.raises(ConfigError, match=r"host program: node='s0' is not a host .*\('s0' is a "
                       r"switch\)"):
        sc.host_program("s0")


def test_a_context_on_a_missing_device_lists_hosts_and_switches():
    sc = Scenario(Topology.star(2))
    prog = ping_pong_program(reply_qp=2)
    for node in (7, "leaf9"):
        with pytest.raises(ConfigError) as err:
            sc.install(ExecutionContext(node, prog))
        message = str(err.value)
        assert f"node={node!r} is not a device" in message and "'ping_pong'" in message
        assert "hosts: h0 (node 0), h1 (node 1); switches: s0" in message
    assert sc.install(ExecutionContext("s0", prog)).node == "s0"    # a switch is a device


def test_a_waiting_host_is_named_as_the_user_named_it():
    topo = Topology()
    leaf = topo.add_switch("leaf0", role="leaf")
    for name in ("alice", "bob"):
        topo.add_link(topo.add_host(name), leaf)
    sc = Scenario(topo)
    sc.host_program("bob").wait_recv()
    result = sc.run()
    assert result.hosts[1].name == "bob" and result.nics[1].name == "bob"
    with pytest.raises(RunIncompleteError, match=r"host 'bob' \(node 1\) waits at op 0 "
                       r"\(wait_recv qp=0\)"):
        result.require_finished()


def test_tables_name_hosts_and_flows_by_their_names():
    topo = Topology()
    leaf = topo.add_switch("leaf0", role="leaf")
    for name in ("alice", "bob"):
        topo.add_link(topo.add_host(name), leaf)
    sc = Scenario(topo)
    sc.host_program("alice").mark("start").send("bob", 512, qp=1)
    sc.host_program("bob").wait_recv(qp=1).mark("done")
    result = sc.run()
    text = run_summary(result)
    assert "alice->bob qp1" in text
    nic_rows = [line.split()[0] for line in nic_table(result).splitlines()[3:]]
    assert nic_rows == ["alice", "bob"]
    marks = text.split("\nmarks\n", 1)[1]
    assert marks.splitlines()[0].split() == ["mark", "host", "time", "(µs)"]
    assert [line.split()[:2] for line in marks.splitlines()[2:]] == [["start", "alice"],
                                                                     ["done", "bob"]]
    frames = result.tables()
    assert list(frames.messages[["src_name", "dst_name"]].iloc[0]) == ["alice", "bob"]
    assert list(frames.hosts["name"]) == ["alice", "bob"]


def test_topology_repr_is_one_short_line():
    topo = build_topology("fat_tree", k=8)
    text = repr(topo)
    assert text == "Topology(kind='fat_tree', k=8, oversubscription=1: 128 hosts, 80 switches, " \
                   "384 links)"
    assert repr(Topology.pair()) == "Topology(kind='pair', hosts=2: 2 hosts, 0 switches, 1 link)"


# --- results read the old way -------------------------------------------------------------------
def test_dict_style_reads_warn_with_the_attribute_to_use():
    totals = Totals(link_bytes=1, pcie_bytes=2, host_cpu_ps=3, hpu_busy_ps=4, drops=5)
    with pytest.warns(DeprecationWarning, match=r"Totals\['host_cpu_ps'\] is deprecated: .* "
                      r"use the attribute \.host_cpu_ps"):
        assert totals["host_cpu_ps"] == 3
    host = HostStats(node=0, cpu_busy_ps=0, finished=True, messages_received=1, events_received=0)
    with pytest.warns(DeprecationWarning, match=r"\.finished"):
        assert host["finished"] is True
    link = LinkStats(link=0, from_device="h0", to_device="s0", tx_frames=1, tx_bytes=64, drops=0,
                     max_queue_bytes=0, busy_ps=5)
    with pytest.warns(DeprecationWarning, match=r"LinkStats\['from'\] .* \.from_device"):
        assert link["from"] == "h0"                     # the dict results' key for it
    with pytest.warns(DeprecationWarning):
        assert totals.get("drops") == 5


def test_a_key_that_never_existed_fails_in_one_line_naming_the_attributes():
    totals = Totals(link_bytes=1, pcie_bytes=2, host_cpu_ps=3, hpu_busy_ps=4, drops=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyError) as err:
            totals["host_cpu"]
        assert totals.get("host_cpu", -1) == -1
        with pytest.raises(TypeError, match="not iterable"):
            list(totals)                                   # a record is no sequence
    assert str(err.value) == ("Totals has no field 'host_cpu'; results are dataclasses: read "
                              "their attributes (link_bytes, pcie_bytes, host_cpu_ps, "
                              "hpu_busy_ps, drops)")


def test_json_results_carry_their_schema_version():
    sc = Scenario(Topology.pair())
    sc.host_program(0).send(1, 64)
    result = sc.run()
    data = json.loads(result.to_json())
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["hosts"][0]["name"] == "h0"
    assert RunResult.from_dict(data) == result
    unversioned = {k: v for k, v in data.items() if k != "schema_version"}
    assert RunResult.from_dict(unversioned) == result        # files of earlier releases
    with pytest.raises(ConfigError, match="schema_version = 2: this spin reads versions up to 1"):
        RunResult.from_dict({**data, "schema_version": 2})


def test_result_lookups_take_names_and_name_the_hosts_when_missing():
    sc = Scenario(Topology.pair())
    sc.host_program("h0").send("h1", 64)
    result = sc.run()
    assert result.host("h1") is result.host(1) and result.nic("h0") is result.nic(0)
    with pytest.raises(ConfigError, match=r"RunResult.host\(5\): no such host in this result; "
                       r"hosts: h0 \(node 0\), h1 \(node 1\)"):
        result.host(5)                                     # was a bare StopIteration
    with pytest.raises(ConfigError, match=r"RunResult.nic\('h9'\)"):
        result.nic("h9")


def test_scenario_program_and_result_reprs_are_one_line():
    sc = Scenario(build_topology("fat_tree", k=4))
    for node in range(16):
        for _ in range(200):
            sc.host_program(node).send((node + 1) % 16, 64).wait_recv()
    assert repr(sc) == ("Scenario(Topology(kind='fat_tree', k=4, oversubscription=1: 16 hosts, "
                        "20 switches, 48 links), 16 host programs, 0 execution contexts "
                        "(programs: none), 0 faults)")
    assert repr(sc.host_program("h3")) == ("HostProgram(host 'h3' (node 3), 400 ops: send x200, "
                                           "wait_recv x200)")
    result = sc.run()
    text = repr(result)
    assert "\n" not in text and len(text) < 200
    assert text.startswith(f"RunResult(end_time_ps={result.end_time_ps}, ")
    assert "3200 messages, 16 hosts, 20 switches, 96 link directions, drops=0" in text


def test_a_context_matching_a_missing_source_names_the_hosts():
    sc = Scenario(Topology.star(2))
    prog = ping_pong_program(reply_qp=2)
    with pytest.raises(ConfigError, match=r"program 'ping_pong': match_src=4 is not a host's node "
                       r"id; hosts: h0 \(node 0\), h1 \(node 1\)$"):
        sc.install(ExecutionContext(1, prog, match_src=4))
    with pytest.raises(ConfigError, match=r"match_dst='h1' .* \(give 1 for 'h1'\)"):
        sc.install(ExecutionContext(1, prog, match_dst="h1"))
    assert sc.contexts == []
