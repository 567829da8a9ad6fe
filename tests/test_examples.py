"""The examples run end to end and produce the right results."""
from __future__ import annotations

import json
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


def test_allreduce_notebook_runs_and_reads_dataframes():
    """examples/allreduce_study.ipynb executes top to bottom (its own asserts included) and
    shows the study as DataFrames: the measurements, the speedups and a run's link table."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
    path = EXAMPLES / "allreduce_study.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "the notebook is stored without outputs"
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    frames = [o["data"]["text/html"] for o in outputs
              if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    assert len(frames) == 5                  # measurements, speedups, links, switches, hosts
    assert "rabenseifner" in frames[0] and "correct" in frames[0]
    assert "tx_bytes" in frames[2] and "handler_calls_payload" in frames[3]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream"
                      and o.name == "stdout")
    assert "16384 B per rank: fastest switch" in printed
    assert "65536 B per rank: fastest switch" in printed


TRAINING = EXAMPLES / "training"


def test_training_trace_generator_writes_the_committed_files(tmp_path):
    """examples/training/dp_step/ is what make_dp_step.py writes (byte for byte)."""
    r = subprocess.run([sys.executable, str(TRAINING / "make_dp_step.py"), str(tmp_path)],
                       check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    committed = sorted(p.name for p in (TRAINING / "dp_step").iterdir())
    assert committed == sorted(p.name for p in tmp_path.iterdir())
    for name in committed:
        assert (tmp_path / name).read_bytes() == (TRAINING / "dp_step" / name).read_bytes()


@pytest.mark.parametrize("trace, algo, collectives", [
    (TRAINING / "dp_step" / "dp_step", "switch", 4),
    (TRAINING / "pipeline_4stages.goal", "ring", 0),
], ids=["chakra-dp-step", "goal-pipeline"])
def test_spin_train_examples(tmp_path, trace, algo, collectives):
    out, timeline = tmp_path / "step.json", tmp_path / "step.trace.json"
    r = subprocess.run([sys.executable, "-m", "spin.cli", "train", str(trace), "--algo", algo,
                        "--json", str(out), "--trace", str(timeline)], check=False, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "rank" in r.stdout and "exposed_comm_us" in r.stdout
    report = json.loads(out.read_text())
    assert len(report["ranks"]) == 4 and len(report["collectives"]) == collectives
    assert all(c["algo"] in (algo, "ring") for c in report["collectives"])
    assert all(r["step_us"] > r["compute_us"] > 0 for r in report["ranks"])
    events = json.loads(timeline.read_text())["traceEvents"]
    assert {e["tid"] for e in events if e["ph"] == "X"} == {0, 1, 2, 3}


def test_cost_compare_example():
    """Topologies priced per bandwidth with a cost model of the script's own, measured at
    16 hosts (examples/topologies/cost_compare.py)."""
    r = subprocess.run([sys.executable, str(EXAMPLES / "topologies" / "cost_compare.py"),
                        "--measure-bytes", "1MiB"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "hamming_mesh" in r.stdout and "supernode" in r.stdout
    assert "fat tree / HammingMesh, cost per GB/s of allreduce:" in r.stdout


def test_paced_transport_script():
    """The transport of one's own (compiled apart) keeps an incast from overflowing the
    switch: open loop loses three of four messages, paced delivers all four."""
    r = subprocess.run([sys.executable, str(EXAMPLES / "transports" / "paced.py")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-3].startswith("none   messages delivered 1 of 4, frames dropped 178,")
    assert lines[-2].startswith("paced  messages delivered 4 of 4, frames dropped 0,")
    assert lines[-1] == "paced: turns held back per NIC [0, 62, 62, 62, 62]"
    assert "compiling the engine" not in r.stderr      # compiled apart
