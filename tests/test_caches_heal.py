"""Every cache lives under SPIN_CACHE_DIR, a damaged cache entry is rebuilt rather than failing
every later run, an edit to a module a handler imports is never served stale code, and a cold
start says what it compiles."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spin.engine.handler_build import entry_source

ROOT = Path(__file__).resolve().parents[1]   # this checkout, whatever spin is installed
HELPER = "SCALE = {scale}\n"
HANDLERS = textwrap.dedent("""
    import numpy as np
    from spin.api import SUCCESS
    from spin.handler import HandlerProgram
    from heal_probe_helper import SCALE

    def scaled_payload(ctx, pkt, mem):
        mem[0] += SCALE
        return SUCCESS

    def program():
        return HandlerProgram("scaled", payload=scaled_payload, memory=np.zeros(1, np.int64))
""")
DRIVER = textwrap.dedent("""
    from spin.handler import ExecutionContext
    from spin.simulation import Scenario, Simulation
    from spin.topology import Topology
    import heal_probe_handlers as h

    sc = Scenario(Topology.pair())
    ctx = sc.install(ExecutionContext(1, h.program(), match_qp=1))
    sc.host_program(0).send(1, 3000, qp=1)
    sim = Simulation(sc)
    sim.run()
    print(sim.handlers.modules[0].__name__, int(sim.handler_memory(ctx)[0]))
""")


def _write_modules(d: Path, scale: int) -> None:
    (d / "heal_probe_helper.py").write_text(HELPER.format(scale=scale))
    (d / "heal_probe_handlers.py").write_text(HANDLERS)


def _run(d: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CACHE_DIR", "SPIN_"))}
    env.update(SPIN_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(d), str(ROOT)]))
    return subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True,
                          text=True, timeout=900, cwd=d)


def _value(out: subprocess.CompletedProcess) -> tuple[str, int]:
    assert out.returncode == 0, out.stderr[-3000:]
    name, value = out.stdout.split()
    return name, int(value)


def test_entry_name_covers_modules_a_handler_imports(tmp_path, monkeypatch):
    """Fast check of the hash alone: editing only the imported helper renames the handler's
    entry (the engine does not depend on handlers at all)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)   # rewrites within one second
    _write_modules(tmp_path, 3)
    import importlib

    def name() -> str:   # as a fresh process sees the files
        for m in ("heal_probe_handlers", "heal_probe_helper"):
            sys.modules.pop(m, None)
        importlib.invalidate_caches()
        prog = importlib.import_module("heal_probe_handlers").program()
        return entry_source(prog.payload, prog.memory)[0]
    try:
        name1 = name()
        (tmp_path / "heal_probe_helper.py").write_text(HELPER.format(scale=5))
        assert name() != name1
        (tmp_path / "heal_probe_helper.py").write_text(HELPER.format(scale=3))
        assert name() == name1
    finally:
        for m in ("heal_probe_handlers", "heal_probe_helper"):
            sys.modules.pop(m, None)


@pytest.mark.slow
@pytest.mark.timeout(2400)  # five fresh processes, two compiling cold on busy shared cores
def test_caches_under_spin_cache_dir_heal_and_follow_imports(tmp_path):
    cache, src = tmp_path / "cache", tmp_path / "src"
    src.mkdir()
    _write_modules(src, 3)
    cold = _run(src, cache)
    name1, v1 = _value(cold)
    assert v1 == 3 * 3  # three packets, SCALE = 3
    # a cold start says what it compiles and how long it took
    assert "spin: compiling the handlers of programs 'scaled'" in cold.stderr, cold.stderr
    assert "spin: compiling the engine (once per spin version)" in cold.stderr, cold.stderr
    assert "spin: compile done in " in cold.stderr
    # Numba's cache of spin's own modules is under SPIN_CACHE_DIR, not next to the sources
    own = list((cache / "numba").rglob("heap.push_event-*.nbc"))
    assert own, sorted(p.name for p in cache.rglob("*"))[:20]

    # damage spin's own cache entries (data and index): the run rebuilds them and says so
    for f in own:
        f.write_bytes(b"\x00garbage" * 4)
    index = next((cache / "numba").rglob("heap.pop_event-*.nbi"))
    index.write_bytes(b"\x80\x04garbage")
    healed = _run(src, cache)
    assert _value(healed) == (name1, v1)
    assert "unreadable Numba cache entry" in healed.stderr and "push_event" in healed.stderr
    again = _run(src, cache)
    assert _value(again) == (name1, v1) and "unreadable" not in again.stderr
    assert "compiling" not in again.stderr  # everything came from the cache

    # an edit to the imported helper only: new machine code, new value
    (src / "heal_probe_helper.py").write_text(HELPER.format(scale=7))
    name3, v3 = _value(_run(src, cache))
    assert v3 == 3 * 7 and name3 != name1


TWO_HANDLERS = textwrap.dedent("""
    from spin.api import SUCCESS

    def first(ctx, pkt, mem):
        mem[0] += {first}
        return SUCCESS

    def second(ctx, pkt, mem):
        mem[1] += 1
        return SUCCESS
""")


