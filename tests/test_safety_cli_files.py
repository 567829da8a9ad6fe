"""Hostile command lines and files: options and htsim topology values outside their range, cost
files that are no text or no file, end with one line naming the option or the line."""
from __future__ import annotations

from pathlib import Path

import pytest

from spin import cli
from spin.errors import ConfigError, TopologyError
from spin.loadbalancing.htsim_run import check_seed_count
from spin.workloads.htsim_topo import load_htsim_topo



def _one_error_line(capsys, *argv: str) -> str:
    rc = cli.main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and err[0].startswith("spin: error: "), err
    return err[0]


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0", "1e300", "2147484"])
def test_worker_join_timeout_out_of_range(capsys, value):
    """Past a day (86,400 s) too: ZeroMQ's int32 milliseconds overflowed at 2,147,484 s."""
    assert (f"--join-timeout-s = {float(value)}: must be finite, > 0 and <= 86400 s"
            in _one_error_line(capsys, "worker", "--join", "tcp://127.0.0.1:1",
                               f"--join-timeout-s={value}"))


def test_cost_file_that_is_no_text_or_no_file(capsys, tmp_path):
    binary = tmp_path / "cost.toml"
    binary.write_bytes(b"\xff\xfe\x00not text")
    assert "not a UTF-8 text file" in _one_error_line(capsys, "topo", "--compare", "--cost",
                                                      str(binary))
    assert "cannot read it: Is a directory" in _one_error_line(capsys, "topo", "--compare",
                                                               "--cost", str(tmp_path))


TOPO = """Nodes 16
Tiers 2
Tier 0
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 1000
Switch_Latency_ns 0
Oversubscribed 1
Tier 1
Downlink_speed_Gbps 100
Radix_Down 4
Downlink_Latency_ns 1000
Switch_Latency_ns 0
"""


@pytest.mark.parametrize("line, replacement, words", [
    ("Oversubscribed 1", "Oversubscribed 0", ":9: Oversubscribed 0: must be 1..1,024"),
    ("Switch_Latency_ns 0", "Switch_Latency_ns 99999999999999999999999",
     ":8: Switch_Latency_ns 99999999999999999999999: must be 0..1,000,000,000,000"),
    ("Nodes 16", "Nodes 0", ":1: Nodes 0: must be 1..1,048,576"),
])
def test_htsim_topology_values_out_of_range(tmp_path, line, replacement, words):
    good = tmp_path / "good.topo"
    good.write_text(TOPO)
    assert len(load_htsim_topo(good).hosts) == 16
    bad = tmp_path / "bad.topo"
    bad.write_text(TOPO.replace(line, replacement, 1))
    with pytest.raises(TopologyError) as exc:
        load_htsim_topo(bad)
    assert str(exc.value) == f"{bad}{words}"


@pytest.mark.parametrize("seeds", [0, -1, 1_000_000])
def test_switch_seed_counts_outside_the_range(seeds):
    with pytest.raises(ConfigError, match=rf"--switch-seeds {seeds}: must be 1..1,000"):
        check_seed_count(seeds)
    check_seed_count(1000)


GOAL = str(Path(__file__).resolve().parents[1] / "examples" / "training" / "pipeline_4stages.goal")
PINGPONG = str(Path(__file__).resolve().parents[1] / "examples" / "pingpong.toml")


@pytest.mark.parametrize("argv, flag", [
    (["lb", "--topology", "fat_tree:k=4", "--size", "64KB", "--schemes", "ecmp", "--json"],
     "--json"),
    (["allreduce", "--size", "4KiB", "--algo", "ring", "--json"], "--json"),
    (["train", GOAL, "--json"], "--json"),
    (["train", GOAL, "--trace"], "--trace"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(capsys, tmp_path, argv,
                                                                    flag):
    """Each was written after the run and ended in a traceback, losing the run's results."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    line = _one_error_line(capsys, *argv, str(blocker / "out.json"))
    assert line.startswith(f"spin: error: {flag} {blocker / 'out.json'}: ")
    assert "is a file, not a folder" in line


def test_a_dump_that_cannot_be_written_is_refused_before_the_run(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    line = _one_error_line(capsys, "run", PINGPONG, "--dump",
                           f"h0:0:10:uint8={blocker / 'x.npy'}")
    assert f"--dump {blocker / 'x.npy'}: {blocker} is a file, not a folder" in line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("argv", [["run", PINGPONG, "--trace", "/dev/full"],
                                  ["train", GOAL, "--trace", "/dev/full"]])
def test_a_full_disk_at_the_end_is_one_line(capsys, argv):
    line = _one_error_line(capsys, *argv)
    assert "--trace /dev/full: cannot write there: No space left on device" in line
