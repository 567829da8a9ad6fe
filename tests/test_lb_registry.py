"""The registry of port-selection schemes (``switch_emulator.lb.registry``): every scheme module
declares itself once and everything else derives from it (codes, config validation, the study's
list, ``spin lb``, the engine's generated dispatch). Random packet spraying, added as one file
(``switch_emulator/lb/random_spray.py``), runs on a fat tree, spreads packets over every uplink
and gives identical results with 1 and 2 workers.
"""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pydantic
import pytest

import switch_emulator.lb as lb_package
from spin.config import SwitchConfig
from spin.errors import ConfigError
from switch_emulator.lb import registry

from .test_cli import spin

ROOT = Path(__file__).resolve().parent.parent


def _declared() -> dict[str, str]:
    """Scheme name -> module, read from the package's modules one by one."""
    out = {}
    for info in pkgutil.iter_modules(lb_package.__path__):
        module = importlib.import_module(f"switch_emulator.lb.{info.name}")
        scheme = getattr(module, "SCHEME", None)
        if scheme is not None:
            assert scheme.name not in out, f"{scheme.name} declared twice"
            out[scheme.name] = module.__name__
    return out


def test_registry_lists_exactly_the_modules_schemes():
    schemes = registry.port_schemes()
    names = [s.name for s in schemes]
    declared = _declared()
    assert sorted(names) == sorted(declared)
    assert len(set(names)) == len(names)
    assert {"ecmp", "flowlet", "adaptive", "drill", "random_spray"} <= set(names)
    assert names[0] == "ecmp" and names[1:] == sorted(names[1:])   # ecmp keeps code 0
    assert [registry.scheme_code(n) for n in names] == list(range(len(names)))
    for s in schemes:
        fn = getattr(s.select, "py_func", s.select)
        assert fn.__module__ == declared[s.name]
    assert registry.table_entries(["ecmp", "random_spray"], 7) == 1
    assert registry.table_entries(["drill"], 7) == 7
    assert registry.table_entries(["flowlet", "drill"], 7) >= 4096


def test_study_cli_and_configs_derive_from_the_registry():
    from spin.loadbalancing import get_scheme, scheme_names
    names = registry.scheme_names()
    assert scheme_names()[:len(names)] == list(names)
    assert get_scheme("random_spray").switch == {"load_balancing": "random_spray"}
    assert get_scheme("random_spray").per_packet and not get_scheme("ecmp").per_packet
    for n in names:
        assert SwitchConfig(load_balancing=n).load_balancing == n
    r = spin("lb", "--list")
    assert r.returncode == 0, r.stderr
    assert [line.split()[0] for line in r.stdout.splitlines()] == scheme_names()


def test_a_bad_scheme_names_the_field_and_the_choices():
    choices = ", ".join(registry.scheme_names())
    with pytest.raises(pydantic.ValidationError, match=f"valid choices: {choices}"):
        SwitchConfig(load_balancing="nope")
    with pytest.raises(ConfigError) as e:
        SwitchConfig.make(load_balancing="nope")
    assert f"SwitchConfig.load_balancing = 'nope': unknown port-selection scheme; valid " \
           f"choices: {choices}" in str(e.value)
    from spin.loadbalancing.compare import fabric_scenario
    sc = fabric_scenario("fat_tree", {"k": 4})
    with pytest.raises(ConfigError, match=f"load_balancing scheme = 'nope'.*{choices}"):
        sc.load_balancing("nope", sc.topology.switches[0])


