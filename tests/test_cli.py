"""The `spin` command end to end, in subprocesses."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def spin(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = shutil.which("spin")
    cmd = [exe] if exe else [sys.executable, "-m", "spin.cli"]
    return subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def test_demo_json(tmp_path):
    out = tmp_path / "demo.json"
    r = spin("demo", "--json", str(out))
    assert r.returncode == 0, r.stderr
    for label in ("completion time (µs)", "host CPU time (µs)", "PCIe bytes (B)", "link bytes (B)",
                  "HPU busy (µs)", "speedup (x)"):
        assert label in r.stdout
    d = json.loads(out.read_text())
    for w in ("pingpong", "reduce"):
        assert {"baseline", "offload", "comparison"} <= set(d[w])
        assert d[w]["comparison"]["speedup"] > 1


def test_run_pingpong_pcap_json(tmp_path):
    out, pcaps = tmp_path / "r.json", tmp_path / "pcap"
    r = spin("run", "examples/pingpong.toml", "--json", str(out), "--pcap", str(pcaps))
    assert r.returncode == 0, r.stderr
    assert "check ok" in r.stdout and "bytes (B)" in r.stdout and "drops: none" in r.stdout
    files = sorted(p.name for p in pcaps.glob("*.pcap"))
    assert files == ["link0_h0-s0.pcap", "link1_h1-s0.pcap"]
    assert all((pcaps / f).stat().st_size > 24 + 16 * 16 for f in files)
    d = json.loads(out.read_text())
    assert d["marks"]["done"]["0"] > 0 and d["totals"]["drops"] == 0
    assert len(d["messages"]) == 16 and d["checks"][0].startswith("check ok")


def test_run_until(tmp_path):
    out = tmp_path / "r.json"
    r = spin("run", "examples/pingpong.toml", "--until-us", "10", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "checks: 1 skipped" in r.stdout
    d = json.loads(out.read_text())
    assert not d["marks"].get("done")               # the full run marks "done" at ~46 µs
    assert 0 < len(d["messages"]) < 16


def test_bench_quick():
    r = spin("bench", "--quick")
    assert r.returncode == 0, r.stderr
    assert re.search(r"handler call overhead\s+-?[\d.,]+ ns/packet", r.stdout)
    assert re.search(r"2-host star, 64 B: packet events\s+[\d,]+ events/s", r.stdout)
    assert re.search(r"8-host star, 64 B: all events\s+[\d,]+ events/s", r.stdout)
    assert re.search(r"`spin run` small scenario, cached, end to end\s+[\d.]+ s", r.stdout)
    assert re.search(r"same handler edited, rerun, engine cached, end to end\s+[\d.]+ s", r.stdout)


def test_bad_scenario_exits_2_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[topology]\nkind = 'star'\nhosts = 2\n[engine]\nmtu_bytes = 1000\n")
    r = spin("run", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("spin: error: ") and "engine.mtu_bytes = 1000" in lines[0]
    assert "1024" in lines[0] and "Traceback" not in r.stderr


def test_help_mentions_units():
    for sub, unit in (("demo", "µs"), ("run", "µs"), ("bench", "ns/packet")):
        r = spin(sub, "--help")
        assert r.returncode == 0 and unit in r.stdout
    r = spin("worker", "--help")
    assert r.returncode == 0 and "--join" in r.stdout


def test_run_with_two_workers_checks_data_and_matches_one_worker(tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    r1 = spin("run", "examples/reduce_8hosts.toml", "--digests", "--json", str(one))
    r2 = spin("run", "examples/reduce_8hosts.toml", "--workers", "2", "--digests", "--json",
              str(two))
    assert r1.returncode == 0 and r2.returncode == 0, r2.stderr
    assert "check ok" in r2.stdout                      # host memory fetched from its worker
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert len(a["host_memory_sha256"]) == 8            # asked for: one digest per host
    for key in ("messages", "links", "nics", "hosts", "drops", "marks", "host_memory_sha256"):
        assert a[key] == b[key], key


def test_run_skips_host_memory_digests_unless_asked(tmp_path):
    out = tmp_path / "r.json"
    r = spin("run", "examples/pingpong.toml", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "skipped: SHA-256 of host memory" in r.stdout
    assert json.loads(out.read_text())["host_memory_sha256"] == {}
    r = spin("run", "examples/pingpong.toml", "--digests", "--json", str(out))
    assert r.returncode == 0 and "skipped" not in r.stdout, r.stdout
    assert len(json.loads(out.read_text())["host_memory_sha256"]) == 2


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """`spin topo ... | head -1`: the pipe's reader is gone before the table is written; the
    command stops with the shell's SIGPIPE status and no traceback."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "spin", "topo", "fat_tree:k=4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()                     # the reader goes away before anything is read
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""
