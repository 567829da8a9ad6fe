"""The ``spin`` parser is built lazily: the top level names the subcommands, and each subcommand
adds its options (whose choices come from registries that import Numba) only when used."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spin.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# Plain data the package reads when imported (the device kinds' records, from which
# ``spin.compiled_sources`` derives what keys Numba's cache); no compiled code.
ENGINE_DECLARATIONS = ("spin.engine", "spin.engine.device_kinds", "spin.engine.generated")


def test_top_level_parser_imports_no_numba_and_no_command_module():
    code = ("import sys, spin.cli\n"
            "parser = spin.cli.build_parser()\n"
            "parser.format_help()\n"
            f"print(sorted(m for m in sys.modules if m not in {ENGINE_DECLARATIONS!r} and ("
            "m.split('.')[0] in ('numba', 'llvmlite') "
            "or m.startswith(('spin.collectives', 'spin.training', 'spin.topologies', "
            "'spin.workloads', 'spin.engine')))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name in _subcommands(build_parser()):
        assert re.search(rf"^    {name}\s", text, re.MULTILINE), name


@pytest.mark.parametrize("command", list(_subcommands(build_parser())))
def test_each_subcommand_help_works_and_lists_its_options(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    complete = _subcommands(build_parser(complete=True))[command]
    options = [o for a in complete._actions for o in a.option_strings
               if a.help is not argparse.SUPPRESS]
    assert len(options) > 1, "a subcommand has options besides --help"
    for option in options:
        assert option in text, f"spin {command} --help does not list {option}"
    assert text == complete.format_help()   # built on demand or all at once: the same text


def test_options_are_added_once():
    parser = _subcommands(build_parser())["keys"]
    parser.format_usage()
    count = len(parser._actions)
    parser.format_help()
    parser.parse_args(["somewhere"])
    assert len(parser._actions) == count


def test_endpoint_modes_of_the_cli_are_the_endpoint_modes():
    from spin.cli import ENDPOINT_MODES
    from spin.endpoint import MODES
    assert ENDPOINT_MODES == MODES


def test_a_one_process_run_imports_no_zeromq(tmp_path):
    """`spin run` of a scenario without endpoints, on one worker, never starts ZeroMQ."""
    toml = tmp_path / "pair.toml"
    toml.write_text('[topology]\nkind = "pair"\n[[host_program]]\nnode = 0\n'
                    'ops = [{ op = "send", dst = 1, nbytes = 64, qp = 1 }]\n'
                    '[[host_program]]\nnode = 1\nops = [{ op = "wait_recv", qp = 1 }]\n')
    code = ("import sys, spin.cli\n"
            f"assert spin.cli.main(['run', {str(toml)!r}, '--quiet']) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'zmq' "
            "or m in ('spin.endpoint', 'spin.parallel.coordinator')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_every_name_of_spin_parallel_resolves():
    import spin.parallel
    for name in spin.parallel.__all__:
        assert getattr(spin.parallel, name) is not None, name
    with pytest.raises(AttributeError):
        spin.parallel.no_such_name


@pytest.mark.parametrize("expect_status", [0, 2])
def test_the_command_ends_with_its_status_output_and_exit_handlers(expect_status, tmp_path):
    """`spin` skips the interpreter's teardown, not its output, exit handlers or status."""
    toml = tmp_path / "pair.toml"
    toml.write_text('[topology]\nkind = "pair"\n[[host_program]]\nnode = 0\n'
                    'ops = [{ op = "send", dst = 1, nbytes = 64, qp = 1 }]\n'
                    '[[host_program]]\nnode = 1\nops = [{ op = "wait_recv", qp = 1 }]\n')
    scenario = str(toml) if expect_status == 0 else str(tmp_path / "missing.toml")
    code = ("import atexit, sys, spin.cli\n"
            "atexit.register(lambda: print('exit handler ran', flush=True))\n"
            f"sys.argv = ['spin', 'run', {scenario!r}]\n"
            "spin.cli.main()\n"
            "print('not reached')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, check=False)
    assert out.returncode == expect_status, out.stderr
    assert "not reached" not in out.stdout
    assert out.stdout.rstrip().endswith("exit handler ran")
    if expect_status == 0:
        assert "completion" in out.stdout.lower() or "done" in out.stdout   # the summary
    else:
        assert "spin: error:" in out.stderr
