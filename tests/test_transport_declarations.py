"""Transports own their state: each declares its columns, counters and parameters next to its
code (``spin.engine.columns.Declares`` in a declaration module its registration names), the
engine's tables are assembled from the registry and checked at import, and each transport
validates its own ``[nic.transport.<kind>]`` table.

The last test adds a transport from outside spin — a package in a temporary folder, registered
by an entry point of group ``spin.transports`` — with a connection column, a counter and a
parameter of its own, and runs a scenario with it end to end in a fresh process (which
compiles an engine with the extra transport once, in a private cache)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spin.config import NicConfig, TransportConfig
from spin.engine import layout as L
from spin.engine.columns import Columns, Declares, Table
from spin.errors import ConfigError, StateLayoutError
from spin.transports import SHARED_PARTS, TRANSPORTS, declarations, transport_params

ROOT = Path(__file__).resolve().parents[1]


# --- the layout assembled from the registry ----------------------------------------------------

def test_transport_tables_are_the_registered_parts_in_registration_order():
    parts = declarations()
    assert parts == L.TRANSPORT_PARTS
    assert [d.owner for d in parts] == [
        "nic_emulator.transports.connections", "nic_emulator.entropy",
        "nic_emulator.transports.rc", "nic_emulator.congestion",
        "nic_emulator.transports.ue", "nic_emulator.nscc"]
    for table, name in ((L.CONN, "conn"), (L.NT, "ntr"), (L.TRP, "trp")):
        want = [spec[0] for d in parts for spec in getattr(d, name)]
        assert list(table.columns) == want, table.name
    # the per-NIC transport columns sit in st.dev between the host's and the switch's
    dev = list(L.DEV.columns)
    i = dev.index("TRANSPORT")
    assert dev[i:i + 5] == ["TRANSPORT", "ENTROPY", "TX_NOWORK", "RTX_PENDING", "NTR"]


def test_every_part_fills_exactly_its_own_parameters():
    class Env:
        mtu, host_rate_gbps = 4096, 400
    tc = TransportConfig(kind="ue")
    filled: list[str] = []
    for part in L.TRANSPORT_PARTS:
        if part.fill is not None:
            values = part.fill(tc, Env)
            assert sorted(values) == sorted(s[0] for s in part.trp), part.owner
            assert all(type(v) is int for v in values.values()), part.owner
            filled += values
    assert sorted(filled) == sorted(L.TRP.columns)


def test_a_column_declared_twice_names_both_owners():
    a = Declares("nic_emulator.transports.rc", conn=[("RATE", "one")])
    b = Declares("nic_emulator.transports.ue", conn=[("RATE", "the same name")])
    with pytest.raises(StateLayoutError, match=r"column 'RATE' declared by "
                       r"nic_emulator.transports.ue is already declared by "
                       r"nic_emulator.transports.rc"):
        Table("conn", "C_", "CONN_COLS", [a.columns("conn"), b.columns("conn")])


def test_an_owner_that_names_no_module_is_refused():
    with pytest.raises(StateLayoutError, match=r"columns from SPEED on are declared by "
                       r"'nic_emulator.transports.fast', which names no importable module"):
        Table("conn", "C_", "CONN_COLS", [Columns("nic_emulator.transports.fast",
                                                  [("SPEED", "x")])])


def test_parameters_without_a_fill_are_refused():
    with pytest.raises(StateLayoutError, match="declares parameters .'GAIN'. but no fill"):
        Declares("nic_emulator.transports.rc", trp=[("GAIN", "x")])


# --- [nic.transport.<kind>] tables -------------------------------------------------------------

def test_a_kind_table_sets_the_flat_attributes_of_the_transport_in_use():
    tc = NicConfig.make(transport={"kind": "rc", "rc": {"rto_us": 300.0, "dcqcn_ai_mbps": 80}}
                        ).transport
    assert (tc.rto_us, tc.dcqcn_ai_mbps) == (300.0, 80)
    assert tc == TransportConfig(kind="rc", rto_us=300.0, dcqcn_ai_mbps=80)
    assert tc.table("rc").rto_us == 300.0 and tc.table("none") is None
    # another kind's table is checked but does not apply
    tc = TransportConfig(kind="ue", rc={"rto_us": 300.0}, ue={"window_bytes": 8192})
    assert (tc.rto_us, tc.window_bytes) == (500.0, 8192)
    assert TransportConfig(**tc.model_dump()) == tc


@pytest.mark.parametrize("table, message", [
    ({"kind": "rc", "rc": {"window_bytes": 8192}},
     "nic.transport.rc.window_bytes = 8192: a key of [nic.transport.ue], not of "
     "[nic.transport.rc] (a flat [nic.transport] key too); valid keys of [nic.transport.rc]: "
     "ack_every_packets, rto_us, cnp_interval_us, dcqcn_g_shift"),
    ({"kind": "ue", "ue": {"base_rtt": 8}},
     "nic.transport.ue.base_rtt = 8: unknown key (did you mean 'base_rtt_us'?); valid keys of "
     "[nic.transport.ue]: ack_every_packets"),
    ({"kind": "rc", "rc": {"entropy": "spray"}},
     "nic.transport.rc.entropy = 'spray': a [nic.transport] key, not one of "
     "[nic.transport.rc]"),
    ({"kind": "ue", "ue": {"max_window_factor": 0}},
     "nic.transport.ue.max_window_factor = 0: Input should be greater than or equal to 1"),
    ({"kind": "rc", "rto_us": 100.0, "rc": {"rto_us": 300.0}},
     "nic.transport.rc.rto_us = 300.0: also given as nic.transport.rto_us = 100.0; give it "
     "once"),
    ({"none": {"rto_us": 1.0}}, "nic.transport.none.rto_us = 1.0: a key of [nic.transport.rc], "
     "not of [nic.transport.none] (a flat [nic.transport] key too); valid keys of "
     "[nic.transport.none]: none"),
])
def test_a_bad_kind_table_is_one_line_naming_key_value_and_valid_keys(table, message):
    with pytest.raises(ConfigError) as info:
        NicConfig.make(transport=table)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_the_flat_keys_are_the_built_in_transports_keys():
    """A built-in transport's table takes its flat keys, with the same defaults and types, so
    a key means the same in both places."""
    flat = TransportConfig.model_fields
    for t in TRANSPORTS:
        model = transport_params(t.name)
        for key, field in (model.model_fields.items() if model else ()):
            assert key in flat, (t.name, key)
            assert (field.default, field.annotation) == (flat[key].default,
                                                         flat[key].annotation), (t.name, key)
            assert repr(field.metadata) == repr(flat[key].metadata), (t.name, key)


def test_a_scenario_file_takes_kind_tables(tmp_path: Path):
    from spin.scenario_file import load_scenario
    path = tmp_path / "rc.toml"
    path.write_text(textwrap.dedent("""
        [topology]
        kind = "pair"

        [nic.transport]
        kind = "rc"

        [nic.transport.rc]
        rto_us = 250.0
        dcqcn_timer_us = 40.0
    """))
    tc = load_scenario(path)[0].nic.transport
    assert (tc.kind, tc.rto_us, tc.dcqcn_timer_us) == ("rc", 250.0, 40.0)


# --- a transport from outside spin --------------------------------------------------------------

_DECLARES = '''
"""The toy transport's registration and what it owns (imported when spin lays out its tables)."""
from pydantic import BaseModel, ConfigDict, Field

