"""Scenario TOML files: a good file loads; every kind of bad input names field, value, choices."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spin.errors import ConfigError
from spin.tools.scenario_file import load_scenario, load_scenario_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BASE = """
[topology]
kind = "star"
hosts = 2

[[program]]
name = "pong"
factory = "handlers.ping_pong:ping_pong_program"
args = { reply_qp = 2 }
"""


def load(extra: str = "", base: str = BASE):
    return load_scenario_text(base + extra, "test.toml")


def error_of(extra: str, base: str = BASE) -> str:
    with pytest.raises(ConfigError) as info:
        load(extra, base)
    msg = str(info.value)
    assert msg.startswith("test.toml: ")
    return msg


def test_examples_load():
    sc, opts = load_scenario(EXAMPLES / "pingpong.toml")
    assert opts.name == "pingpong" and opts.workers == 1
    assert sc.n_hosts == 2 and len(sc.contexts) == 1 and sc.contexts[0].match_qp == 1
    assert [p.name for p in sc.engine_programs] == ["ping_pong", "reduce"]
    assert len(sc.host_programs[0].ops) == 2 + 2 * 8       # marks + 8 x (send, wait_recv)
    assert sc.capture_links == [0, 1]
    sc, opts = load_scenario(EXAMPLES / "reduce_8hosts.toml")
    assert sc.n_hosts == 8 and len(sc.host_memory) == 8 and len(opts.checks) == 1
    expected = opts.checks[0].expected
    assert expected.dtype == np.int32 and expected.size == 16384


def test_good_file_everything():
    sc, opts = load("""
[link]
rate_gbps = 200
[engine]
mtu_bytes = 2048
[host]
qps = 8
[[context]]
node = "h1"
program = "pong"
match_qp = 1
match_src = "h0"
[[host_program]]
node = 0
ops = [{op = "send", dst = "h1", nbytes = 64, qp = 1},
       {op = "compute", ns = 10.5}, {op = "wait_recv", qp = 2},
       {op = "reduce", dst_addr = 0, src_addr = 64, count = 4, dtype = "int64"},
       {op = "mark", label = "x"}, {op = "repeat", times = 3, ops = [{op = "compute", ns = 1}]}]
[[memory]]
node = 0
addr = 0
dtype = "int16"
values = [1, -2, 3]
[workers]
count = 2
assign = { h0 = 0, h1 = 1, s0 = 1 }
""")
    assert sc.engine.mtu_bytes == 2048 and sc.host.qps == 8
    assert sc.topology.links[0].config.rate_gbps == 200
    assert sc.contexts[0].match_src == 0
    assert len(sc.host_programs[0].ops) == 5 + 3
    assert np.frombuffer(sc.host_memory[0][2], np.int16).tolist() == [1, -2, 3]
    assert opts.workers == 2 and opts.partition == {"h0": 0, "h1": 1, "s0": 1}


def test_custom_topology():
    sc, _ = load_scenario_text("""
