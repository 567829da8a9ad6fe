"""``import spin`` offers what a study needs, and says so: ``dir(spin)`` and ``help(spin)`` list
every public name, each resolves to the documented object (never to a same-named submodule)
and the package docstring's example runs."""
from __future__ import annotations

import importlib
import inspect
import pydoc
import re

import spin

NEEDED = ["Topology", "build_topology", "Scenario", "run", "compare_offload", "run_scenario",
          "RunResult", "HostStats", "Totals", "OffloadComparison", "load_htsim_cm",
          "load_htsim_topo", "build_workload", "ALLREDUCE_ALGORITHMS", "measure_allreduce",
          "load_scenario", "ConfigError"]


def test_dir_and_help_show_every_public_name():
    listed = dir(spin)
    assert set(spin.__all__) <= set(listed)
    assert set(NEEDED) <= set(spin.__all__)
    text = pydoc.render_doc(spin, renderer=pydoc.plaintext)
    missing = [name for name in spin.__all__ if not re.search(rf"\b{name}\b", text)]
    assert missing == []


def test_every_export_is_the_documented_object_even_after_its_modules_load():
    for where in set(spin._EXPORTS.values()):                 # what a run imports anyway
        importlib.import_module(where.partition(":")[0])
    importlib.import_module("spin.results.compare")
    importlib.import_module("spin.compare")               # the old path, kept for one release
    importlib.import_module("spin.handler")
    for name, where in spin._EXPORTS.items():
        module, _, attr = where.partition(":")
        value = getattr(spin, name)
        assert value is getattr(importlib.import_module(module), attr or name), name
        assert not inspect.ismodule(value), name
        doc = inspect.getdoc(value)
        assert doc and not doc.startswith(f"{getattr(value, '__name__', name)}("), name


def test_the_package_docstring_example_runs():
    example = spin.__doc__.split("reads::\n", 1)[1].split("\n\n", 1)[0]
    code = "\n".join(line[4:] for line in example.splitlines())
    namespace: dict = {}
    exec(compile(code.replace("print(", "_shown = ("), "<spin docstring>", "exec"),  # noqa: S102
         namespace)                                  # the docstring example itself
    result = namespace["result"]
    assert isinstance(result, spin.RunResult) and result.require_finished() is result
    assert result.host(1).name == "h1" and result.totals().link_bytes > 4096