from spin.engine.columns import Declares
from spin.transports import TransportOption

TRANSPORT = TransportOption("toy", "open loop that counts its turns", "spin_toy.transport",
                            ("spin_toy.declares",))


class ToyParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    stamp: int = Field(7, ge=0)


PARAMS = ToyParams
DECLARES = Declares(
    owner="spin_toy.transport",
    conn=[("TOY_STAMP", "the stamp parameter plus the sending NIC")],
    ntr=[("TOY_TURNS", "transmit turns taken")],
    trp=[("TOY_STAMP", "the stamp")],
    fill=lambda tc, env: {"TOY_STAMP": tc.table("toy").stamp},
)
'''

_TRANSPORT = '''
"""Open loop, plus a counter and a connection column of its own."""
from nic_emulator.transports import open_loop as base
from spin.engine import state as S
from spin.jit import njit

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


@njit(_nrt=False)
def tx_step(st, dev, now):
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.dev[dev, S.D_NTR + S.NT_TOY_TURNS] += 1
        st.conn[dev, S.C_TOY_STAMP] = st.sc[S.SC_TRP + S.TRP_TOY_STAMP] + dev
    base.tx_step(st, dev, now)
'''

_RUN = '''
import json, sys
from spin.engine import state as S
from spin.scenario_file import load_scenario
from spin.simulation import Simulation

