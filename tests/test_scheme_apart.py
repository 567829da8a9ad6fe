"""Port-selection schemes written outside spin (``spin.port_selection``), compiled apart from the
engine: found by import path or entry point, they pick exactly the ports the shipped schemes
they copy pick (same FCTs, same events), keep per-switch memory, give the same results on 1 and
2 workers, never change the engine, and every way of getting one wrong is one line naming it.

The schemes live in a package this test writes to a temporary folder, as a user's would.
"""
from __future__ import annotations

import argparse
import re
import shutil

import sys
import textwrap
from dataclasses import replace

import pytest

from spin.caches import project_source_digest
from spin.config import SwitchConfig
from spin.errors import ConfigError, HandlerCompileError, HandlerError
from spin.fabric import run_scenario
from spin.loadbalancing.schemes import get_scheme
from spin.simulation import Simulation

from .test_loadbalancing import _finish_ps, _scenario

CLONES = '''
"""Copies of three shipped schemes, written against spin.port_selection."""
from spin.port_selection import PortScheme, flow_hash, next_random, port_load


def spray(view):
    return view.ports[next_random(view) % view.ports.shape[0]]


def hashed(view):
    return view.ports[flow_hash(view) % view.ports.shape[0]]


def least(view):
    n = view.ports.shape[0]
    start = next_random(view) % n
    best = view.ports[start]
    best_load = port_load(view, best)
    for i in range(1, n):
        p = view.ports[(start + i) % n]
        load = port_load(view, p)
        if load < best_load:
            best, best_load = p, load
    return best


SPRAY = PortScheme(name="spray_copy", select=spray, per_packet=True, summary="random spray")
HASHED = PortScheme(name="ecmp_copy", select=hashed, summary="per-flow hash")
LEAST = PortScheme(name="adaptive_copy", select=least, per_packet=True, summary="least loaded")
'''

ROUND_ROBIN = '''
"""Round robin per route group: the switch's memory holds each group's next index."""
from spin.port_selection import PortScheme


def next_port(view):
    entry = view.memory[view.group]
    i = entry[0]
    entry[0] = i + 1
    return view.ports[i % view.ports.shape[0]]


SCHEME = PortScheme(name="round_robin", select=next_port, per_packet=True,
                    table_entries=lambda n_route_groups: n_route_groups,
                    summary="each route group's ports in turn")
'''


@pytest.fixture(scope="module")
def user_package(tmp_path_factory):
    """A package ``userlb`` of schemes on sys.path (and on workers' PYTHONPATH)."""
    folder = tmp_path_factory.mktemp("schemes")
    package = folder / "userlb"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "clones.py").write_text(textwrap.dedent(CLONES))
    (package / "round_robin.py").write_text(textwrap.dedent(ROUND_ROBIN))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


def _write(folder, name: str, text: str) -> str:
    (folder / "userlb" / f"{name}.py").write_text(textwrap.dedent(text))
    return f"userlb.{name}"


def _with_scheme(sc, name: str):
    return replace(sc, switch=SwitchConfig.make(**{**sc.switch.model_dump(),
                                                    "load_balancing": name}))


@pytest.fixture(scope="module")
def scenario():
    return _scenario()


@pytest.mark.parametrize("shipped, copy", [("random_spray", "userlb.clones:SPRAY"),
                                           ("ecmp", "userlb.clones:HASHED"),
                                           ("adaptive", "userlb.clones:LEAST")])
def test_a_copy_compiled_apart_picks_the_shipped_schemes_ports(user_package, scenario, shipped,
                                                                copy):
    a = Simulation(_with_scheme(scenario, shipped)).run()
    b = Simulation(_with_scheme(scenario, copy)).run()
    assert _finish_ps(b) == _finish_ps(a)
    assert b.events == a.events and b.marks == a.marks
    assert b.messages == a.messages


