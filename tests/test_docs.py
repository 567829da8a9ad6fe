"""The documentation site builds strict, and every code block of it (and of the README) runs.

Rules for code blocks (docs/contributing.md says the same to authors):

* every fence names its language: ``python``, ``sh``, ``toml`` or ``text`` (output and
  listings, the only blocks not executed); a ``text`` block after
  ``<!-- docs-test: output -->`` must be exactly what the python block before it prints;
* ``python`` blocks run, each as a module of its own (so handlers defined in a block can be
  compiled: their entry imports the module by name); a block that is only an include
  (``--8<-- "examples/x.py"``) shows a file that the suite runs itself (``examples/`` in
  tests/test_examples.py, ``tests/`` as tests);
* ``sh`` blocks: every ``spin ...`` command is parsed by spin's own argparse parser and a
  ``spin run FILE`` loads its scenario; a block after ``<!-- docs-test: run -->`` also runs
  (short commands only: the others take minutes by design, e.g. a 128-host fat tree);
  ``python FILE`` needs the file; ``pip install`` and ``python -m pytest`` lines are the set-up
  commands CI runs verbatim (.ci/run);
* ``toml`` blocks are loaded with spin's scenario loader; a fragment without ``[topology]`` is
  loaded on top of a 2-host star. A block whose first line is ``# pyproject.toml ...`` is a
  package's metadata instead: it must parse, and the entry-point groups it publishes must be
  the ones spin reads (``spin.scenario_code``).
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
LANGUAGES = {"python", "sh", "toml", "text"}
RUN_MARKER = "<!-- docs-test: run -->"
OUTPUT_MARKER = "<!-- docs-test: output -->"
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.DOTALL | re.MULTILINE)
INCLUDE = re.compile(r'^--8<-- "(?P<path>[^"]+)"$')
SETUP_COMMANDS = ('pip install -e . && spin demo',
                  'pip install -e ".[test]" && python -m pytest -q -n 2 --dist loadfile')
SCRIPT_RUN_TIMEOUT_S = 240


@dataclass(frozen=True)
class Block:
    page: Path
    index: int
    line: int
    lang: str
    body: str
    run: bool
    output: bool = False        # a text block that is the exact output of the block before it

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def module_name(self) -> str:
        stem = re.sub(r"\W", "_", str(self.page.relative_to(ROOT).with_suffix("")))
        return f"docs_block_{stem}_{self.index}"


def code_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    blocks = []
    for i, m in enumerate(FENCE.finditer(text)):
        before = text[:m.start()].rstrip()
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] for line in m.group("body").splitlines()) + "\n"
        blocks.append(Block(page, i, text.count("\n", 0, m.start()) + 1, m.group("lang").strip(),
                            body, before.endswith(RUN_MARKER), before.endswith(OUTPUT_MARKER)))
    return blocks


BLOCKS = [b for page in PAGES for b in code_blocks(page)]


def _ids(blocks):
    return [b.where for b in blocks]


def test_every_block_names_a_known_language():
    unknown = [f"{b.where}: ```{b.lang}" for b in BLOCKS if b.lang not in LANGUAGES]
    assert unknown == [], "fences must name python, sh, toml or text"
    assert len(BLOCKS) > 40          # the collector sees the pages' blocks


# --- python ---------------------------------------------------------------------------------------
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def _include(block: Block) -> Path | None:
    m = INCLUDE.match(block.body.strip())
    return ROOT / m.group("path") if m else None


@pytest.mark.timeout(120)                 # a block waiting on a socket must not hang the suite
@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_python_block_runs(block, tmp_path, monkeypatch, capsys):
    included = _include(block)
    if included is not None:
        assert included.is_file(), f"{block.where}: no file {included}"
        rel = included.relative_to(ROOT)
        assert rel.parts[0] in ("examples", "tests"), \
            f"{block.where}: included files must be run by the suite (examples/ or tests/)"
        if rel.parts[0] == "tests":
            assert rel.name.startswith("test_"), f"{block.where}: {rel} is not a test file"
        return
    source = tmp_path / f"{block.module_name}.py"
    source.write_text(block.body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.chdir(ROOT)
    spec = importlib.util.spec_from_file_location(block.module_name, source)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, block.module_name, module)
    capsys.readouterr()
    spec.loader.exec_module(module)          # a failure names the block's temp file and line
    shown = _shown_output(block)
    if shown is not None:
        printed = capsys.readouterr().out
        assert _lines(printed) == _lines(shown), f"{block.where}: the output shown is not what runs"


def _shown_output(block: Block) -> str | None:
    """The text block marked as this block's output, if the next block is one."""
    following = [b for b in BLOCKS if b.page == block.page and b.index == block.index + 1]
    if following and following[0].lang == "text" and following[0].output:
        return following[0].body
    return None


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_output_markers_follow_python_blocks():
    marked = [b for b in BLOCKS if b.output]
    assert marked, "some outputs shown in the docs must be checked"
    for b in marked:
        before = [p for p in BLOCKS if p.page == b.page and p.index == b.index - 1]
        assert b.lang == "text" and before and before[0].lang == "python", b.where