def test_editing_one_handler_leaves_the_others_entry(tmp_path, monkeypatch):
    """Entries are digested per handler: editing ``first`` renames its entry only."""
    import importlib

    import numpy as np
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)   # rewrites within one second
    path = tmp_path / "two_probe_handlers.py"
    memory = np.zeros(2, np.int64)

    def names():
        sys.modules.pop("two_probe_handlers", None)
        importlib.invalidate_caches()
        mod = importlib.import_module("two_probe_handlers")
        return entry_source(mod.first, memory)[0], entry_source(mod.second, memory)[0]
    try:
        path.write_text(TWO_HANDLERS.format(first=1))
        first1, second1 = names()
        path.write_text(TWO_HANDLERS.format(first=2) + "\n# a comment elsewhere\n")
        first2, second2 = names()
        assert first2 != first1 and second2 == second1
    finally:
        sys.modules.pop("two_probe_handlers", None)


def test_every_cached_jitted_module_is_a_compiled_source():
    """The Numba cache is keyed on COMPILED_SOURCES: a module of spin with cached compiled code
    outside them could be served stale machine code after an edit."""
    import re

    from spin.caches import compiled_source_files
    root = Path(__file__).resolve().parents[1]
    covered = set(compiled_source_files())
    cached = re.compile(r"@(nb\.|numba\.)?(njit|jit)\([^)]*cache=True")
    packages = ("spin", "nic_emulator", "switch_emulator", "bump_emulator")
    missing = [str(f.relative_to(root)) for package in packages
               for f in sorted((root / package).rglob("*.py"))
               if cached.search(f.read_text()) and f not in covered]
    assert not missing, missing


def _project_imports(source: str, package: str | None = None) -> set[str]:
    """Modules of this project a source imports (absolute or relative to ``package``)."""
    import ast
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = (package or "").split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return {n for n in names if n.split(".")[0] in ("spin", "nic_emulator", "switch_emulator",
                                                  "bump_emulator")}


def _module_file(name: str) -> Path | None:
    rel = ROOT / name.replace(".", "/")
    return next((p for p in (rel.with_suffix(".py"), rel / "__init__.py") if p.is_file()), None)


def test_every_module_the_engine_links_is_a_compiled_source():
    """What the generated engine module imports, and what those modules import in turn, is
    compiled into it (or read as constants by it): each such file of the project that uses
    Numba must key the cache, or an edit to it would be served the old machine code. The
    transports' and schemes' modules and the kinds' templates are checked by name too."""
    import inspect
    import re

    from spin.caches import COMPILED_SOURCES, compiled_source_files
    from spin.compiled_sources import module_path
    from spin.engine.codegen import engine_module_source
    from spin.engine.device_kinds import DEVICE_KINDS
    from spin.transports import SHIPPED
    from switch_emulator.lb import port_schemes
    covered = set(compiled_source_files())
    # compiled code, or Numba types and constants that compiled code reads
    compiled = re.compile(r"\bnjit\b|\bjit\(|@(intrinsic|overload)|\b(nb|numba)\.(types|typed|"
                          r"extending|njit|jit|int64|uint8|float64)\b")
    _, source = engine_module_source()
    todo, seen, linked = list(_project_imports(source)), set(), set()
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        text = path.read_text()
        if compiled.search(text):
            linked.add(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo += _project_imports(text, package)
    assert len(linked) > 20, sorted(linked)   # the walk did follow the engine's imports
    assert sorted(str(p.relative_to(ROOT)) for p in linked - covered) == []
    named = [module_path(t.module) for t in SHIPPED]
    named += [str(Path(inspect.getsourcefile(getattr(s.select, "py_func", s.select)))
                  .relative_to(ROOT)) for s in port_schemes()]
    named += [t for kind in DEVICE_KINDS for t in kind.templates]
    assert [n for n in named if ROOT / n not in covered] == []
    assert len(COMPILED_SOURCES) == len(set(COMPILED_SOURCES))


def test_a_shipped_transport_module_joins_the_compiled_sources(monkeypatch):
    """The list is derived, not written by hand: a transport compiled into the engine whose
    module lies outside every other source adds that module's file."""
    import dataclasses

    import spin.compiled_sources as cs
    extra = dataclasses.replace(cs.SHIPPED[0], name="probe", module="spin.testing")
    monkeypatch.setattr(cs, "SHIPPED", (*cs.SHIPPED, extra))
    assert "spin/testing.py" in cs.compiled_sources()
    monkeypatch.setattr(cs, "SHIPPED", cs.SHIPPED[:-1])
    assert "spin/testing.py" not in cs.compiled_sources()


def test_a_cache_folder_is_proven_writable_once_and_made_again_if_gone(tmp_path, monkeypatch):
    """Numba writes a probe file in a function's cache folder each time it sets the function
    up; spin does it once per folder, and again when the folder has been removed since."""
    import shutil

    from numba.core import caching

    from spin.caches import heal_numba_cache
    heal_numba_cache()
    probes = []
    real_probe = caching.tempfile.TemporaryFile
    monkeypatch.setattr(caching.tempfile, "TemporaryFile",
                        lambda *a, **kw: probes.append(kw.get("dir")) or real_probe(*a, **kw))
    folder = tmp_path / "numba-cache"

    class Locator(caching._CacheLocator):
        def get_cache_path(self):
            return str(folder)

        def get_source_stamp(self):
            return 0

        def get_disambiguator(self):
            return ""

        @classmethod
        def from_function(cls, py_func, py_file):
            return cls()

    for _ in range(3):
        Locator().ensure_cache_path()
    assert probes == [str(folder)] and folder.is_dir()
    shutil.rmtree(folder)
    Locator().ensure_cache_path()
    assert probes == [str(folder)] * 2 and folder.is_dir()