[topology]
kind = "custom"
devices = [{name = "a", kind = "host"}, {name = "b", kind = "host"}, {name = "sw", kind = "switch"}]
links = [{a = "a", b = "sw"}, {a = "b", b = "sw", rate_gbps = 100}]
""", "t.toml")
    assert sc.topology.hosts == ["a", "b"] and sc.topology.links[1].config.rate_gbps == 100


@pytest.mark.parametrize("extra, needles", [
    # unknown keys, at every level
    ("[[program]]\nname = 'y'\nfactory = 'a:b'\nbogus = 1\n",
     ["program[1].bogus = 1", "unknown key", "valid keys: name, factory, args"]),
    ("[nic]\nhpu = 4\n", ["nic.hpu = 4", "unknown key", "hpus"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'send', dst = 1, nbytes = 8, qpp = 1}]\n",
     ["host_program[0].ops[0].qpp = 1", "unknown key", "remote_addr"]),
    # bad enums
    ("[engine]\nmtu_bytes = 1000\n", ["engine.mtu_bytes = 1000", "valid choices", "1024", "4096"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'mark', label = 'a'}, {op = 'jump'}]\n",
     ["host_program[0].ops[1].op = 'jump'", "valid choices", "send", "wait_recv", "repeat"]),
    ("[[memory]]\nnode = 0\naddr = 0\ndtype = 'int12'\nvalues = [1]\n",
     ["memory[0].dtype = 'int12'", "valid choices", "'int32'"]),
    ("[capture]\nlinks = 'some'\n", ["capture.links", "'some'", "'all'"]),
    # wrong types
    ("[link]\nrate_gbps = 'fast'\n", ["link.rate_gbps = 'fast'", "integer"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'send', dst = 1, nbytes = 'big'}]\n",
     ["host_program[0].ops[0].nbytes = 'big'", "integer"]),
    ("[[context]]\nnode = 1\nprogram = 'pong'\nmatch_qp = [1]\n", ["context[0].match_qp = [1]"]),
    # unknown program factory / program name
    ("[[program]]\nname = 'x'\nfactory = 'handlers.ping_pong:nope'\n",
     ["program[1].factory = 'handlers.ping_pong:nope'", "ping_pong_program"]),
    ("[[program]]\nname = 'x'\nfactory = 'no_such_module_xyz:f'\n",
     ["program[1].factory = 'no_such_module_xyz:f'", "cannot import"]),
    ("[[program]]\nname = 'x'\nfactory = 'handlers.ping_pong:ping_pong_program'\nargs = {qp = 1}\n",
     ["program[1].args", "reply_qp"]),
    ("[[context]]\nnode = 1\nprogram = 'pang'\n", ["context[0].program = 'pang'", "declared: pong"]),
    # references to missing nodes / devices
    ("[[context]]\nnode = 7\nprogram = 'pong'\n",
     ["context[0].node = 7", "0..1", "hosts: h0 (node 0), h1 (node 1); switches: s0"]),
    # a context may sit on a switch: the choices are every device, as from Python
    ("[[context]]\nnode = 's9'\nprogram = 'pong'\n",
     ["context[0].node = 's9': not a device of this topology; give a host (node id 0..1 or "
      "name) or a switch (name); hosts: h0 (node 0), h1 (node 1); switches: s0"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'send', dst = 3, nbytes = 8}]\n",
     ["host_program[0].ops[0].dst = 3", "h0 (node 0), h1 (node 1)"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'send', dst = 's0', nbytes = 8}]\n",
     ["host_program[0].ops[0].dst = 's0'", "not a host", "('s0' is a switch)"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'wait_rcv', qp = 0}]\n",
     ["host_program[0].ops[0].op = 'wait_rcv'", "(did you mean 'wait_recv'?)"]),
    ("[workers]\ncount = 2\nassign = { h5 = 0 }\n", ["workers.assign.h5 = 0", "h0, h1, s0"]),
    ("[workers]\ncount = 2\nassign = { h0 = 2 }\n", ["workers.assign.h0 = 2", "0..1"]),
    ("[capture]\nlinks = [0, 5]\n", ["capture.links[1] = 5", "0..1"]),
    # semantic checks
    ("[[memory]]\nnode = 0\naddr = 0\ndtype = 'uint8'\nvalues = [1, 300]\n",
     ["memory[0].values", "uint8"]),
    ("[[memory]]\nnode = 0\naddr = 0\ndtype = 'uint8'\nfill = 'random'\n",
     ["memory[0].count = None", "required"]),
    ("[[host_program]]\nnode = 0\nops = [{op = 'send', dst = 1, nbytes = 8, qp = 99}]\n",
     ["host_program[0].ops[0]", "qp=99", "0..63"]),
])
def test_bad_input_names_field_value_choices(extra, needles):
    msg = error_of(extra)
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"


def test_a_missing_device_reads_the_same_from_toml_and_python():
    """A context on a device that does not exist: the file and the Python API give the same
    reason and the same choices (hosts and switches), each after its own location."""
    toml = error_of("[[context]]\nnode = 'leaf9'\nprogram = 'pong'\n")
    sc, _ = load()
    from spin.handler import ExecutionContext
    with pytest.raises(ConfigError) as info:
        sc.install(ExecutionContext("leaf9", sc.engine_programs[0]))
    python = str(info.value)
    reason = "not a device of this topology"
    assert reason in toml and reason in python
    assert toml[toml.index(reason):] == python[python.index(reason):]
    assert python.endswith("switches: s0")


def test_unknown_top_level_key():
    msg = error_of("", "bogus = 1\n" + BASE)
    assert "bogus = 1" in msg and "unknown key" in msg
    assert "valid keys: name, description, topology" in msg


def test_bad_topology():
    msg = error_of("", "[topology]\nkind = 'ring'\nhosts = 2\n")
    assert "topology.kind = 'ring'" in msg and "valid choices: custom, fat_tree," in msg
    msg = error_of("", "[link]\nrate_gbps = 100\n")
    assert "topology" in msg and "missing" in msg
    msg = error_of("", "[topology]\nkind = 'custom'\ndevices = [{name = 'a', kind = 'host'}]\n"
                       "links = [{a = 'a', b = 'zz'}]\n")
    assert "topology.links[0]" in msg and "'zz'" in msg


def test_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_scenario_text("[topology\n", "x.toml")
    with pytest.raises(ConfigError, match="cannot read scenario file"):
        load_scenario(tmp_path / "nope.toml")
