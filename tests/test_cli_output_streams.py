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