def test_scheme_memory_per_switch_and_workers(user_package, scenario, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{user_package}:{':'.join(sys.path)}")
    sc = _with_scheme(scenario, "userlb.round_robin")
    one = run_scenario(sc, workers=1)
    two = run_scenario(sc, workers=2)
    assert one.drops == {} and len(one.messages) == 16 * 24
    assert _finish_ps(two) == _finish_ps(one) and two.marks == one.marks
    # round robin spreads the colliding permutation where ECMP piles flows on one link
    ecmp = Simulation(_with_scheme(scenario, "ecmp")).run()
    assert _finish_ps(one) < 0.75 * _finish_ps(ecmp)


def test_a_new_scheme_never_changes_the_engine(user_package, scenario):
    before = project_source_digest()
    engine = Simulation(_with_scheme(scenario, "ecmp")).engine.run_until
    compiled = len(engine.overloads)
    sim = Simulation(_with_scheme(scenario, _write(user_package, "first_port", '''
        from spin.port_selection import PortScheme

        def first(view):
            return view.ports[0]

        SCHEME = PortScheme(name="first_port", select=first, summary="the first port")
        ''')))
    assert sim.run().drops == {}
    assert project_source_digest() == before
    assert sim.engine.run_until is engine and len(engine.overloads) == compiled


def test_a_scheme_by_entry_point_and_in_the_study(user_package, scenario):
    dist = user_package / "userlb_dist-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: userlb-dist\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[spin.schemes]\nmy_spray = userlb.clones:SPRAY\n")
    assert SwitchConfig(load_balancing="my_spray").load_balancing == "my_spray"
    study = get_scheme("my_spray", "--schemes")
    assert study.per_packet and study.switch == {"load_balancing": "my_spray"}
    a = Simulation(_with_scheme(scenario, "random_spray")).run()
    b = Simulation(_with_scheme(scenario, "my_spray")).run()
    assert _finish_ps(b) == _finish_ps(a)


@pytest.mark.parametrize("name, message", [
    ("nosuch", "unknown port-selection scheme; valid choices: ecmp"),
    ("drll", "did you mean 'drill'"),
    ("userlb.absent", "no module 'userlb.absent' to import"),
    ("userlb.clones", "module 'userlb.clones' declares no SCHEME"),
    ("userlb.clones:spray", "userlb.clones.spray is function, not a spin.port_selection."
                            "PortScheme"),
    ("userlb.clones:1x", "unknown port-selection scheme"),
])
def test_a_name_that_is_no_scheme_is_one_line(user_package, name, message):
    with pytest.raises(ConfigError) as err:
        SwitchConfig.make(load_balancing=name)
    assert message in str(err.value) and "load_balancing" in str(err.value)


@pytest.mark.parametrize("declaration, what", [
    ("SCHEME = PortScheme(name='l', select=lambda view: view.ports[0], summary='l')", "<lambda>"),
    ("def outer():\n    def inner(view):\n        return view.ports[0]\n    return inner\n"
     "SCHEME = PortScheme(name='n', select=outer(), summary='n')", "outer.<locals>.inner"),
])
def test_a_select_its_module_does_not_name_is_one_line(user_package, declaration, what):
    """spin compiles select apart by module and name: a lambda or a nested function cannot be
    found that way (it once ended in an AttributeError traceback from the generated entry)."""
    ref = _write(user_package, f"unnamed_{abs(hash(what))}",
                 "from spin.port_selection import PortScheme\n" + declaration + "\n")
    with pytest.raises(ConfigError) as err:
        SwitchConfig.make(load_balancing=ref)
    assert f"select is {what} (" in str(err.value)
    assert "defined at the top level of its module" in str(err.value)


