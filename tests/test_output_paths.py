"""`spin run`'s outputs never overwrite its scenario file or each other."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spin.describe.limits import check_distinct_outputs
from spin.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_an_output_onto_the_scenario_file_is_refused_and_the_file_kept(tmp_path) -> None:
    scenario = tmp_path / "pp.toml"
    shutil.copy(ROOT / "examples" / "pingpong.toml", scenario)
    before = scenario.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "spin", "run", str(scenario), "--json",
                           str(scenario)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert f"--json {scenario}: is also the scenario file" in proc.stderr
    assert scenario.read_bytes() == before


def test_two_outputs_to_one_file_are_refused(tmp_path) -> None:
    out = str(tmp_path / "out.json")
    with pytest.raises(ConfigError, match=r"--trace .*out.json: is also --json .*out.json"):
        check_distinct_outputs({"the scenario file": "a.toml"},
                               [("--json", out), ("--trace", out)])
    with pytest.raises(ConfigError, match=r"--dump .*: is also --json"):     # another spelling
        check_distinct_outputs({}, [("--json", out), ("--dump", str(tmp_path / "." / "out.json"))])
    check_distinct_outputs({"the scenario file": "a.toml"},
                           [("--json", out), ("--trace", str(tmp_path / "trace.json"))])


def test_a_dump_is_written_at_exactly_its_name_and_whole(tmp_path) -> None:
    import numpy as np
    target = tmp_path / "region.bin"           # no .npy: numpy's own save would add one
    proc = subprocess.run([sys.executable, "-m", "spin", "run", str(ROOT / "examples" /
                           "pingpong.toml"), "--dump", f"h0:0:16:uint8={target}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"to {target}" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["region.bin"]   # no .npy, no .part
    assert np.load(target).shape == (16,)
