"""Host-program reductions: every MPI operator on every dtype equals numpy exactly, is charged
``HostConfig.reduce_ps_per_byte`` per input byte, and a custom function its declared cost."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spin.errors import ConfigError
from spin.scenario_code import scenario_function
from spin.fabric import run_scenario
from spin.describe.checks import Dump
from spin.tools.scenario_file import load_scenario, load_scenario_text, run_loaded
from spin.simulation import Scenario
from spin.topology import Topology
from tests.kit_programs import KIT_PROGRAMS

N = 1000
OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply,
       "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}
CASES = [(op, dt) for op in OPS for dt in ("int32", "int64", "float32", "float64")
         if not (op in ("band", "bor", "bxor") and dt.startswith("float"))]
SLOT = 2 * 8 * N           # bytes per case: dst then src


@scenario_function
def hypot_op(dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """A custom element-wise operator (module-level, so worker processes can import it)."""
    return np.hypot(dst, src)


def _operands(dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        a, b = (rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True) for _ in "ab")
    else:
        a, b = (rng.standard_normal(N).astype(dtype) * 1e3 for _ in "ab")
        a[:3] = [np.nan, 1.0, np.inf]        # NaN and inf follow numpy
        b[:3] = [2.0, np.nan, -np.inf]
    return a, b


def _scenario() -> Scenario:
    sc = Scenario(Topology.pair(), engine_programs=KIT_PROGRAMS)
    host = sc.host_program(0)
    for k, (op, dt) in enumerate(CASES):
        a, b = _operands(dt, k)
        sc.write_host_memory(0, k * SLOT, a)
        sc.write_host_memory(0, k * SLOT + 8 * N, b)
        host.reduce(k * SLOT, k * SLOT + 8 * N, N, dt, op=op)
    return sc


def test_every_operator_matches_numpy_and_pays_per_byte():
    sc = _scenario()
    regions = tuple((0, k * SLOT, N * np.dtype(dt).itemsize) for k, (_, dt) in enumerate(CASES))
    result = run_scenario(sc, regions=regions)
    for k, (op, dt) in enumerate(CASES):
        a, b = _operands(dt, k)
        with np.errstate(all="ignore"):
            expected = OPS[op](a, b).astype(dt)
        got = np.frombuffer(result.memory_regions[regions[k]], dt)
        assert got.tobytes() == expected.tobytes(), (op, dt)     # bit-exact, NaN included
    per_byte = sc.host.reduce_ps_per_byte
    expected_ps = sum(math.ceil(N * np.dtype(dt).itemsize * per_byte) for _, dt in CASES)
    assert result.host(0).cpu_busy_ps == expected_ps


def test_custom_function_runs_in_python_at_its_declared_cost():
    sc = Scenario(Topology.pair(), engine_programs=KIT_PROGRAMS)
    a, b = _operands("float64", 99)
    sc.write_host_memory(0, 0, a)
    sc.write_host_memory(0, 8 * N, b)
    sc.host_program(0).mark("start").reduce(0, 8 * N, N, "float64", op=hypot_op,
                                           ps_per_byte=500.0).mark("done")
    result = run_scenario(sc, regions=((0, 0, 8 * N),))
    got = np.frombuffer(result.memory_regions[(0, 0, 8 * N)], np.float64)
    assert got.tobytes() == np.hypot(a, b).tobytes()
    cost = 8 * N * 500                                   # ps_per_byte x input bytes
    assert result.host(0).cpu_busy_ps == cost
    assert result.mark("done", 0) - result.mark("start", 0) == cost


@pytest.mark.parametrize("kw, words", [
    (dict(op="avg"), ["op='avg'", "sum, max, min, prod, band, bor, bxor"]),
    (dict(dtype="float32", op="bxor"), ["op='bxor'", "int32 or int64"]),
    (dict(dtype="int16"), ["dtype='int16'", "int32, int64, float32, float64"]),
    (dict(op="max", ps_per_byte=3.0), ["ps_per_byte", "HostConfig.reduce_ps_per_byte"]),
    (dict(op=hypot_op), ["needs ps_per_byte >= 0"]),
    (dict(op=lambda d, s: d, ps_per_byte=1.0), ["module-level function"]),
])
def test_invalid_reduce_is_named(kw, words):
    sc = Scenario(Topology.pair())
    args = dict(dtype="int32") | kw
    with pytest.raises(ConfigError) as exc:
        sc.host_program(0).reduce(0, 4096, 16, **args)
    for w in words:
        assert w in str(exc.value)


def test_toml_reduce_operator():
    text = """