def test_an_entry_point_named_like_a_shipped_scheme_is_shadowed_and_says_so(user_package,
                                                                           capsys):
    from spin.loadbalancing.compare import run_lb_cli
    from switch_emulator.lb import registry
    dist = user_package / "userlb_clash-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: userlb-clash\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[spin.schemes]\necmp = userlb.clones:SPRAY\n")
    registry._warn_if_shadowed.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="entry point 'ecmp' .* is shadowed by the "
                                                 "shipped scheme 'ecmp'.*'userlb.clones:SPRAY'"):
            assert registry.find_scheme("ecmp") is registry.find_scheme("ecmp")
        assert run_lb_cli(argparse.Namespace(list=True)) == 0
        assert ("ecmp           (shadowed by the shipped scheme 'ecmp': run it as --schemes "
                "userlb.clones:SPRAY)") in capsys.readouterr().out
    finally:
        shutil.rmtree(dist)
        registry._warn_if_shadowed.cache_clear()


def test_a_module_that_fails_on_import_is_named(user_package):
    ref = _write(user_package, "broken", "raise RuntimeError('half written')\n")
    with pytest.raises(ConfigError, match="importing module 'userlb.broken' failed: "
                                          "RuntimeError: half written"):
        SwitchConfig.make(load_balancing=ref)



def test_a_scheme_named_with_no_identifier_is_refused(user_package):
    ref = _write(user_package, "bad_name", '''
        from spin.port_selection import PortScheme

        def first(view):
            return view.ports[0]

        SCHEME = PortScheme(name="bad name!", select=first, summary="first port")
    ''')
    with pytest.raises(ConfigError, match=re.escape(
            "userlb.bad_name.SCHEME.name = 'bad name!': a scheme name must be an identifier")):
        SwitchConfig.make(load_balancing=ref)

def test_a_port_outside_the_group_stops_the_run_naming_the_scheme(user_package, scenario):
    ref = _write(user_package, "wrong_port", '''
        from spin.port_selection import PortScheme

        def wrong(view):
            return view.n_ports + 3

        SCHEME = PortScheme(name="wrong", select=wrong, summary="a port of no group")
        ''')
    with pytest.raises(HandlerError) as err:
        Simulation(_with_scheme(scenario, ref)).run()
    text = str(err.value)
    assert f"port-selection scheme '{ref}' on switch" in text
    assert "which is not one of view.ports" in text and "\n" not in text


def test_a_failing_scheme_names_its_line(user_package, scenario):
    ref = _write(user_package, "off_end", '''
        from spin.port_selection import PortScheme

        def off_end(view):
            i = view.ports.shape[0]
            return view.ports[i]

        SCHEME = PortScheme(name="off_end", select=off_end, summary="reads past the group")
        ''')
    sc = _with_scheme(scenario, ref)
    # compiled: the line is found by replaying the run with the scheme as plain Python
    with pytest.raises(HandlerError, match=f"scheme '{ref}' .*IndexError.*off_end.py:6: "
                                           r"`return view.ports\[i\]` \(values: i=2\) "
                                           r"\(found by replaying"):
        Simulation(sc).run()
    debug = replace(sc, engine=sc.engine.model_copy(update={"debug": True}))
    with pytest.raises(HandlerError, match=r"off_end.py:6: `return view.ports\[i\]`"):
        Simulation(debug).run()


@pytest.mark.parametrize("body, message", [
    ('''
     import os
     import numba

     def escape(view):
         with numba.objmode():
             os.system("true")
         return view.ports[0]
     ''', "uses numba.objmode: a scheme runs"),
    ('''
     def escape(view, depth=0):
         if depth > 3:
             return view.ports[0]
         return escape(view, depth + 1)
     ''', "recursion"),
    ('''
     def escape(view):
         return 1.5
     ''', "does not compile"),
    ('''
     def escape(view):
         view.frame[0] = 0          # frames, ports and port rows are read-only to a scheme
         return view.ports[0]
     ''', "does not compile: .*readonly.*view.ports, view.port_rows, view.frame and "
          "module-level arrays .* are read-only to a scheme; its writable state is view.memory"),
    ('''
     def escape(view):
         raise ValueError("always")
     ''', "returns nothing on every path: does it always raise, or lack a return"),
])
def test_a_scheme_out_of_the_sandbox_or_untyped_is_refused(user_package, scenario, body,
                                                           message):
    name = f"bad_{abs(hash(body)) % 10**8}"
    ref = _write(user_package, name, textwrap.dedent(body) + textwrap.dedent('''
        from spin.port_selection import PortScheme
        SCHEME = PortScheme(name="bad", select=escape, summary="refused")
        '''))
    with pytest.raises(HandlerCompileError, match=message) as err:
        Simulation(_with_scheme(scenario, ref))
    assert f"scheme '{ref}'" in str(err.value)


