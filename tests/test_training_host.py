"""Host presets of ``spin train``: an accelerator trace is replayed on the gpu host by
default, exactly as ``spin allreduce --host-preset gpu`` runs the same ring; ``cpu`` and
``gpu`` can be chosen in the CLI and the Python API."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from spin.cli import main
from spin.config import HostConfig
from spin.errors import ConfigError
from spin.trace_formats import read_chakra, read_goal
from spin.training import ReplayConfig, replay

ROOT = Path(__file__).resolve().parents[1]
ALLREDUCE_8 = Path(__file__).parent / "data" / "chakra-microbenchmarks" / "all_reduce" / \
    "8npus_1MB" / "all_reduce"
MIB = 1 << 20


@pytest.mark.parametrize("flags, line", [
    ([], "host preset: gpu (default for an accelerator trace; --host-preset cpu|gpu|network "
         "to change)"),
    (["--host-preset", "gpu"], "host preset: gpu (--host-preset)")])
def test_gpu_trace_matches_spin_allreduce_gpu_exactly(tmp_path, capsys, flags, line):
    """ASTRA-sim's 8-NPU 1 MB all-reduce: ``spin train`` picks the gpu host (by default or
    told) and its ring takes the very virtual time ``spin allreduce --host-preset gpu``
    gives for 8 hosts and 1 MiB; the Python API's preset gives it too."""
    train_json, allreduce_json = tmp_path / "train.json", tmp_path / "allreduce.json"
    assert main(["train", str(ALLREDUCE_8), *flags, "--json", str(train_json)]) == 0
    out = capsys.readouterr().out
    assert [x for x in out.splitlines() if x.startswith("host preset:")] == [line]
    assert main(["allreduce", "--hosts", "8", "--size", "1MiB", "--algo", "ring",
                 "--host-preset", "gpu", "--json", str(allreduce_json)]) == 0
    train = json.loads(train_json.read_text())
    (row,) = json.loads(allreduce_json.read_text())
    (call,) = train["collectives"]
    assert train["host"] == "gpu"
    assert (call["type"], call["bytes"], call["algo"]) == ("all_reduce", MIB, "ring")
    assert round(call["time_us"] * 1e6) == row["time_ps"]
    assert train["step_us"] == call["time_us"]
    api = replay(read_chakra(ALLREDUCE_8), config=ReplayConfig(host_preset="gpu"))
    assert api.host == "gpu" and round(api.collectives[0].time_us * 1e6) == row["time_ps"]


def test_cpu_preset_is_spin_allreduce_cpu(capsys):
    """``--host-preset cpu`` is the MPI rank on a core, as ``spin allreduce`` (its default)."""
    from spin.collectives.measure import measure
    rep = replay(read_chakra(ALLREDUCE_8), config=ReplayConfig(host_preset="cpu"))
    want = measure("ring", 8, MIB, host=HostConfig.preset("cpu"))
    assert rep.host == "cpu"
    assert round(rep.collectives[0].time_us * 1e6) == want.time_ps
    gpu = replay(read_chakra(ALLREDUCE_8))
    assert gpu.host == "gpu" and gpu.step_us < rep.step_us


def test_goal_traces_default_to_the_cpu_host(capsys):
    """GOAL schedules come from MPI programs: the cpu host unless told otherwise."""
    goal = ROOT / "examples" / "training" / "pipeline_4stages.goal"
    assert read_goal(goal).device == "cpu"
    assert main(["train", str(goal)]) == 0
    assert "host preset: cpu (default for a CPU trace" in capsys.readouterr().out
    assert main(["train", str(goal), "--host-preset", "gpu"]) == 0
    assert "host preset: gpu (--host-preset)" in capsys.readouterr().out


def test_a_host_config_replaces_the_preset():
    host = HostConfig.preset("gpu")
    rep = replay(read_chakra(ALLREDUCE_8), host=host)
    assert rep.host == "custom"
    assert rep.step_us == replay(read_chakra(ALLREDUCE_8)).step_us


def test_unknown_preset_names_the_choices(capsys):
    with pytest.raises(ConfigError, match="host_preset='tpu'; valid choices: cpu, gpu"):
        ReplayConfig(host_preset="tpu")
    with pytest.raises(SystemExit):
        main(["train", str(ALLREDUCE_8), "--host-preset", "tpu"])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err
