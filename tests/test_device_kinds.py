"""Device kinds are declared once (``spin.engine.device_kinds``) and each fills its own devices:
the state builder groups devices by the kind the topology gives them, never by their place in
the device order, and a kind declared outside spin can be placed in a topology and run."""
from __future__ import annotations

import pytest

from spin.assembly.device_build import rows_by_kind
from spin.engine import state as S
from spin.engine.device_kinds import (DEVICE_KINDS, NIC, SWITCH, DeviceKind, check_kind,
                                      dev_groups)
from spin.errors import ConfigError, TopologyError
from spin.topology import Topology

SHARED_GROUPS = {"DEV_ENGINE", "DEV_HANDLERS"}   # the engine's and the handler model's


def test_each_kind_owns_its_column_groups_and_declares_real_counters():
    owners: dict[str, list[str]] = {}
    for kind in DEVICE_KINDS:
        check_kind(kind)
        for group in kind.columns:
            owners.setdefault(group, []).append(kind.name)
    assert set(owners) | SHARED_GROUPS == set(dev_groups())
    assert {g: o for g, o in owners.items() if len(o) != 1} == {}
    assert [k.code for k in DEVICE_KINDS] == [S.DEV_NIC, S.DEV_SWITCH]


def test_rows_are_grouped_by_kind_whatever_the_order():
    kinds = [SWITCH, NIC, SWITCH, NIC, NIC]
    rows = rows_by_kind(kinds)
    assert list(rows) == [SWITCH, NIC]
    assert rows[SWITCH].tolist() == [0, 2] and rows[NIC].tolist() == [1, 3, 4]


def test_a_topology_gives_each_device_its_kind():
    topo = Topology.star(3)
    assert topo.device_kinds() == [NIC, NIC, NIC, SWITCH]


@pytest.mark.parametrize("kind, message", [
    (DeviceKind("dpu", build="x:y", node=True), "runs_as = ''"),
    (DeviceKind("dpu", build="x:y", node=True, runs_as="optical"), "runs_as = 'optical'"),
    (DeviceKind("dpu", node=True, runs_as="nic"), "build = ''"),
    (DeviceKind("dpu", build="x:y", node=True, runs_as="nic", columns=("DEV_GPU",)),
     "column group 'DEV_GPU'"),
    (DeviceKind("dpu", build="x:y", node=True, runs_as="nic", counters=("FRAMES",)),
     "counter 'FRAMES'"),
])
def test_a_kind_the_engine_cannot_run_is_refused_by_name(kind, message):
    with pytest.raises(ConfigError, match="device kind 'dpu'.*" + message.replace("(", r"\(")):
        Topology().add_host("h0", kind=kind)


def test_a_switch_kind_cannot_be_a_host():
    with pytest.raises(TopologyError, match="host 'h0': kind = .*node=True"):
        Topology().add_host("h0", kind=SWITCH)
