"""Data checks against .npy files and Python functions, and `spin run --dump`, with 1 and 2
workers; load-time errors name the field, the value and what is valid."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spin.describe.checks import parse_dump
from spin.errors import ConfigError
from spin.scenario_file import load_scenario, run_loaded

ROOT = Path(__file__).resolve().parents[1]
N = 4096
SCENARIO = f"""
name = "max of two"
[topology]
kind = "pair"
[[program]]                   # not installed: shares the engine of the other kit tests
name = "max"
factory = "examples.max_reduce:max_reduce_program"
args = {{ n_elems = 4, n_contributors = 1 }}
[[memory]]
node = 0
addr = 0
dtype = "int32"
fill = "random"
count = {N}
seed = 1
[[memory]]
node = 1
addr = 0
dtype = "int32"
fill = "random"
count = {N}
seed = 2
[[host_program]]
node = 1
ops = [{{ op = "send", dst = 0, nbytes = {4 * N}, qp = 1, remote_addr = 65536 }}]
[[host_program]]
node = 0
ops = [{{ op = "wait_recv", qp = 1 }},
       {{ op = "reduce", dst_addr = 0, src_addr = 65536, count = {N}, dtype = "int32", \
operator = "max" }}]
[[check]]
node = 0
addr = 0
dtype = "int32"
expect = "npy"
file = "expected.npy"
[[check]]
node = "h0"
addr = 0
dtype = "int32"
count = {N}
expect = "function"
function = "checkfns:expected_max"
[[check]]
node = 0
addr = 0
dtype = "int32"
count = {N}
expect = "function"
function = "checkfns:is_max"
"""
CHECK_FUNCTIONS = """
import numpy as np

from spin.scenario_code import scenario_function


def _vec(seed):
    info = np.iinfo(np.int32)
    return np.random.default_rng(seed).integers(info.min, info.max, 4096, dtype=np.int32,
                                                endpoint=True)


@scenario_function
def expected_max(actual):
    return np.maximum(_vec(1), _vec(2))


@scenario_function
def is_max(actual):
    return bool((actual >= _vec(1)).all() and (actual >= _vec(2)).all())