@pytest.mark.parametrize("entries, message", [
    ("10**9", r"table_entries\(\d+\) = 1000000000; a scheme's memory is 1..4,194,304 entries"),
    ("'many'", r"table_entries\(\d+\) = 'many'"),
    ("1 // 0", r"table_entries\(\d+\) failed: ZeroDivisionError"),
])
def test_a_scheme_asking_for_too_much_memory_is_refused(user_package, scenario, entries,
                                                        message):
    ref = _write(user_package, f"memory_{abs(hash(entries)) % 10**8}", f'''
        from spin.port_selection import PortScheme

        def first(view):
            return view.ports[0]

        SCHEME = PortScheme(name="greedy", select=first, summary="asks for memory",
                            table_entries=lambda n_route_groups: {entries})
        ''')
    with pytest.raises(ConfigError, match=message):
        Simulation(_with_scheme(scenario, ref))


LOOPING_RUN = '''
import sys
from dataclasses import replace
sys.path.insert(0, {folder!r})
from spin.config import SwitchConfig
from spin.loadbalancing.compare import fabric_scenario
from spin.simulation import Simulation
sc = fabric_scenario("fat_tree", {{"k": 4}})
sc.host_program(0).send(15, 4096, qp=1)
sc = replace(sc, switch=SwitchConfig.make(load_balancing="userlb.forever"),
             engine=sc.engine.model_copy(update={{"handler_timeout_s": 1.0}}))
Simulation(sc, quiet=True).run()
'''


def test_a_scheme_that_never_answers_stops_the_run_naming_it(user_package, tmp_path):
    """The handlers' wall-clock watchdog covers schemes: native code cannot be interrupted,
    so the process ends with the scheme named (a multi-worker run then names the worker)."""
    import subprocess

    from spin.runtime.watchdog import EXIT_HANDLER_TIMEOUT
    _write(user_package, "forever", '''
        from spin.port_selection import PortScheme

        def forever(view):
            while view.memory[0, 0] >= 0:
                view.memory[0, 1] += 1
            return view.ports[0]

        SCHEME = PortScheme(name="forever", select=forever, summary="never answers")
        ''')
    script = tmp_path / "looping_scheme.py"
    script.write_text(LOOPING_RUN.format(folder=str(user_package)))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=600, cwd=str(tmp_path))
    assert r.returncode == EXIT_HANDLER_TIMEOUT, r.stderr[-2000:]
    assert "port-selection scheme 'userlb.forever' on switch" in r.stderr
    assert "did not return within EngineConfig.handler_timeout_s = 1 s" in r.stderr


@pytest.mark.parametrize("fields, message", [
    ({"per_packet": "no"}, "PortScheme(per_packet='no'): expected True or False"),
    ({"summary": 5}, "PortScheme(summary=5): expected a string"),
    ({"table_entries": 64}, "PortScheme(table_entries=64): expected a function"),
])
def test_a_scheme_declared_with_wrong_types_is_refused(fields, message):
    from spin.port_selection import PortScheme
    with pytest.raises(ConfigError, match=re.escape(message)):
        PortScheme(**{"name": "x", "select": _first_port, "summary": "x", **fields})


def _first_port(view):
    return view.ports[0]
