"""The port-selection schemes declare their ``st.dev`` columns next to their code (the
``*columns`` modules of ``switch_emulator.lb``, found by ``spin.scheme_parts``), and the
engine's ``DEV_LB`` is assembled from them at import; a clash or a module without
``DECLARES`` is named. A shipped scheme's new column joins the engine, so running one needs an
engine compile: these tests lay the tables out from a temporary schemes package instead."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spin.engine import layout as L
from spin.engine import state as S
from spin.scheme_parts import declaration_paths

ROOT = Path(__file__).resolve().parents[1]

_TOY = '''
from spin.engine.columns import Declares

DECLARES = Declares(owner="switch_emulator.lb.ecmp", dev=[("{name}", "a toy scheme's counter")])
'''

_LAYOUT = '''
import spin.scheme_parts as P
P.SCHEMES_PACKAGE = "toy_lb"
from spin.engine import state as S
from spin.engine import layout as L
import json
print(json.dumps([[c.owner for c in L.DEV_LB], S.D_SW_TOY_TURNS - S.D_SW_FLOWLETS,
                  sum(c.width for c in L.DEV.columns.values())]))
'''


def test_dev_lb_is_the_declared_parts_in_declaration_order():
    assert declaration_paths() == ("switch_emulator.lb.columns",
                                   "switch_emulator.lb.flowlet_columns")
    assert [c.owner for c in L.DEV_LB] == ["switch_emulator.lb", "switch_emulator.lb.flowlet"]
    names = [spec[0] for part in L.DEV_LB for spec in part.specs]
    assert names == ["SW_LB", "SW_SEED", "SW_RNG", "SW_FLOWLET_GAP_PS", "SW_FLOWLETS"]
    assert [getattr(S, f"D_{n}") for n in names] == list(range(S.D_SW_LB, S.D_SW_LB + 5))


def _schemes_package(tmp_path: Path, toy: str | None) -> Path:
    """A copy of the shipped schemes' declaration modules, plus ``toy_columns`` if given."""
    pkg = tmp_path / "toy_lb"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for path in declaration_paths():
        name = path.rsplit(".", 1)[1]
        (pkg / f"{name}.py").write_text((ROOT / "switch_emulator/lb" / f"{name}.py").read_text())
    if toy is not None:
        (pkg / "toy_columns.py").write_text(toy)
    return tmp_path


def _lay_out(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-c", _LAYOUT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_scheme_with_a_column_of_its_own_is_laid_out_after_the_others(tmp_path):
    _schemes_package(tmp_path, textwrap.dedent(_TOY).format(name="SW_TOY_TURNS"))
    proc = _lay_out(tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    owners, offset, cols = json.loads(proc.stdout.strip().splitlines()[-1])
    assert owners == ["switch_emulator.lb", "switch_emulator.lb.flowlet",
                      "switch_emulator.lb.ecmp"]
    used = sum(c.width for c in L.DEV.columns.values())   # st.dev's width rounds this up
    assert offset == 1 and cols == used + 1


@pytest.mark.parametrize("toy, message", [
    (textwrap.dedent(_TOY).format(name="SW_SEED"),
     "table 'dev': column 'SW_SEED' declared by switch_emulator.lb.ecmp is already declared by "
     "switch_emulator.lb"),
    ("X = 1\n", "port-selection schemes: declaration module 'toy_lb.toy_columns' defines no "
     "DECLARES"),
])
def test_a_bad_scheme_declaration_is_named_when_the_tables_are_laid_out(tmp_path, toy,
                                                                          message):
    _schemes_package(tmp_path, toy)
    proc = _lay_out(tmp_path)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"spin.errors.StateLayoutError: {message}"), proc.stderr[-2000:]
