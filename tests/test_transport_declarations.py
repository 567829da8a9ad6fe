"""Transports own their state: each declares its columns, counters and parameters next to its
code (``spin.engine.columns.Declares`` in a declaration module its registration names), the
engine's tables are assembled from the registry and checked at import, and each transport
validates its own ``[nic.transport.<kind>]`` table.
(A transport from outside spin keeps its state in tables of its own:
tests/test_transport_apart.py.)"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from spin.config import NicConfig, TransportConfig
from spin.engine import layout as L
from spin.engine.columns import Columns, Declares, Table
from spin.errors import ConfigError, StateLayoutError
from spin.transports import SHIPPED, declarations, transport_params

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
    for t in SHIPPED:
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


def test_the_guide_lists_every_transports_keys():
    """docs/guides/transports.md's table of keys is each of spin's own transports' PARAMS (an
    installed transport from outside spin is not spin's to document)."""
    text = (ROOT / "docs/guides/transports.md").read_text()
    for t in (t.name for t in SHIPPED):
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| `[nic.transport.{t}]` |"))
        model = transport_params(t)
        listed = [k.strip(" `") for k in row.split("|")[2].split(",")]
        assert listed == (list(model.model_fields) if model else ["none"]), t
