"""Building apart from running: ``build(scenario)`` checks the scenario and lays out one worker's
engine as a frozen ``Built``; ``Simulation(built)`` only runs it, with the same result as
``Simulation(scenario)`` and ``spin.run``."""
from __future__ import annotations

import dataclasses

import pytest

import spin
from spin.assembly.built import Built, build
from spin.errors import ConfigError
from spin.runtime.simulation import Simulation


def _scenario() -> spin.Scenario:
    sc = spin.Scenario(spin.build_topology("star", hosts=3))
    sc.host_program("h0").mark("start").send("h1", 4096, qp=1)
    sc.host_program("h1").wait_recv(qp=1).mark("done")
    return sc


def test_build_then_run_gives_the_result_of_a_run():
    sc = _scenario()
    built = build(sc, quiet=True)
    assert isinstance(built, Built) and built.scenario is sc
    assert built.local == frozenset(range(4)) and built.standalone
    assert built.device_names == ("h0", "h1", "h2", "s0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.st = None
    sim = Simulation(built)
    assert sim.st is built.st and sim.port_of_link == built.port_of_link
    result = sim.run()
    assert result.mark("done", 1) > 0
    assert result.deterministic_digest() == spin.run(sc).deterministic_digest()
    assert result.deterministic_digest() == Simulation(sc, quiet=True).run().deterministic_digest()


def test_a_worker_owns_the_devices_it_was_built_for():
    built = build(_scenario(), {0, 3}, quiet=True)
    assert built.local == frozenset({0, 3}) and not built.standalone
    assert Simulation(built).local == {0, 3}


def test_build_settings_are_refused_with_a_built():
    with pytest.raises(ConfigError, match="settings of build"):
        Simulation(build(_scenario(), quiet=True), local_devices={0})


def test_a_bad_scenario_fails_at_build_before_any_engine_state():
    sc = _scenario()
    sc.host_program("h2").send("h0", 1 << 40, qp=1)     # far beyond the host's memory
    with pytest.raises(ConfigError, match=r"host 'h2' \(node 2\)"):
        build(sc, quiet=True)