def test_discovery_rejects_a_name_declared_twice(tmp_path, monkeypatch):
    pkg = tmp_path / "twice_lb"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    body = textwrap.dedent("""
        from switch_emulator.lb.ecmp import ecmp_port
        from switch_emulator.lb.registry import PortScheme
        SCHEME = PortScheme(name={name!r}, select=ecmp_port, summary="")
        """)
    (pkg / "a.py").write_text(body.format(name="ecmp"))
    (pkg / "b.py").write_text(body.format(name="same"))
    (pkg / "c.py").write_text(body.format(name="same"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'same' is declared twice: by twice_lb.b and twice_lb.c"):
        registry.discover("twice_lb")


def test_the_dispatch_is_generated_from_the_registry(monkeypatch):
    """One static branch per scheme in the engine module; a new scheme changes its name."""
    from spin.engine.codegen import engine_module_source
    from switch_emulator.routing import dispatch_source
    name, source = engine_module_source()
    assert "def select_port(" in source and "def routed_port(" in source
    schemes = registry.port_schemes()
    for code, s in enumerate(schemes[:-1]):
        assert f"    if lb == {code}:\n        return _lb_{s.name}(" in source
    assert f"    return _lb_{schemes[-1].name}(st, dev, slot, group" in source
    extra = registry.PortScheme(name="zz_extra", select=schemes[0].select, summary="")
    monkeypatch.setattr(registry, "port_schemes", lambda: (*schemes, extra))
    assert "_lb_zz_extra(" in dispatch_source()
    other, _ = engine_module_source.__wrapped__()
    assert other != name


def test_spin_does_not_import_switch_emulator():
    """Only the schemes' declaration modules (their st.dev columns, laid out when the engine's
    tables are) and their packages are loaded, never a scheme's code or the registry."""
    code = ("import sys, spin, spin.config, spin.loadbalancing, spin.tools.scenario_schema, spin.cli;"
            "spin.cli.build_parser(complete=True);"
            "from spin.scheme_parts import declaration_paths;"
            "d = set(declaration_paths());"
            "d |= {p.rsplit('.', i)[0] for p in d for i in range(1, p.count('.') + 1)};"
            "print([m for m in sys.modules if m.startswith('switch_emulator') and m not in d])")
    out = subprocess.run([sys.executable, "-c", code], check=False,
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def sprayed():
    from spin.loadbalancing import with_scheme
    from spin.runs import run_both

    from .test_loadbalancing import _scenario
    sc = with_scheme(_scenario(), "random_spray")
    return sc, run_both(sc, 2, timeout_s=900)      # identical with 1 and 2 workers


def test_random_spray_spreads_over_every_uplink(sprayed):
    from spin.loadbalancing import fabric_figures

    from .test_loadbalancing import MESSAGES, _finish_ps
    sc, r = sprayed
    assert r.drops == {} and len(r.messages) == 16 * MESSAGES
    _finish_ps(r)
    topo = sc.topology
    level = {"edge": 0, "agg": 1, "core": 2}
    up = [link for link in r.links if link.from_device in topo.switches
          and link.to_device in topo.switches
          and level[topo.switch_role(link.to_device)] > level[topo.switch_role(link.from_device)]]
    assert len(up) == 32                  # k = 4: 8 edges x 2 + 8 aggs x 2
    assert all(link.tx_bytes > 0 for link in up), [(l.from_device, l.to_device) for l in up
                                                     if l.tx_bytes == 0]
    assert fabric_figures(r).imbalance < 2.0


def test_a_scheme_naming_no_switch_applies_to_every_switch_and_says_so():
    """``Scenario.load_balancing(scheme)`` without switch names used to change nothing: ECMP
    and spraying gave the same completion time. It now sets every switch, with a warning."""
    from spin.simulation import Simulation

    from .test_loadbalancing import _finish_ps, _scenario
    finish = {}
    for scheme in ("ecmp", "random_spray"):
        sc = _scenario()
        n = len(sc.topology.switches)
        with pytest.warns(UserWarning, match=rf"load_balancing\('{scheme}'\) names no switch: "
                                             rf"it applies to all {n} switches"):
            sc.load_balancing(scheme)
        assert sc.switch_load_balancing == dict.fromkeys(sc.topology.switches, scheme)
        finish[scheme] = _finish_ps(Simulation(sc).run())
    assert finish["random_spray"] != finish["ecmp"], finish


def test_setters_that_would_change_nothing_fail_in_one_line():
    from spin.loadbalancing.compare import fabric_scenario
    from spin.simulation import Scenario
    from spin.topologies import build_topology
    with pytest.raises(ConfigError, match=r"load_balancing\('drill'\): the topology has no "
                                          r"switches"):
        Scenario(build_topology("pair")).load_balancing("drill")
    sc = fabric_scenario("fat_tree", {"k": 4})
    edge = sc.topology.switches[0]
    with pytest.raises(ConfigError, match=r"'p0e9' is not a switch; switches: .*\(did you mean "
                                          r"'p0e[01]'\?\)"):
        sc.load_balancing("drill", "p0e9")
    host = sc.topology.hosts[0]
    with pytest.raises(ConfigError, match="no port field given; valid: "):
        sc.configure_port(edge, host)
    with pytest.raises(ConfigError, match=r"'ecn_treshold_bytes' is not a port field; valid: "
                                          r".*\(did you mean 'ecn_threshold_bytes'\?\)"):
        sc.configure_port(edge, host, ecn_treshold_bytes=1000)
    with pytest.raises(ConfigError, match="reshape at_ns=5.0: no link pairs given"):
        sc.reshape(5.0, [])
    assert sc.switch_load_balancing == {} and sc.port_overrides == {} and sc.faults == []
