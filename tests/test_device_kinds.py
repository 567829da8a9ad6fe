"""Device kinds are declared once (``spin.engine.device_kinds``) and each fills its own devices:
the state builder groups devices by the kind the topology gives them, never by their place in
the device order, and a kind declared outside spin can be placed in a topology and run."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from spin.assembly.device_build import rows_by_kind
from spin.engine import state as S
from spin.engine.device_kinds import (DEVICE_KINDS, NIC, SWITCH, DeviceKind, check_kind,
                                      dev_groups)
from spin.errors import ConfigError, TopologyError
from spin.simulation import Scenario, Simulation
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
    assert [k.code for k in DEVICE_KINDS] == [S.DEV_NIC, S.DEV_SWITCH, S.DEV_BUMP]


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


# A smart NIC declared outside spin: it runs the NIC's engine code, but its own build gives it
# twice the HPUs and an on-package PCIe link (a tenth of the latency), and it reads back its own
# counters.
SMART_NIC = textwrap.dedent('''
    from nic_emulator.build import build_nics
    from spin.engine import state as S
    from spin.engine.device_kinds import DeviceKind

    PCIE_LATENCY_PS = 25_000


    def build_smart_nics(st, rows, build):
        build_nics(st, rows, build)
        st.dev[rows, S.D_HPUS] *= 2
        st.dev[rows, S.D_PCIE_LAT_PS] = PCIE_LATENCY_PS


    KIND = DeviceKind("smart_nic", build="toy_device_kinds.smart_nic:build_smart_nics",
                      columns=("DEV_NIC", "DEV_HOST", "DEV_TRANSPORT"),
                      counters=("NIC_DMA_W_BYTES", "NIC_DMA_R_BYTES", "HOST_EVENT_COUNT"),
                      node=True, runs_as="nic")
''')


@pytest.fixture
def smart_nic(tmp_path, monkeypatch):
    package = tmp_path / "toy_device_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "smart_nic.py").write_text(SMART_NIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_device_kinds.smart_nic as module
    yield module
    for name in ("toy_device_kinds.smart_nic", "toy_device_kinds"):
        sys.modules.pop(name, None)


def _run(receiver_kind):
    topo = Topology()
    topo.add_switch("s0")
    for name, kind in (("h0", NIC), ("h1", receiver_kind)):
        topo.add_host(name, kind=kind)
        topo.add_link(name, "s0")
    sc = Scenario(topo)
    sc.host_program("h0").send("h1", 65_536, qp=1)
    sc.host_program("h1").wait_recv(qp=1).mark("received")
    sim = Simulation(sc)
    return sim, sim.run()


def test_a_toy_kind_declared_outside_spin_runs_end_to_end(smart_nic):
    kind = smart_nic.KIND
    sim, result = _run(kind)
    names = sim.scenario.topology.device_names()
    smart, plain = names.index("h1"), names.index("h0")
    assert sim.scenario.topology.device_kinds()[smart] is kind
    # its devices run the NIC's code, from its own build's columns
    assert int(sim.st.dev[smart, S.D_KIND]) == S.DEV_NIC
    assert int(sim.st.dev[smart, S.D_PCIE_LAT_PS]) == smart_nic.PCIE_LATENCY_PS
    assert int(sim.st.dev[smart, S.D_HPUS]) == 2 * int(sim.st.dev[plain, S.D_HPUS])
    # its counters, as it declared them; the plain NIC's are the NIC kind's
    counters = sim.device_counters("h1")
    assert list(counters) == list(kind.counters)
    assert counters["NIC_DMA_W_BYTES"] >= 65_536 and counters["NIC_DMA_R_BYTES"] == 0
    assert list(sim.device_counters("h0")) == list(NIC.counters)
    assert sim.device_counters("h0")["NIC_DMA_R_BYTES"] == 65_536
    assert list(sim.device_counters("s0")) == list(SWITCH.counters)
    # the results see it as a node: its NIC stats and its mark
    assert [n.name for n in result.nics] == ["h0", "h1"]
    # the same traffic as on a plain NIC, but its own build changed when it landed
    plain_sim, plain_result = _run(NIC)
    plain_counters = plain_sim.device_counters("h1")
    assert {c: plain_counters[c] for c in counters} == counters
    assert result.mark("received", 1) < plain_result.mark("received", 1)


def test_device_counters_name_an_unknown_device(smart_nic):
    sim, _ = _run(smart_nic.KIND)
    with pytest.raises(ConfigError, match="device = 'h9': not a device of the topology"):
        sim.device_counters("h9")
