"""A run that ends with host programs still waiting is not a success: the API says which hosts
wait for what, the CLI exits non-zero even with --quiet, and a missing mark is named."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spin.errors import ConfigError, RunIncompleteError
from spin.fabric import run_scenario
from spin.simulation import Scenario
from spin.topology import Topology

ROOT = Path(__file__).resolve().parents[1]
STUCK_TOML = """
[topology]
kind = "star"
hosts = 2
[[host_program]]
node = 0
ops = [{ op = "mark", label = "start" }, { op = "send", dst = 1, nbytes = 512, qp = 1 },
       { op = "wait_recv", qp = 2, count = 1 }, { op = "mark", label = "done" }]
[[host_program]]
node = 1
ops = [{ op = "wait_event", count = 1 }]
"""


def _stuck() -> Scenario:
    sc = Scenario(Topology.star(2))
    sc.host_program(0).mark("start").send(1, 512, qp=1).wait_recv(qp=2).mark("done")
    sc.host_program(1).wait_event(1)
    return sc


def _check_stuck(result) -> None:
    stuck = {h.node: h.waiting_for for h in result.unfinished_hosts()}
    assert set(stuck) == {0, 1}
    assert "wait_recv qp=2" in stuck[0] and "0 of 1 messages" in stuck[0]
    assert "wait_event" in stuck[1] and "0 of 1 host events" in stuck[1]
    with pytest.raises(RunIncompleteError, match=r"2 host program\(s\) did not finish.*host 'h0' "
                       r"\(node 0\) waits at op 2 \(wait_recv qp=2\).*host 'h1' \(node 1\) "
                       r"waits at op 0 \(wait_event\)"):
        result.require_finished()


def test_api_names_the_waiting_hosts():
    _check_stuck(_stuck().run())


def test_finished_run_passes():
    sc = Scenario(Topology.star(2))
    sc.host_program(0).send(1, 512, qp=1).mark("sent")
    result = sc.run()
    assert result.unfinished_hosts() == [] and result.require_finished() is result


def test_missing_mark_is_named():
    result = _stuck().run()
    with pytest.raises(ConfigError, match=r"label='finish' is not a mark of this run; marks: "
                       r"'done', 'start'"):
        result.mark("finish", 0)
    with pytest.raises(ConfigError, match=r"label='done': host 'h0' \(node 0\) never passed "
                       r"this mark; hosts that did: none"):
        result.mark("done", 0)
    assert result.mark("start", 0) == 0


@pytest.mark.slow
@pytest.mark.timeout(900)  # a cold engine compile on busy shared cores
def test_workers_report_the_same():
    _check_stuck(run_scenario(_stuck(), workers=2, timeout_s=120))


def _spin(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("spin")
    cmd = ([exe] if exe else [sys.executable, "-m", "spin.cli"]) + list(args)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


def test_cli_exits_non_zero_even_quiet(tmp_path):
    toml = tmp_path / "stuck.toml"
    toml.write_text(STUCK_TOML)
    r = _spin("run", str(toml), "--quiet")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("spin: error: 2 host program(s) did not finish"), r.stderr
    assert "host 'h0' (node 0) waits at op 2 (wait_recv qp=2)" in r.stderr
    stopped = _spin("run", str(toml), "--quiet", "--until-us", "1")
    assert stopped.returncode == 0, stopped.stderr  # stopped on purpose: not an error
