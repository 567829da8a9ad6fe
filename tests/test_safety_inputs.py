"""One-line errors, before anything starts, for the inputs issue 18 lists (items 4 and 6):
worker counts against the topology's devices, non-finite or unphysical delays and costs,
htsim start times beyond the engine's clock, CLI options out of range, unwritable outputs and
cache folders, booleans where a host is expected. Each case ran, hung or ended in a traceback
before."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spin import cli
from spin.errors import ConfigError
from spin.parallel.auth import generate_keys
from spin.tools.scenario_file import load_scenario_text
from spin.simulation import Scenario
from spin.topology import Topology

ROOT = Path(__file__).resolve().parents[1]


def _cli(capsys, *argv: str) -> str:
    """Run ``spin ARGV`` in this process; it must fail with exactly one line on stderr."""
    rc = cli.main(list(argv))
    err = capsys.readouterr().err
    assert rc != 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spin: error: "), err
    return lines[0]


@pytest.mark.parametrize("argv, text", [
    (["run", "examples/pingpong.toml", "--workers", "1000"], "--workers = 1000: must be 1..3"),
    (["allreduce", "--workers", "0"], "--workers = 0: must be 1..9"),
    (["allreduce", "--workers", "100000"], "--workers = 100000: must be 1..9"),
    (["lb", "--workers", "100000"], "--workers = 100000: must be 1..208"),
])
def test_worker_counts_are_checked_before_any_process_starts(capsys, monkeypatch, argv, text):
    monkeypatch.chdir(ROOT)
    started = []
    import subprocess as sp
    monkeypatch.setattr(sp, "Popen", lambda *a, **k: started.append(a) or pytest.fail("spawned"))
    assert text in _cli(capsys, *argv)
    assert started == []


def test_run_scenario_refuses_more_workers_than_devices():
    from spin.fabric import run_scenario
    with pytest.raises(ConfigError, match=r"workers = 4: must be 1..2 "):
        run_scenario(Scenario(Topology.pair()), 4)


@pytest.mark.parametrize("argv, text", [
    (["allreduce", "--loss", "0.01", "--loss-seed", "-1"], "--loss-seed -1: must be 0..4294967295"),
    (["lb", "--rate-gbps", "-100"], "--rate-gbps -100: must be 1..1600 Gb/s"),
    (["run", "examples/pingpong.toml", "--workers", "2", "--port", "99999"],
     "--port 99999: must be 0..65535"),
    (["run", "examples/pingpong.toml", "--remote-workers", "1"], "needs --key-file"),
    (["run", "examples/pingpong.toml", "--workers", "2", "--silence-timeout-s", "nan"],
     "--silence-timeout-s = nan: must be finite"),
])
def test_cli_options_out_of_range(capsys, monkeypatch, argv, text):
    monkeypatch.chdir(ROOT)
    assert text in _cli(capsys, *argv)


def test_outputs_that_cannot_be_written(capsys, tmp_path):
    assert "--json " + str(tmp_path) + ": is a directory" in _cli(
        capsys, "topo", "star:hosts=4", "--json", str(tmp_path))
    a_file = tmp_path / "f"
    a_file.write_text("")
    assert "cannot write the key files there" in _cli(capsys, "keys", str(a_file / "keys"))


def test_keys_are_not_replaced_without_force(capsys, tmp_path):
    """A new pair would lock out the workers holding the old one: refused, naming the files."""
    assert cli.main(["keys", str(tmp_path)]) == 0
    public, secret = tmp_path / "spin.key", tmp_path / "spin.key_secret"
    before = public.read_bytes(), secret.read_bytes()
    capsys.readouterr()
    assert _cli(capsys, "keys", str(tmp_path)) == (
        f"spin: error: spin keys {tmp_path}: {public} and {secret} already exist; workers holding "
        f"that key could no longer join: --force replaces it")
    public.unlink()
    assert f"{secret} already exists;" in _cli(capsys, "keys", str(tmp_path))
    assert not public.exists() and secret.read_bytes() == before[1]
    with pytest.raises(ConfigError, match="spin.key_secret already exists: .*force=True"):
        generate_keys(tmp_path)
    assert secret.read_bytes() == before[1]


def test_keys_force_replaces_the_pair(capsys, tmp_path):
    assert cli.main(["keys", str(tmp_path)]) == 0
    public, secret = tmp_path / "spin.key", tmp_path / "spin.key_secret"
    before = public.read_bytes(), secret.read_bytes()
    capsys.readouterr()
    assert cli.main(["keys", str(tmp_path), "--force"]) == 0
    assert capsys.readouterr().out.startswith(f"replaced {public} and {secret}: ")
    assert public.read_bytes() != before[0] and secret.read_bytes() != before[1]
    assert secret.stat().st_mode & 0o777 == 0o600
    elsewhere = tmp_path / "elsewhere"
    secret.unlink()
    secret.symlink_to(elsewhere)          # a link is replaced, not written through
    assert generate_keys(tmp_path, force=True) == secret
    assert not elsewhere.exists() and not secret.is_symlink()


def test_a_cache_folder_that_is_a_file(tmp_path):
    a_file = tmp_path / "cache"
    a_file.write_text("")
    env = dict(os.environ, SPIN_CACHE_DIR=str(a_file), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SPIN_NUMBA_CACHE_DIR_SET", None)
    r = subprocess.run([sys.executable, "-m", "spin.cli", "run", "examples/pingpong.toml"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode != 0
    expected = (f"spin: error: cache folder {str(a_file)!r} (SPIN_CACHE_DIR, default "
                f"~/.cache/spin): {str(a_file)!r} is a file, not a folder; point SPIN_CACHE_DIR "
                f"elsewhere or remove the file")
    assert r.stderr.strip().splitlines() == [expected], r.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this system")
def test_a_cache_folder_that_cannot_be_made(tmp_path):
    """/proc passes os.access for root, yet no folder can be made there."""
    env = dict(os.environ, SPIN_CACHE_DIR="/proc/spin-cache", PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SPIN_NUMBA_CACHE_DIR_SET", None)
    r = subprocess.run([sys.executable, "-m", "spin.cli", "run", "examples/pingpong.toml"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 2
    why = ("cannot be made: No such file or directory; point SPIN_CACHE_DIR elsewhere"
           if os.geteuid() == 0 else "'/proc' is not writable")
    assert r.stderr.strip().splitlines() == [
        f"spin: error: cache folder '/proc/spin-cache' (SPIN_CACHE_DIR, default ~/.cache/spin): "
        f"{why}"], r.stderr


HEAD = '[topology]\nkind = "pair"\n'


@pytest.mark.parametrize("body, words", [
    ("[link]\nlatency_ns = 1e30\n", ["link.latency_ns = 1e+30", "less than or equal to 1000000000"]),
    ("[link]\nlatency_ns = inf\n", ["link.latency_ns = inf", "finite"]),
    ("[nic]\npcie_rate_gbytes_per_s = 1e-300\n", ["nic.pcie_rate_gbytes_per_s = 1e-300"]),
    ("[switch]\nlatency_ns = nan\n", ["switch.latency_ns = nan", "finite"]),
    ('[[host_program]]\nnode = 0\nops = [{ op = "compute", ns = 1e300 }]\n',
     ["host_program[0].ops[0].ns = 1e+300"]),
    ('[[host_program]]\nnode = true\nops = [{ op = "compute", ns = 1 }]\n',
     ["host_program[0].node = True", "valid integer or a valid string"]),
    ('[[host_program]]\nnode = 0\nops = [{ op = "send", dst = true, nbytes = 8 }]\n',
     ["host_program[0].ops[0].dst = True"]),
    ('[[memory]]\nnode = true\naddr = 0\ndtype = "uint8"\nvalues = [1]\n', ["memory[0].node = True"]),
    ("[engine]\nmax_tx_messages = 1e300\n",
     ["engine.max_tx_messages = 1e+300: too large for an integer; valid: 16..2,147,483,647"]),
    ('[nic.transport]\nkind = "ue"\n[nic.transport.ue]\nack_every_packets = 1e300\n',
     ["nic.transport.ue.ack_every_packets = 1e+300: too large for an integer; valid: 1..64"]),
    pytest.param('[nic.transport]\nkind = "ue"\n[nic.transport.ue]\nrto_us = ' + "9" * 4000 + "\n",
                 ["nic.transport.ue.rto_us = an integer of about 4,00"], id="digits-4000"),
])
def test_scenario_values_out_of_physical_range(body, words):
    with pytest.raises(ConfigError) as info:
        load_scenario_text(HEAD + body, "s.toml")
    msg = str(info.value)
    assert msg.startswith("s.toml: ") and "\n" not in msg, msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("params, words", [
    ('kind = "hamming_mesh"\nmesh_latency_ns = inf', ["topology.mesh_latency_ns = inf", "finite"]),
    ('kind = "fat_tree"\nk = 4\nfabric_latency_ns = 1e30', ["topology.fabric_latency_ns = 1e+30"]),
])
def test_topology_delays_out_of_physical_range(params, words):
    with pytest.raises(ConfigError) as info:
        load_scenario_text(f"[topology]\n{params}\n", "s.toml")
    msg = str(info.value)
    assert msg.startswith("s.toml: ") and "\n" not in msg, msg
    for w in words:
        assert w in msg, msg


def test_python_compute_out_of_range():
    hp = Scenario(Topology.pair()).host_program(0)
    for ns in (1e300, float("inf"), float("nan"), -1.0):
        with pytest.raises(ConfigError, match="compute ns="):
            hp.compute(ns)


@pytest.mark.parametrize("start, words", [
    ("1e23", ["start '1e23': start must be an integer"]),
    ("100000000000000000000000", ["start 100000000000000000000000", "must be <= 1e+15 ps"]),
    ("9000000000000000000", ["start 9000000000000000000", "must be <= 1e+15 ps"]),
])
def test_htsim_start_beyond_the_clock(tmp_path, start, words):
    from spin.workloads.htsim_cm import parse_htsim_cm
    cm = tmp_path / "s.cm"
    cm.write_text(f"Nodes 2\nConnections 1\n0->1 id 1 start {start} size 1000\n")
    with pytest.raises(ConfigError) as info:
        parse_htsim_cm(cm)
    for w in words:
        assert w in str(info.value)

