"""Scenario input no run can honour fails at once, before the run, with one line naming the
field: undecodable files, bad seeds, sizes that cannot be allocated, impossible time limits,
unwritable outputs, op counts that would take minutes to unroll, addresses outside host memory."""
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spin.cli import main
from spin.config import HostConfig
from spin.errors import ConfigError
from spin.scenario_file import load_scenario
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from spin.tools.scenario_file import MAX_SCENARIO_BYTES

ROOT = Path(__file__).resolve().parents[1]

BASE = """
[topology]
kind = "star"
hosts = 2
{extra}
[[host_program]]
node = 0
ops = [{ops}]
"""
SEND = '{ op = "send", dst = 1, nbytes = 512, qp = 1 }'


def _file(tmp_path, extra: str = "", ops: str = SEND, name: str = "s.toml"):
    path = tmp_path / name
    path.write_text(BASE.format(extra=extra, ops=ops))
    return path


def _refused(path, *words: str) -> str:
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert time.perf_counter() - t0 < 20  # at once, not after unrolling or building anything
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text, text
    for w in words:
        assert w in text, (w, text)
    return text


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(BASE.format(extra='name = "caf\xe9"', ops=SEND).encode("latin-1"))
    _refused(path, "not a UTF-8 text file", "0xe9")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a read of it all: MemoryError


def _spin_run_refuses(path: str, *words: str) -> None:
    """`spin run PATH` in a child with 4 GiB of address space and 60 s: one error line, exit 2
    (reading a device or a huge file whole would end in MemoryError, a FIFO would block)."""
    r = subprocess.run([sys.executable, "-m", "spin", "run", path], capture_output=True,
                       text=True, timeout=60, preexec_fn=_limit_memory,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith(f"spin: error: {path}: cannot read scenario file: "), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "s.toml")
    _spin_run_refuses(str(tmp_path / "s.toml"), "a FIFO; a scenario is a regular TOML file")


def test_a_device_is_refused_unread():
    _spin_run_refuses("/dev/zero", "a character device")


def test_a_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:
        f.truncate(2 << 30)        # sparse: 2 GiB long, no disk used
    _spin_run_refuses(str(path), f"{2 << 30} B is larger than the limit of {MAX_SCENARIO_BYTES} B")


def test_the_size_limit_is_inclusive(tmp_path, monkeypatch):
    path = _file(tmp_path)
    monkeypatch.setattr("spin.tools.scenario_file.MAX_SCENARIO_BYTES", path.stat().st_size)
    assert load_scenario(path)[0].topology.hosts == ["h0", "h1"]
    monkeypatch.setattr("spin.tools.scenario_file.MAX_SCENARIO_BYTES", path.stat().st_size - 1)
    _refused(path, f"{path.stat().st_size} B is larger than the limit")


def test_a_directory_and_an_empty_path_are_named(tmp_path, capsys):
    _refused(tmp_path, "cannot read scenario file: a directory")
    with pytest.raises(ConfigError, match=r"^scenario file path = '': empty; name a TOML scenario "
                                          r"file$"):
        load_scenario("")
    assert main(["run", ""]) == 2
    assert capsys.readouterr().err == ("spin: error: scenario file path = '': empty; name a TOML "
                                       "scenario file\n")


@pytest.mark.parametrize("seed", ["-1", "inf", "1e300"])
def test_bad_seeds(tmp_path, seed):
    memory = f'[[memory]]\nnode = 0\naddr = 0\ndtype = "uint8"\nfill = "random"\ncount = 8\nseed = {seed}'
    _refused(_file(tmp_path, memory), "memory[0].seed")


def test_sizes_that_cannot_be_allocated(tmp_path):
    _refused(_file(tmp_path, "[host]\nmemory_bytes = 1000000000000000"),
             "engine state needs about", "host.memory_bytes = 1000000000000000", "memory limit")
    fill = '[[memory]]\nnode = 0\naddr = 0\ndtype = "int64"\nfill = "zeros"\ncount = 1000000000000'
    _refused(_file(tmp_path, fill), "memory[0].count = 1000000000000",
             "less than or equal to 2147483647")