TEST_REFERENCE = re.compile(r"`(?P<file>test_\w+\.py)?(?:::(?P<name>test_\w+))?`")


def test_tests_named_in_the_docs_exist():
    """A page that cites ``test_file.py::test_name`` (or ``::test_name`` after it, for the same
    file) as the proof of something cites a test that exists under tests/."""
    cited = []
    for page in PAGES:
        last = None
        for m in TEST_REFERENCE.finditer(page.read_text()):
            last = m.group("file") or last
            if m.group("file") or m.group("name"):
                cited.append((page.relative_to(ROOT), last, m.group("name")))
    assert len(cited) > 20
    missing = []
    tests = {p.name: p for p in (ROOT / "tests").rglob("test_*.py")}
    for page, file, name in cited:
        path = tests.get(file) if file else None
        if path is None or not path.is_file():
            missing.append(f"{page}: {file}")
        elif name and not re.search(rf"^def {name}\(", path.read_text(), re.MULTILINE):
            missing.append(f"{page}: {file}::{name}")
    assert missing == []


# --- sh -------------------------------------------------------------------------------------------
SHELL = [b for b in BLOCKS if b.lang == "sh"]


def shell_commands(block: Block) -> list[str]:
    """The block's commands: continuation lines joined, comments and prompts removed."""
    joined = block.body.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            commands.append(line)
    return commands


def _check_spin_command(argv: list[str], where: str) -> None:
    from spin.cli import build_parser
    from spin.scenario_file import load_scenario
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: `spin {' '.join(argv)}` does not parse (exit {exc.code})")
    if args.command == "run":
        path = ROOT / args.scenario
        if path.exists():
            load_scenario(path)
        else:                                  # a placeholder such as `big.toml`
            assert not args.scenario.startswith("examples/"), f"{where}: no {args.scenario}"


