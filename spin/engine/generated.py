"""Import a module spin generated (the engine, a handler's entry) from the cache folder.

The file is rewritten only when its text differs (atomically, so a concurrent reader sees the
old or the new file, never half of one); Numba's cache keys its machine code on that file.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def import_generated(directory: Path, name: str, source: str) -> ModuleType:
    """Module ``name`` with ``source``, written to ``directory/name.py`` and imported once per
    process."""
    if name in sys.modules:
        return sys.modules[name]
    path = directory / f"{name}.py"
    try:
        current = path.read_text()
    except OSError:
        current = None
    if current != source:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def branch_chain(selector: str, calls: list[str]) -> str:
    """Body of a generated static dispatch: ``if <selector> == <code>: return <call>`` for each
    entry of a registry in code order, the last one the fall-through (every code the engine
    holds is a valid one). Numba compiles each branch as a direct call."""
    lines = [f"    if {selector} == {code}:\n        return {call}"
             for code, call in enumerate(calls[:-1])]
    lines.append(f"    return {calls[-1]}")
    return "\n".join(lines)