[topology]
kind = "pair"
[[host_program]]
node = 0
ops = [{ op = "reduce", dst_addr = 0, src_addr = 64, count = 4, dtype = "int64", operator = "min" }]
"""
    sc, _ = load_scenario_text(text)
    from nic_emulator.host_reduce import REDUCE_OPS
    assert sc.host_programs[0].ops[0][4:6] == [1, REDUCE_OPS["min"]]
    with pytest.raises(ConfigError, match=r"operator = 'mean'.*'max'"):
        load_scenario_text(text.replace('"min"', '"mean"'))


MYOPS = """
import numpy as np

from spin.scenario_code import scenario_function

@scenario_function

def hypot(dst, src):
    return np.hypot(dst, src)
"""


def test_toml_reduce_function_next_to_the_scenario(tmp_path):
    (tmp_path / "myops.py").write_text(MYOPS)
    (tmp_path / "hyp.toml").write_text(f"""
[topology]
kind = "pair"
[[program]]
name = "max"
factory = "examples.max_reduce:max_reduce_program"
args = {{ n_elems = 4, n_contributors = 1 }}
[[memory]]
node = 0
addr = 0
dtype = "float64"
fill = "random"
count = {2 * N}
[[host_program]]
node = 0
ops = [
  {{ op = "reduce", dst_addr = 0, src_addr = {8 * N}, count = {N}, dtype = "float64", \
function = "myops:hypot", ps_per_byte = 250.0 }},
]
""")
    sc, opts = load_scenario(tmp_path / "hyp.toml")
    out = tmp_path / "out.npy"
    run = run_loaded(sc, opts, dumps=(Dump(0, 0, N, "float64", out),))
    start = np.random.default_rng(0).standard_normal(2 * N)     # the [[memory]] fill
    assert np.load(out).tobytes() == np.hypot(start[:N], start[N:]).tobytes()
    assert run.result.host(0).cpu_busy_ps == 8 * N * 250


@pytest.mark.parametrize("extra, words", [
    ('function = "myops:hypot", operator = "max", ps_per_byte = 1.0',
     ["operator = 'max' and function = 'myops:hypot'", "one of them"]),
    ('function = "nomod:f", ps_per_byte = 1.0', ["function = 'nomod:f'", "cannot import"]),
    ('function = "tests.test_host_reduce:hypot_op"', ["needs ps_per_byte >= 0"]),
    ('operator = "max", ps_per_byte = 1.0', ["ps_per_byte is for functions"]),
])
def test_toml_reduce_function_errors(extra, words):
    text = ("[topology]\nkind = \"pair\"\n[[host_program]]\nnode = 0\nops = [{ op = \"reduce\", "
            f"dst_addr = 0, src_addr = 64, count = 4, dtype = \"float64\", {extra} }}]\n")
    with pytest.raises(ConfigError) as exc:
        load_scenario_text(text, "inline.toml")
    assert "host_program[0].ops[0]" in str(exc.value)
    for w in words:
        assert w in str(exc.value)


def test_schema_lists_the_engine_operators():
    import typing

    from nic_emulator.host_reduce import REDUCE_OPS
    from spin.tools.scenario_schema import ReduceOp
    assert typing.get_args(ReduceOp.model_fields["operator"].annotation) == tuple(REDUCE_OPS)


def test_custom_and_builtin_reduce_agree_across_worker_counts():
    from spin.testing import run_both
    sc = Scenario(Topology.pair(), engine_programs=KIT_PROGRAMS)
    for node in (0, 1):
        a, b = _operands("float64", node)
        sc.write_host_memory(node, 0, a)
        sc.write_host_memory(node, 8 * N, b)
    sc.host_program(0).reduce(0, 8 * N, N, "float64", op=hypot_op, ps_per_byte=500.0)
    sc.host_program(1).reduce(0, 8 * N, N, "float64", op="max")
    result = run_both(sc, 2, read=[(0, 0, N, "float64"), (1, 0, N, "float64")])
    for node, fn in ((0, np.hypot), (1, np.maximum)):
        expected = fn(*_operands("float64", node))
        assert result.read(node, 0, N, "float64").tobytes() == expected.tobytes()