@pytest.mark.parametrize("block", SHELL, ids=_ids(SHELL))
def test_shell_block(block, tmp_path):
    for command in shell_commands(block):
        if command in SETUP_COMMANDS:
            assert command.split(" && ")[0].startswith("pip install")
            continue
        if command.startswith(("ssh ", "srun ", "mpirun ")):   # launchers around `spin ...`
            command = command[command.index(" spin ") + 1:]
        argv = shlex.split(command)
        if argv[0] == "spin":
            _check_spin_command(argv[1:], block.where)
        elif argv[0] == "python" and argv[1].endswith(".py"):
            assert (ROOT / argv[1]).is_file(), f"{block.where}: no script {argv[1]}"
        elif argv[:3] == ["python", "-m", "pytest"]:
            tests = [a for a in argv[3:] if a.startswith("tests/")]
            assert tests and all((ROOT / t).exists() for t in tests), f"{block.where}: {command}"
        elif argv[:2] == ["pip", "install"]:
            continue                                     # extras: pyproject.toml declares them
        else:
            pytest.fail(f"{block.where}: the docs test cannot check `{command}`")
        if block.run:                  # in a scratch directory: outputs (--json, --pcap) land there
            exe = [sys.executable, "-m", "spin.cli"] if argv[0] == "spin" else [sys.executable]
            args = [str(ROOT / a) if (ROOT / a).exists() and not a.startswith("-") else a
                    for a in argv[1:]]
            r = subprocess.run(exe + args, cwd=tmp_path, capture_output=True, text=True,
                               timeout=SCRIPT_RUN_TIMEOUT_S,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert r.returncode == 0, f"{block.where}: `{command}` failed:\n{r.stderr[-2000:]}"


def test_only_short_commands_are_marked_to_run():
    """The run marker is for commands of a few seconds: none of the multi-minute studies."""
    slow = ("spin demo", "--workers", "spin bench", "--remote-workers")
    marked = [c for b in SHELL if b.run for c in shell_commands(b)]
    assert marked, "some commands of the docs must run"
    assert not [c for c in marked if any(s in c for s in slow)
                or (c.startswith("spin lb") and "--topology" not in c)]   # 128 hosts by default


# --- toml -----------------------------------------------------------------------------------------
TOML = [b for b in BLOCKS if b.lang == "toml"]
BASE_SCENARIO = {"topology": {"kind": "star", "hosts": 2}}


PYPROJECT_MARK = "# pyproject.toml"


@pytest.mark.parametrize("block", TOML, ids=_ids(TOML))
def test_toml_block_loads(block, tmp_path):
    from spin.scenario_file import load_scenario
    data = tomllib.loads(block.body)
    if block.body.startswith(PYPROJECT_MARK):
        _check_entry_points(data, block.where)
        return
    if "topology" not in data:
        data = {**BASE_SCENARIO, **data}
    path = tmp_path / "scenario.toml"
    path.write_text(_dump_toml(data))
    load_scenario(path)


def _check_entry_points(pyproject: dict, where: str) -> None:
    """A pyproject fragment publishes functions (and port-selection schemes, transports) only
    under the groups spin looks them up in, each value a ``module:name`` path."""
    from spin.scenario_code import FACTORY, FUNCTION
    from spin.transports import ENTRY_POINT_GROUP as TRANSPORTS
    from switch_emulator.lb.registry import ENTRY_POINT_GROUP as SCHEMES
    groups = pyproject.get("project", {}).get("entry-points", {})
    assert groups, f"{where}: a pyproject.toml block without [project.entry-points]"
    for group, points in groups.items():
        assert group in (FACTORY.group, FUNCTION.group, SCHEMES, TRANSPORTS), \
            f"{where}: spin reads no group {group!r}"
        for name, value in points.items():
            assert re.fullmatch(r"[\w.]+:\w+", value), f"{where}: {name} = {value!r}"


def _dump_toml(data: dict) -> str:
    """Enough TOML writing for scenario tables (tomllib reads only)."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)
    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, (dict, list))
             or (isinstance(v, list) and not all(isinstance(x, dict) for x in v))]
    for key, v in data.items():
        if isinstance(v, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {value(x)}" for k, x in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines.append(f"[[{key}]]")
                lines += [f"{k} = {value(x)}" for k, x in item.items()]
    return "\n".join(lines) + "\n"


# --- the build ------------------------------------------------------------------------------------
def test_mkdocs_build_is_strict_and_clean(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[test]'")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: "
                        "pip install -e '.[test]'")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(site)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-4000:]
    assert "WARNING" not in r.stderr
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "spin allreduce" in cli and "--algo" in cli
    config = (site / "reference" / "configuration" / "index.html").read_text()
    assert "hpu_clock_mhz" in config and "match_qp" in config
    from tools.plot_gallery import FIGURES, GALLERY_DIR
    for name in FIGURES:                    # drawn at build time, never committed
        assert (site / GALLERY_DIR / name).read_bytes().startswith(b"\x89PNG\r\n"), name
        assert not (DOCS / GALLERY_DIR / name).exists(), f"{name} is generated: do not commit it"
    gallery = (site / "guides" / "plots" / "index.html").read_text()
    assert all(f'src="{name}"' in gallery or f'src="../plots/{name}"' in gallery
               for name in FIGURES), "the gallery page shows every generated picture"
    inventory = _inventory_names(site / "objects.inv")
    import spin
    from tools.reference_pages import top_level_names
    missing = [path for path in top_level_names().values() if path not in inventory]
    assert missing == [], "top-level names without an API entry"
    assert "spin.api.spin_dma_to_host" in inventory and spin.__all__


def _inventory_names(path: Path) -> set[str]:
    """The object names of a Sphinx-format inventory (mkdocstrings writes one)."""
    import zlib
    raw = path.read_bytes()
    body = raw.split(b"\n", 4)[4]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines()}
