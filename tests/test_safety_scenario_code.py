"""A scenario file calls only functions declared for it (issue 18, item 1): anything else is
refused, before it is called, with one line naming the file, the field and the rule."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from spin.errors import ConfigError
from spin.scenario_file import load_scenario

HEAD = '[topology]\nkind = "pair"\n'

TRAP = """
import pathlib

from spin.scenario_code import program_factory, scenario_function


def undeclared_program(path):
    pathlib.Path(path).write_text("ran")


def undeclared_op(dst, src):
    pathlib.Path(dst.__class__.__name__ + ".ran").write_text("ran")
    return dst


@program_factory
def raising_program():
    raise RuntimeError("table size must be a power of two")


@scenario_function
def declared_op(dst, src):
    return dst + src
"""


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path))
    for w in words:
        assert w in msg, msg
    return msg


def _scenario(tmp_path: Path, body: str) -> Path:
    (tmp_path / "trap.py").write_text(TRAP)
    path = tmp_path / "s.toml"
    path.write_text(HEAD + textwrap.dedent(body))
    return path


def test_os_system_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = _scenario(tmp_path, f"""
        [[program]]
        name = "p"
        factory = "os:system"
        args = {{ command = "touch {marker}" }}
    """)
    _refused(path, "program[0].factory = 'os:system'", "refused without calling it",
             "@spin.program_factory", "spin.program_factories")
    assert not marker.exists()


def test_undeclared_function_next_to_the_file_is_not_called(tmp_path):
    marker = tmp_path / "ran"
    path = _scenario(tmp_path, f"""
        [[program]]
        name = "p"
        factory = "trap:undeclared_program"
        args = {{ path = "{marker}" }}
    """)
    _refused(path, "program[0].factory = 'trap:undeclared_program'",
             "declared in 'trap': raising_program")
    assert not marker.exists()


def test_a_scenario_function_is_not_a_program_factory(tmp_path):
    path = _scenario(tmp_path, '[[program]]\nname = "p"\nfactory = "trap:declared_op"\n')
    _refused(path, "program[0].factory", "@spin.program_factory")


def test_a_factory_that_raises_is_one_line(tmp_path):
    path = _scenario(tmp_path, '[[program]]\nname = "p"\nfactory = "trap:raising_program"\n')
    _refused(path, "program[0].factory = 'trap:raising_program'",
             "RuntimeError: table size must be a power of two")


def test_undeclared_check_function_is_refused(tmp_path):
    path = _scenario(tmp_path, """
        [[check]]
        node = 1
        addr = 0
        dtype = "int32"
        count = 4
        expect = "function"
        function = "os:getcwd"
    """)
    _refused(path, "check[0].function = 'os:getcwd'", "@spin.scenario_function")


def test_reduce_operator_must_be_declared(tmp_path):
    ops = ('{ op = "reduce", dst_addr = 0, src_addr = 64, count = 4, dtype = "float64", '
           'function = "trap:%s", ps_per_byte = 1.0 }')
    refused = _scenario(tmp_path, f"[[host_program]]\nnode = 0\nops = [{ops % 'undeclared_op'}]\n")
    _refused(refused, "trap:undeclared_op", "@spin.scenario_function")
    assert not list(tmp_path.glob("*.ran"))
    accepted = _scenario(tmp_path, f"[[host_program]]\nnode = 0\nops = [{ops % 'declared_op'}]\n")
    sc, _ = load_scenario(accepted)
    assert sc.host_programs[0].ops


def test_entry_point_of_an_installed_package_is_declared(tmp_path, monkeypatch):
    """A package may publish a factory without decorating it (the decorator would tie it to
    spin): an entry point of group spin.program_factories naming exactly that function."""
    (tmp_path / "published.py").write_text(textwrap.dedent("""
        import numpy as np
        from handlers.ping_pong import pong_payload
        from spin.handler import HandlerProgram

        def pong(reply_qp):
            return HandlerProgram("published_pong", payload=pong_payload,
                                  memory=np.array([reply_qp], dtype=np.int64))

        def other(reply_qp):
            raise AssertionError("never called")
    """))
    dist = tmp_path / "published-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: published\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[spin.program_factories]\npong = published:pong\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "s.toml"
    path.write_text(HEAD + '[[program]]\nname = "p"\nfactory = "published:pong"\n'
                    'args = { reply_qp = 2 }\n')
    sc, _ = load_scenario(path)
    assert [p.name for p in sc.engine_programs] == ["published_pong"]
    path.write_text(HEAD + '[[program]]\nname = "p"\nfactory = "published:other"\n'
                    'args = { reply_qp = 2 }\n')
    _refused(path, "program[0].factory = 'published:other'", "refused without calling it")


def test_every_shipped_factory_is_declared():
    """Every handler-program factory the project ships can be named by a scenario file."""
    import importlib
    import inspect

    root = Path(__file__).resolve().parents[1]
    missing = []
    for f in sorted((root / "handlers").glob("*.py")) + [root / "examples" / "max_reduce.py"]:
        module = importlib.import_module(f"{f.parent.name}.{f.stem}")
        for name, fn in vars(module).items():
            if (inspect.isfunction(fn) and fn.__module__ == module.__name__
                    and name.endswith("_program")
                    and not getattr(fn, "__spin_program_factory__", False)):
                missing.append(f"{module.__name__}:{name}")
    assert missing == []


def test_a_module_slow_to_import_says_what_spin_waits_for(tmp_path, monkeypatch, capsys):
    from spin import scenario_code
    (tmp_path / "slow_factory.py").write_text(textwrap.dedent("""
        import time
        from spin.scenario_code import program_factory
        time.sleep(0.5)

        @program_factory
        def prog():
            return None
    """))
    monkeypatch.setattr(scenario_code, "SLOW_IMPORT_NOTICE_S", 0.05)
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = scenario_code.resolve("slow_factory:prog", scenario_code.FACTORY, tmp_path)
    assert fn.__name__ == "prog"
    assert "still importing module 'slow_factory' after 0.05 s" in capsys.readouterr().err
