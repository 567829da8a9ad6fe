"""The README's Python API example runs as written, and its figures are what it says."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from examples.max_reduce import HEADER_WORDS, LOWEST

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_example(capsys):
    section = (ROOT / "README.md").read_text().split("## The Python API", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns: dict = {}
    exec(compile(block, "README.md (The Python API)", "exec"), ns)
    n = ns["N"]
    vectors = [(np.arange(n, dtype=np.int32) * (h + 3)) % 1001 for h in range(4)]
    expected = np.max(np.stack(vectors), axis=0)
    assert np.array_equal(ns["maxima"], expected)                     # two workers
    assert ns["host0"][:4 * n].tobytes() == expected.tobytes()        # one process
    state = ns["state"]
    assert state.shape == (HEADER_WORDS + n,) and state[1] == 3       # 3 contributors expected
    assert (state[HEADER_WORDS:] == LOWEST).all()                     # reset after the result
    result = ns["result"]
    assert result.nic(0).handler_calls.completion == 3
    assert result.host(0).cpu_busy_ps > 0 and result.mark("done", 0) > 0
    out = capsys.readouterr().out
    assert f"{result.mark('done', 0)} ps; Totals(link_bytes=" in out
