"""Every public name of the result, comparison, testing, check and host-program APIs says what
it is for (the API reference pages of docs/ render them)."""
from __future__ import annotations

import importlib
import inspect

import pytest

import spin

MODULES = ["spin.results", "spin.results.run_result", "spin.results.records",
           "spin.results.compare", "spin.testing", "spin.describe.checks",
           "spin.describe.host_program", "spin.fabric", "nic_emulator.host_reduce",
           "spin.results.timeline", "spin.results.tables", "spin.endpoint.client",
           "spin.endpoint.spec", "spin.describe.scenario", "spin.describe.trace_options",
           "spin.assembly.built"]


def _public(module):
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield name, obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                fn = member.fget if isinstance(member, property) else getattr(member, "__func__",
                                                                              member)
                if inspect.isfunction(fn):
                    yield f"{name}.{attr}", fn


@pytest.mark.parametrize("module_name", MODULES)
def test_public_names_have_docstrings(module_name):
    module = importlib.import_module(module_name)
    assert inspect.getdoc(module)
    # a dataclass without a docstring gets its signature as __doc__: that does not count
    missing = [name for name, obj in _public(module)
               if not inspect.getdoc(obj) or obj.__doc__.startswith(f"{obj.__name__}(")]
    assert missing == []


def test_top_level_exports_resolve():
    for name in spin.__all__:
        assert getattr(spin, name) is not None