def test_unallocatable_state_from_python_is_a_config_error(monkeypatch):
    sc = Scenario(Topology.pair(), host=HostConfig(memory_bytes=10**15))
    with pytest.raises(ConfigError, match="engine state needs about .*the memory limit is"):
        Simulation(sc)   # refused by the estimate, before allocating
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "10000000GiB")
    with pytest.raises(ConfigError, match="engine state needs about .*allocation failed"):
        Simulation(sc)   # a limit above what the allocator gives: its MemoryError, one line


@pytest.mark.parametrize("until", ["inf", "nan", "1e300"])
def test_until_us_must_be_a_finite_time(tmp_path, capsys, until):
    assert main(["run", str(_file(tmp_path)), "--until-us", until, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"spin: error: --until-us = {float(until)}: must be a time > 0 µs")
    assert "\n" not in err


@pytest.mark.parametrize("flag,target", [("--json", "not_a_folder/r.json"),
                                         ("--pcap", "not_a_folder/pcaps"),
                                         ("--json", "."), ("--pcap", "not_a_folder")])
def test_unwritable_outputs_fail_before_the_run(tmp_path, capsys, flag, target):
    (tmp_path / "not_a_folder").write_text("a file")
    path = _file(tmp_path)
    assert main(["run", str(path), flag, str(tmp_path / target), "--quiet"]) == 2
    out = capsys.readouterr()
    assert out.err.startswith(f"spin: error: {flag} ") and out.err.count("\n") == 1, out.err
    assert out.out == ""  # nothing ran


def test_huge_repeat_is_refused_at_once(tmp_path):
    ops = '{ op = "repeat", times = 100000000, ops = [{ op = "compute", ns = 1.0 }] }'
    _refused(_file(tmp_path, ops=ops), "host_program[0].ops", "100,000,000 ops", "4,194,304")


def test_huge_host_count_is_refused_at_once(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(BASE.format(extra="", ops=SEND).replace("hosts = 2", "hosts = 100000000000"))
    _refused(path, "topology.hosts = 100000000000")


def test_addresses_outside_host_memory(tmp_path):
    far = '{ op = "send", dst = 1, nbytes = 512, qp = 1, remote_addr = 1048300 }'
    _refused(_file(tmp_path, ops=far), "remote_addr = 1048300", "host.memory_bytes = 1048576")
    reduce = '{ op = "reduce", dst_addr = 0, src_addr = 99999999999, count = 4, dtype = "int32" }'
    _refused(_file(tmp_path, ops=reduce), "src_addr = 99999999999", "outside host memory")


def test_remote_address_owned_by_a_handler_is_left_to_it(tmp_path):
    """With an execution context on the destination, the address means what its handler makes
    of it; only the default path writes it to host memory."""
    ctx = ('[[program]]\nname = "pong"\nfactory = "handlers.ping_pong:ping_pong_program"\n'
           'args = { reply_qp = 2 }\n[[context]]\nnode = 1\nprogram = "pong"')
    far = '{ op = "send", dst = 1, nbytes = 512, qp = 1, remote_addr = 1048300 }'
    sc, _ = load_scenario(_file(tmp_path, ctx, ops=far))
    assert sc.host_programs[0].ops


def test_addresses_outside_host_memory_from_python():
    """Scenarios built in Python are checked when the Simulation is built, before any run
    (today: a runtime drop for a send, an engine IndexError for a reduce)."""
    sc = Scenario(Topology.pair())
    sc.host_program(0).send(1, 512, remote_addr=10**9)
    with pytest.raises(ConfigError,
                       match=r"host 'h0' \(node 0\) op 0 \(send\): remote_addr = 1000000000"):
        Simulation(sc)
    sc = Scenario(Topology.pair())
    sc.host_program(1).reduce(0, (1 << 20) - 8, 4, "int32")
    with pytest.raises(ConfigError,
                       match=r"host 'h1' \(node 1\) op 0 \(reduce\): src_addr = 1048568"):
        Simulation(sc)