"""


def _vec(seed: int) -> np.ndarray:
    info = np.iinfo(np.int32)
    return np.random.default_rng(seed).integers(info.min, info.max, N, dtype=np.int32,
                                                endpoint=True)


@pytest.fixture
def scenario_dir(tmp_path: Path) -> Path:
    (tmp_path / "max.toml").write_text(SCENARIO)
    (tmp_path / "checkfns.py").write_text(CHECK_FUNCTIONS)
    np.save(tmp_path / "expected.npy", np.maximum(_vec(1), _vec(2)))
    return tmp_path


@pytest.mark.parametrize("workers", [1, 2])
def test_npy_and_function_checks_pass(scenario_dir, workers):
    sc, opts = load_scenario(scenario_dir / "max.toml")
    assert opts.checks[0].count == N                  # taken from the .npy file
    run = run_loaded(sc, opts.with_workers(workers))
    assert run.checks_passed, run.check_lines
    assert [line.split(":")[0] for line in run.check_lines] == [
        "check ok check[0]", "check ok check[1]", "check ok check[2]"]
    assert "checkfns:is_max accepts" in run.check_lines[2]


def test_wrong_expectations_fail_with_the_element(scenario_dir):
    wrong = np.maximum(_vec(1), _vec(2))
    wrong[17] += 1
    np.save(scenario_dir / "expected.npy", wrong)
    (scenario_dir / "wrongfns.py").write_text(CHECK_FUNCTIONS.replace(">= _vec(2)", "< _vec(2)"))
    path = scenario_dir / "max.toml"
    path.write_text(SCENARIO.replace("checkfns:is_max", "wrongfns:is_max"))
    sc, opts = load_scenario(path)
    run = run_loaded(sc, replace(opts, checks=opts.checks[::2]))
    assert not run.checks_passed
    assert f"check FAILED check[0]: host 'h0' (node 0) addr 0: element 17 is {wrong[17] - 1}, expected " \
           f"{wrong[17]} (1 of {N} int32 elements differ) [expected.npy]" == run.check_lines[0]
    assert "wrongfns:is_max rejects" in run.check_lines[1]


def test_cli_dump_with_two_workers(scenario_dir):
    out = scenario_dir / "out" / "h0.npy"
    r = subprocess.run([sys.executable, "-m", "spin.cli", "run", str(scenario_dir / "max.toml"),
                        "--workers", "2", "--dump", f"h0:0:{N}:int32={out}",
                        "--dump", f"1:0x0:8:uint8={scenario_dir / 'h1.npy'}"],
                       capture_output=True, text=True, cwd=scenario_dir, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})   # examples.max_reduce
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"dumped host 'h0' (node 0) addr 0: {N} int32 elements to {out}" in r.stdout
    assert np.array_equal(np.load(out), np.maximum(_vec(1), _vec(2)))
    assert np.load(scenario_dir / "h1.npy").tobytes() == _vec(2).tobytes()[:8]


@pytest.mark.parametrize("change, words", [
    (('file = "expected.npy"', 'file = "missing.npy"'), ["check[0].file = 'missing.npy'",
                                                         "cannot read"]),
    (('dtype = "int32"\nexpect = "npy"', 'dtype = "int64"\nexpect = "npy"'),
     ["check[0].file", "holds int32, the check's dtype is int64"]),
    (('expect = "npy"\n', f'expect = "npy"\ncount = {N + 1}\n'), ["check[0].count = 4097",
                                                                   f"holds {N} elements"]),
    (('"checkfns:expected_max"', '"checkfns:nope"'), ["check[1].function = 'checkfns:nope'",
                                                      "has no function 'nope'"]),
    (('"checkfns:expected_max"', '"nomod:f"'), ["check[1].function", "cannot import module"]),
    (('expect = "npy"\nfile', 'expect = "values"\nfile'), ["expect = 'values' takes values",
                                                           "given: file"]),
    (('expect = "npy"', 'expect = "guess"'), ["check[0].expect = 'guess'", "'npy'", "'function'"]),
])
def test_load_errors_are_named(scenario_dir, change, words):
    path = scenario_dir / "max.toml"
    path.write_text(SCENARIO.replace(*change, 1))
    with pytest.raises(ConfigError) as exc:
        load_scenario(path)
    for w in words:
        assert w in str(exc.value)


@pytest.mark.parametrize("spec, words", [
    ("h0:0:4:int32", ["HOST:ADDR:LEN:DTYPE=FILE.npy"]),
    ("h9:0:4:int32=x.npy", ["HOST = 'h9'", "0..1", "h0, h1"]),
    ("0:zero:4:int32=x.npy", ["ADDR = 'zero'"]),
    ("0:0:4:int128=x.npy", ["DTYPE = 'int128'", "float64"]),
    ("0:0:1000000000:int32=x.npy", ["must lie within host memory"]),
])
def test_dump_spec_errors(spec, words):
    with pytest.raises(ConfigError) as exc:
        parse_dump(spec, ["h0", "h1"], 1 << 20)
    for w in words:
        assert w in str(exc.value)


NAN_SCENARIO = """
[topology]
kind = "pair"
[[memory]]                    # h0: a NaN, a value, -0.0, inf, then NaN payloads as raw bits
node = 0
addr = 0
dtype = "float32"
values = [nan, 1.5, -0.0, inf]
[[memory]]
node = 0
addr = 16
dtype = "uint32"
values = [0x7fc00001, 0xffc00000]
[[memory]]                    # h1: other NaN payloads at 1016, where nothing is sent
node = 1
addr = 1016
dtype = "uint32"
values = [0x7fc00000, 0x7fc00000]
[[host_program]]
node = 0
ops = [{ op = "send", dst = 1, nbytes = 24, qp = 1, remote_addr = 0 }]
[[host_program]]
node = 1
ops = [{ op = "wait_recv", qp = 1 }]
[[check]]                     # a copy is bytes: every NaN payload arrived as it left
node = 1
addr = 0
dtype = "float32"
count = 6
expect = "copy"
sources = [{ node = 0, addr = 0 }]
[[check]]                     # values: NaN matches any NaN, -0.0 equals 0.0
node = 1
addr = 0
dtype = "float32"
count = 6
expect = "values"
values = [nan, 1.5, 0.0, inf, nan, nan]
[[check]]                     # a copy with other NaN payloads is not a copy
node = 1
addr = 1016
dtype = "float32"
count = 2
expect = "copy"
sources = [{ node = 0, addr = 16 }]
"""


def test_nan_data_copies_by_bytes_and_matches_nan_values(tmp_path):
    path = tmp_path / "nan.toml"
    path.write_text(NAN_SCENARIO)
    sc, opts = load_scenario(path)
    run = run_loaded(sc, opts)
    assert [line.split(":")[0] for line in run.check_lines] == [
        "check ok check[0]", "check ok check[1]", "check FAILED check[2]"], run.check_lines
    assert run.check_lines[2] == ("check FAILED check[2]: host 'h1' (node 1) addr 1016: element 0 "
                                  "is nan, expected nan (2 of 2 float32 elements differ)")


def test_values_check_still_fails_on_a_nan_where_a_number_is_expected(tmp_path):
    path = tmp_path / "nan.toml"
    path.write_text(NAN_SCENARIO.replace("values = [nan, 1.5, 0.0", "values = [2.0, 1.5, 0.0"))
    sc, opts = load_scenario(path)
    run = run_loaded(sc, replace(opts, checks=opts.checks[1:2]))
    assert run.check_lines == ["check FAILED check[1]: host 'h1' (node 1) addr 0: element 0 is "
                               "nan, expected 2.0 (1 of 6 float32 elements differ)"]


def test_sum_without_sources_is_refused_at_load(tmp_path):
    path = tmp_path / "sum.toml"
    path.write_text(NAN_SCENARIO.split("[[check]]")[0] + '[[check]]\nnode = 1\naddr = 0\n'
                    'dtype = "float32"\ncount = 6\nexpect = "sum"\nsources = []\n')
    with pytest.raises(ConfigError) as exc:
        load_scenario(path)
    assert str(exc.value) == (f"{path}: check[0].sources = []: expect = 'sum' takes at least one "
                              "source region")
