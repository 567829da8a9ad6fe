"""The Python API example of the docs (docs/guides/python-api.md) runs as written, and its figures
are what it says; the README's example gives the same maxima."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from examples.max_reduce import HEADER_WORDS, LOWEST

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_example(capsys):
    page = (ROOT / "docs" / "guides" / "python-api.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    ns: dict = {}
    exec(compile(block, "docs/guides/python-api.md", "exec"), ns)
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


def test_readme_example(capsys):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## One example", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns: dict = {}
    exec(compile(block, "README.md (One example)", "exec"), ns)
    n = ns["N"]
    expected = np.max(np.stack([(np.arange(n, dtype=np.int32) * (h + 3)) % 1001
                                for h in range(4)]), axis=0)
    assert np.array_equal(ns["result"].read(0, 0, n, "int32"), expected)
    assert f"at {ns['result'].mark('done', 0)} ps" in capsys.readouterr().out


def test_readme_is_a_landing_page():
    """At most 250 lines; the two set-up commands CI runs verbatim; its links resolve."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    ci = (ROOT / ".ci" / "run").read_text()
    for command in ('pip install -e . && spin demo',
                    'pip install -e ".[test]" && python -m pytest -q -n 2 --dist loadfile'):
        assert f"```sh\n{command}\n```" in readme
    assert 'pip install -e ".[test]" && python -m pytest -q -n 2 --dist loadfile' in ci
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert len(links) > 20
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_readme_states_the_trust_model():
    """The landing page says, in a few lines, what a scenario file may call, what a joining
    worker needs, when a silent worker ends a run and which memory limit applies, with the
    names and defaults the code uses, and links the security page."""
    from spin.cli import build_parser
    from spin.parallel.coordinator import DEFAULT_SILENCE_TIMEOUT_S
    from spin.scenario_code import FACTORY, FUNCTION
    from spin.describe.limits import MEMORY_LIMIT_ENV
    section = (ROOT / "README.md").read_text().split("## What spin trusts", 1)[1].split("\n## ")[0]
    text = " ".join(section.split())
    for needed in ("@spin.program_factory", "@spin.scenario_function", FACTORY.group,
                   FUNCTION.group, "top-level code", "spin keys DIR", "--key-file",
                   "loopback included", f"silent for {DEFAULT_SILENCE_TIMEOUT_S:g} s",
                   "--silence-timeout-s", MEMORY_LIMIT_ENV, "3/4 of RAM plus swap",
                   "](docs/security.md)"):
        assert needed in text, needed
    run = build_parser().parse_args(["run", "x.toml", "--silence-timeout-s", "5",
                                     "--key-file", "k"])
    assert run.silence_timeout_s == 5 and run.key_file == "k"
