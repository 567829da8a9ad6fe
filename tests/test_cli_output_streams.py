"""The command's own output streams: a terminal that cannot show µ, or a full disk behind
stdout, end in the output or one line, never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PINGPONG = str(Path(__file__).resolve().parents[1] / "examples" / "pingpong.toml")


def test_an_ascii_terminal_gets_escapes_not_a_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "spin", "run", PINGPONG], capture_output=True,
                          timeout=300, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"end time: 46.477 \\xb5s (virtual)" in proc.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_stdout_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "spin", "run", PINGPONG], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "spin: error: cannot write the output: No space left on device"], proc.stderr


def test_names_from_the_scenario_cannot_drive_the_terminal(tmp_path) -> None:
    scenario = tmp_path / "ctl.toml"
    scenario.write_text('name = "\\u001b[2J\\u001b[31mPWN\\u0000"\n[topology]\nkind = "pair"\n'
                        '[[host_program]]\nnode = "h0"\n'
                        'ops = [{op = "mark", label = "\\u202e\\u0000evil\\n\\u001b[31mred"}]\n')
    proc = subprocess.run([sys.executable, "-m", "spin", "run", str(scenario)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x00" not in proc.stdout and "\u202e" not in proc.stdout
    assert "scenario \\x1b[2J\\x1b[31mPWN\\x00" in proc.stdout
    assert "\\u202e\\x00evil\\n\\x1b[31mred    h0" in proc.stdout     # one row, not two
