"""A handler that does not compile gets one short error naming it, its file and line, and a hint
where one exists; not Numba's kilobytes of trace through generated engine files. The error is
the same in one process, with workers, and from the command line."""
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spin.errors import HandlerCompileError
from spin.fabric import run_scenario
from spin.handler import ExecutionContext
from spin.simulation import Scenario
from spin.topology import Topology
from tests import compile_error_handlers as bad

ROOT = Path(__file__).resolve().parents[1]
SOURCE = inspect.getsourcefile(bad)
CASES = {  # mistake -> (handler, words the message must contain)
    "allocate": ("allocating_payload", ["np.zeros", ("handlers cannot allocate arrays: keep "
                                                     "state in handler memory")]),
    "typo": ("misspelt_payload", ["pkt_lenght", "NameError"]),
    "type": ("mistyped_completion", ["setitem", "completion handler", "array(int64, 1d, C)"]),
    "copy": ("copying_header", ["pkt.copy()", "header handler", "allocates an array",
                                "handlers cannot allocate arrays"]),
    "no_return": ("forgetful_payload", ["returns nothing (a missing return)", "sPIN code"]),
    # ctx is the handler's own context, not the engine state: the frame pool is out of reach
    "engine": ("engine_reaching_payload", ["'pool' of ctx", "spin_* calls"]),
}


def _line(fn_name: str) -> int:
    lines, first = inspect.getsourcelines(getattr(bad, fn_name))
    return first + next(i for i, text in enumerate(lines) if "# MISTAKE" in text)


def _scenario(mistake: str) -> Scenario:
    sc = Scenario(Topology.star(2))
    sc.install(ExecutionContext(1, bad.program(mistake), match_qp=1))
    sc.host_program(0).send(1, 3000, qp=1)
    return sc


def _check(err: HandlerCompileError, mistake: str) -> None:
    fn_name, words = CASES[mistake]
    text = str(err)
    assert len(text) < 600 and "\n" not in text, text
    assert f"{fn_name!r}" in text and f"program 'bad_{mistake}'" in text
    assert f"{SOURCE}:{_line(fn_name)}" in text, text
    for w in words:
        assert w in text, (w, text)
    assert "spin_engine_" not in text and "nopython" not in text
    assert err.__cause__ is None and err.__suppress_context__  # no Numba trace chained


@pytest.mark.parametrize("mistake", sorted(CASES))
def test_one_process(mistake):
    with pytest.raises(HandlerCompileError) as info:
        _scenario(mistake).run()
    _check(info.value, mistake)


def test_the_broken_handler_is_named_not_its_neighbour():
    sc = Scenario(Topology.star(2))
    sc.install(ExecutionContext(1, bad.mixed_program(), match_qp=1))
    sc.host_program(0).send(1, 3000, qp=1)
    with pytest.raises(HandlerCompileError, match=r"^payload handler 'misspelt_payload' of "
                       r"program 'mixed' does not compile"):
        sc.run()


@pytest.mark.slow
@pytest.mark.timeout(900)  # a cold engine compile on busy shared cores
def test_same_error_with_workers():
    with pytest.raises(HandlerCompileError) as one:
        run_scenario(_scenario("allocate"), workers=1)
    with pytest.raises(HandlerCompileError) as two:
        run_scenario(_scenario("allocate"), workers=2, timeout_s=120)
    _check(two.value, "allocate")
    assert str(two.value) == str(one.value)


def test_cli_prints_one_line(tmp_path):
    toml = tmp_path / "bad.toml"
    toml.write_text('[topology]\nkind = "star"\nhosts = 2\n'
                    '[[program]]\nname = "p"\nfactory = "tests.compile_error_handlers:program"\n'
                    'args = { mistake = "typo" }\n'
                    '[[context]]\nnode = 1\nprogram = "p"\n'
                    '[[host_program]]\nnode = 0\nops = [{ op = "send", dst = 1, nbytes = 64 }]\n')
    exe = shutil.which("spin")
    cmd = ([exe] if exe else [sys.executable, "-m", "spin.cli"]) + ["run", str(toml), "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spin: error: payload handler "), r.stderr
    assert f"{SOURCE}:{_line('misspelt_payload')}" in lines[0]
