"""The examples run end to end and produce the right results."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spin.scenario_file import load_scenario, run_loaded

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_first_handler_script():
    r = subprocess.run([sys.executable, str(EXAMPLES / "first_handler.py")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "messages counted by the NIC: 3" in r.stdout
    assert "bytes counted by the NIC:    12,288 B" in r.stdout
    assert "identical to what host 0 sent" in r.stdout
    assert r.stdout.strip().endswith("OK")


def test_pingpong_toml():
    sc, opts = load_scenario(EXAMPLES / "pingpong.toml")
    run = run_loaded(sc, opts)
    assert run.checks_passed and run.check_lines[0].startswith("check ok")
    res = run.result
    assert res.drops == {}
    pongs = [m for m in res.messages if m.src == 1]
    assert len(pongs) == 8 and all(m.bytes == 512 for m in pongs)
    pings = [m for m in res.messages if m.src == 0]
    assert all(m.handled_by_nic for m in pings)
    assert [h.cpu_busy_ps for h in res.hosts][1] == 0      # host 1's CPU never ran
    assert res.mark("done", 0) > 0


def test_reduce_toml_sum_is_exact():
    sc, opts = load_scenario(EXAMPLES / "reduce_8hosts.toml")
    run = run_loaded(sc, opts)
    assert run.checks_passed
    # independent of the file's own check: recompute the int32 sum from the seeds
    vecs = [np.random.default_rng(s).integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max,
                                              16384, dtype=np.int32, endpoint=True)
            for s in range(8)]
    expected = np.sum(np.stack(vecs), axis=0, dtype=np.int32)
    assert np.array_equal(opts.checks[0].expected, expected)
    res = run.result
    assert res.nics[0].handler_calls.payload == 7 * 64
    assert res.nics[0].dma_write_bytes == 65536 + 16  # the result and one event (CQE)


def test_first_handler_runs_identically_in_debug_mode():
    """--debug runs the same handlers as plain Python (for pdb) with the same results."""
    outs = []
    for flags in ([], ["--debug"]):
        r = subprocess.run([sys.executable, str(EXAMPLES / "first_handler.py"), *flags], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]


SCENARIO_FILES = sorted(p for p in EXAMPLES.rglob("*.toml") if p.parent.name != "endpoint")


def test_every_scenario_file_is_covered():
    """All example scenarios run below, except the endpoint fabric, which waits for an attached
    program and runs in tests/test_endpoint.py with one attached."""
    assert len(SCENARIO_FILES) + len(list((EXAMPLES / "endpoint").glob("*.toml"))) == \
        len(list(EXAMPLES.rglob("*.toml")))


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_scenario_file_finishes(path):
    """Every host program finishes (``require_finished`` raises naming each one that waits) and
    the file's checks pass."""
    sc, opts = load_scenario(path)
    run = run_loaded(sc, opts)
    run.result.require_finished()
    assert run.checks_passed
    assert run.result.messages


def test_cost_compare_example():
    """Topologies priced per bandwidth with a cost model of the script's own, measured at
    16 hosts (examples/topologies/cost_compare.py)."""
    r = subprocess.run([sys.executable, str(EXAMPLES / "topologies" / "cost_compare.py"),
                        "--measure-bytes", "1MiB"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "hamming_mesh" in r.stdout and "supernode" in r.stdout
    assert "fat tree / HammingMesh, cost per GB/s of allreduce:" in r.stdout
