"""spin.testing and spin.results.compare: gains, assertions with the table, the pytest plugin's worker
parametrisation, run_both's cross-worker check, and the docs' example kept verbatim."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spin.runs as runs
import spin.testing as kit
from examples.max_reduce import max_reduce_program
from spin import ExecutionContext, Scenario, Topology
from spin.results.compare import Metrics, OffloadComparison
from spin.tools.demo import demo_table
from spin.errors import ConfigError, DeterminismError, OffloadAssertionError
from tests.kit_programs import KIT_PROGRAMS

ROOT = Path(__file__).resolve().parents[1]
BASE = Metrics(completion_ps=12_000_000, host_cpu_ps=9_000_000, pcie_bytes=4000,
               link_bytes=5000, hpu_busy_ps=0, drops=0)
OFF = Metrics(completion_ps=3_000_000, host_cpu_ps=3_000_000, pcie_bytes=1000,
              link_bytes=5000, hpu_busy_ps=700_000, drops=0)


def test_gains_are_baseline_over_offload():
    cmp = OffloadComparison(BASE, OFF, "toy")
    assert cmp.speedup == 4.0 and cmp.gain("host_cpu_ps") == 3.0 and cmp.gain("pcie_bytes") == 4.0
    assert cmp.gain("link_bytes") == 1.0 and cmp.gain("hpu_busy_ps") == 0.0
    assert cmp.gain("drops") == 1.0                       # 0 / 0: no change
    assert OffloadComparison.from_dict(cmp.to_dict()) == cmp
    cmp.assert_faster(at_least=4.0).assert_less_host_cpu(at_least=3.0).assert_less_pcie()
    cmp.assert_not_worse("link_bytes").assert_no_drops()


@pytest.mark.parametrize("check, words", [
    (lambda c: c.assert_faster(at_least=4.5), ["completion time by 4.50x", "12.000 µs",
                                               "3.000 µs", "gain 4.00x"]),
    (lambda c: c.assert_less_link_bytes(), ["link bytes", "5,000 B", "gain 1.00x"]),
    (lambda c: c.assert_not_worse("hpu_busy_ps"), ["raises HPU busy time", "0.700 µs"]),
])
def test_failed_assertion_prints_the_table(check, words):
    cmp = OffloadComparison(BASE, OFF, "toy workload")
    with pytest.raises(OffloadAssertionError) as exc:
        check(cmp)
    msg = str(exc.value)
    for w in words + [cmp.table(), "toy workload", "host baseline", "NIC offload"]:
        assert w in msg
    assert isinstance(exc.value, AssertionError)      # pytest shows it as a failed assertion


def test_slower_offload_fails_and_unknown_metric_is_named():
    cmp = OffloadComparison(OFF, BASE)
    with pytest.raises(OffloadAssertionError, match="gain 0.25x"):
        cmp.assert_faster()
    with pytest.raises(ConfigError, match="metric='cpu'; valid choices: completion_ps"):
        cmp.gain("cpu")
    with pytest.raises(ConfigError, match="at_least=0.5: a gain is >= 1.0"):
        cmp.assert_less_pcie(at_least=0.5)


def test_demo_table_is_the_comparison_table():
    demo = {"pingpong": {"baseline": {"check": "ok"}, "offload": {"check": "ok"},
                         "comparison": OffloadComparison(BASE, OFF, "a").to_dict()},
            "reduce": {"baseline": {"check": "ok"}, "offload": {"check": "ok"},
                       "comparison": OffloadComparison(OFF, BASE, "b").to_dict()}}
    text = demo_table(demo)
    assert OffloadComparison(BASE, OFF, "a").table() in text
    assert OffloadComparison(OFF, BASE, "b").table() in text


def _pair_reduce(offload: bool) -> Scenario:
    """Host 1 sends int32[4] to host 0, which ends with the max of both vectors at address 0."""
    sc = Scenario(Topology.pair(), engine_programs=KIT_PROGRAMS)
    sc.write_host_memory(0, 0, np.array([5, -7, 9, 0], np.int32))
    sc.write_host_memory(1, 0, np.array([6, -8, 1, 3], np.int32))
    sc.host_program(1).send(0, 16, qp=1, remote_addr=64)
    root = sc.host_program(0).mark("start")
    if offload:
        sc.install(ExecutionContext(0, max_reduce_program(4, 1), match_qp=1))
        root.wait_event()
    else:
        root.wait_recv(qp=1)
    root.reduce(0, 64, 4, "int32", op="max").mark("done")
    return sc


def test_runner_compares_and_reads_memory(spin_runner):
    cmp = spin_runner.compare(_pair_reduce(False), _pair_reduce(True), read=[(0, 0, 4, "int32")])
    for r in (cmp.baseline_result, cmp.offload_result):
        assert r.read(0, 0, 4, "int32").tolist() == [6, -7, 9, 3]
    assert cmp.offload.hpu_busy_ps > 0 == cmp.baseline.hpu_busy_ps
    cmp.assert_not_worse("host_cpu_ps").assert_not_worse("pcie_bytes")   # one message: even
    with pytest.raises(OffloadAssertionError):
        cmp.assert_faster()                            # the NIC adds its handler time


def test_run_both_agrees_and_reports_mismatches(monkeypatch):
    result = kit.run_both(_pair_reduce(True), 2, read=[(0, 0, 4, "int32")])
    assert result.read(0, 0, 4, "int32").tolist() == [6, -7, 9, 3]
    with pytest.raises(ConfigError, match="was not brought back"):
        result.read(1, 0, 4, "int32")
    real_run = kit.run

    def skewed(scenario, workers=1, **kw):             # a fabric that loses time with 2 workers
        r = real_run(scenario, 1, **kw)
        r.end_time_ps += workers - 1
        return r
    monkeypatch.setattr(runs, "run", skewed)           # run_both looks run up in spin.runs
    with pytest.raises(DeterminismError, match=r"1 and 2 workers differ in \['end_time_ps'\]"):
        kit.run_both(_pair_reduce(True), 2)


def test_missing_done_mark_is_named():
    result = kit.run(_pair_reduce(False))
    with pytest.raises(ConfigError, match=r"done='end'.*marks it reached: done, start"):
        Metrics.of(result, done="end", node=0)
    with pytest.raises(ConfigError, match=r"done='end': no host reached it \(marks of this "
                       r"run: done, start"):
        Metrics.of(result, done="end")


PLUGIN_TEST = """
def test_counts(spin_workers, spin_runner):
    assert spin_runner.workers == spin_workers
"""


def test_plugin_parametrises_over_worker_counts(tmp_path):
    (tmp_path / "test_counts.py").write_text(PLUGIN_TEST)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)]
    r = subprocess.run(cmd + ["--spin-workers=1,3", "-v"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_counts[1w] PASSED" in r.stdout and "test_counts[3w] PASSED" in r.stdout
    bad = subprocess.run(cmd + ["--spin-workers=two"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert bad.returncode != 0 and "--spin-workers='two'" in bad.stdout + bad.stderr


def test_docs_show_the_benefit_test_verbatim():
    """The offload-benefit tutorial includes the test file itself (a snippet, resolved when the
    docs are built), so what readers copy is what CI runs."""
    page = (ROOT / "docs" / "tutorials" / "offload-benefit-test.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert block.strip() == '--8<-- "tests/test_offload_benefit.py"'
    assert (ROOT / "tests" / "test_offload_benefit.py").read_text().startswith('"""A max-reduce')