sc, _ = load_scenario(sys.argv[1])
sim = Simulation(sc)
result = sim.run()
view = S.state_view(sim.st)
print(json.dumps({
    "kinds": [int(sim.st.dev[d, S.D_TRANSPORT]) for d in range(2)],
    "turns": [view.transport_counters(d).toy_turns for d in range(2)],
    "stamps": [int(sim.st.conn[d, S.C_TOY_STAMP]) for d in range(2)],
    "param": view.transport_params().toy_stamp,
    "delivered": sorted((m.src, m.dst, m.bytes) for m in result.messages),
    "finished": all(h.finished for h in result.hosts),
}))
'''

_SCENARIO = '''
[topology]
kind = "pair"

[engine]
mtu_bytes = 1024

[nic.transport]
kind = "toy"

[nic.transport.toy]
stamp = 1000

[[host_program]]
node = 0
ops = [{op = "send", dst = 1, nbytes = 4096, qp = 1}, {op = "wait_recv", qp = 1, count = 1}]

[[host_program]]
node = 1
ops = [{op = "send", dst = 0, nbytes = 2048, qp = 1}, {op = "wait_recv", qp = 1, count = 1}]
'''


def _toy_package(tmp_path: Path, declares: str = _DECLARES,
                 entry: str = "spin_toy.declares:TRANSPORT") -> Path:
    pkg = tmp_path / "spin_toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "declares.py").write_text(declares)
    (pkg / "transport.py").write_text(_TRANSPORT)
    dist = tmp_path / "spin_toy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spin-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[spin.transports]\ntoy = {entry}\n")
    return tmp_path


def _python(tmp_path: Path, code: str, *args: str, timeout: int = 60):
    env = {**os.environ, "SPIN_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    env.pop("NUMBA_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("change, message", [
    (("spin_toy.declares\",)", "spin_toy.declaration\",)"),
     "transport 'toy': declaration module 'spin_toy.declaration' is missing"),
    (("(\"TOY_STAMP\", \"the stamp parameter", "(\"RATE\", \"the stamp parameter"),
     "table 'conn': column 'RATE' declared by spin_toy.transport is already declared by "
     "nic_emulator.congestion"),
    (("owner=\"spin_toy.transport\"", "owner=\"spin_toy.transprot\""),
     "table 'trp': columns from TOY_STAMP on are declared by 'spin_toy.transprot', which names "
     "no importable module"),
])
def test_a_bad_declaration_is_named_when_the_engine_tables_are_laid_out(tmp_path, change,
                                                                         message):
    _toy_package(tmp_path, _DECLARES.replace(*change))
    proc = _python(tmp_path, "import spin.engine.state")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"spin.errors.StateLayoutError: {message}"), proc.stderr[-2000:]


@pytest.mark.timeout(1800)  # a cold compile of the engine and device code, in a private cache
def test_a_transport_from_a_package_of_its_own_runs_with_its_column_counter_and_parameter(
        tmp_path: Path):
    _toy_package(tmp_path)
    (tmp_path / "toy.toml").write_text(_SCENARIO)
    proc = _python(tmp_path, _RUN, str(tmp_path / "toy.toml"), timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    toy = len(TRANSPORTS)   # the toy comes after spin's own transports
    assert got["kinds"] == [toy, toy]
    assert got["param"] == 1000
    assert got["turns"] == [4, 2]            # one turn per 1 KiB packet sent
    assert got["stamps"] == [1000, 1001]     # its parameter, written by its own code
    assert got["delivered"] == [[0, 1, 4096], [1, 0, 2048]]
    assert got["finished"] is True


def test_the_guide_lists_every_transports_keys():
    """docs/guides/transports.md's table of keys is each transport's PARAMS."""
    text = (ROOT / "docs/guides/transports.md").read_text()
    for t in TRANSPORTS.names():
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| `[nic.transport.{t}]` |"))
        model = transport_params(t)
        listed = [k.strip(" `") for k in row.split("|")[2].split(",")]
        assert listed == (list(model.model_fields) if model else ["none"]), t


def test_entry_points_are_read_only_where_some_package_names_the_group(tmp_path, monkeypatch):
    """A start skips importlib.metadata when no metadata folder on sys.path names the group;
    a folder that does, or a zip it cannot look into, sends it to importlib.metadata."""
    from spin.caches import TRANSPORT_ENTRY_POINTS, _may_publish
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    assert not _may_publish(TRANSPORT_ENTRY_POINTS)
    assert _may_publish("console_scripts")
    _toy_package(tmp_path)
    assert _may_publish(TRANSPORT_ENTRY_POINTS)
    zipped = tmp_path / "bundle.zip"
    zipped.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert _may_publish(TRANSPORT_ENTRY_POINTS)
