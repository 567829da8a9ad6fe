"""The project-local source files a handler's machine code depends on.

Numba inlines a handler, and everything it calls or reads from module globals, into the engine;
globals are frozen as constants. So the cached engine is stale when the handler's module *or any
project-local module it imports* changes (``from helpers import SCALE`` included: the constant
has no link back to its module at run time). Imports are therefore read from the source (AST)
and followed transitively; modules of the standard library and of installed packages are left
out (their version changes are not ours to track, and they are not edited in place).
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import sysconfig
from pathlib import Path


def _installed_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    roots = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")
             if k in paths}
    roots.add(Path(sys.base_prefix).resolve())
    return tuple(roots)


def _is_local(path: Path, installed: tuple[Path, ...]) -> bool:
    return path.suffix == ".py" and not any(path.is_relative_to(r) for r in installed)


def _origin(name: str) -> Path | None:
    """Source file of module ``name``, found on the path without importing anything."""
    mod = sys.modules.get(name)
    file = getattr(mod, "__file__", None) if mod is not None else None
    if file:
        return Path(file).resolve()
    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    if not rest:
        return Path(spec.origin).resolve() if spec.has_location and spec.origin else None
    dirs = list(spec.submodule_search_locations or [])
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        for d in dirs:
            pkg, mod_file = Path(d) / part, Path(d) / f"{part}.py"
            if (pkg / "__init__.py").is_file():
                if last:
                    return (pkg / "__init__.py").resolve()
                dirs = [str(pkg)]
                break
            if last and mod_file.is_file():
                return mod_file.resolve()
        else:
            return None
    return None


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of the modules a source imports (``from a import b`` yields ``a`` and,
    in case ``b`` is a submodule, ``a.b``)."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                keep = len(parts) - (node.level - 1)
                if keep < 0:
                    continue
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{a.name}" if base else a.name for a in node.names
                         if a.name != "*")
    return names


def local_sources(*modules: str) -> list[Path]:
    """The files of ``modules`` and every project-local module file they import, transitively,
    in a stable order (one walk, however many modules share their imports)."""
    installed = _installed_roots()
    seen: dict[Path, None] = {}
    todo = list(modules)
    visited: set[str] = set()
    while todo:
        name = todo.pop()
        if name in visited:
            continue
        visited.add(name)
        path = _origin(name)
        if path is None or path in seen or not _is_local(path, installed):
            continue
        seen[path] = None
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            continue
        todo.extend(_imported_names(tree, name, path.name == "__init__.py"))
    return sorted(seen)


def sources_digest(modules: list[str]) -> bytes:
    """Digest of the local source files of these modules (paths and contents)."""
    h = hashlib.sha256()
    for f in local_sources(*modules):
        h.update(str(f).encode())
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.digest()


def _code_names(code) -> set[str]:
    """Global and attribute names a code object (and the code nested in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


def _value_digest(value) -> bytes:
    """What Numba would freeze of a global value: numpy arrays by dtype, shape and bytes, other
    values by their repr."""
    import numpy as np
    if isinstance(value, np.ndarray):
        return f"{value.dtype.str}{value.shape}".encode() + value.tobytes()
    return repr(value).encode()


def function_digest(fn) -> bytes:
    """Digest of what a handler's machine code depends on, and nothing more: its own source,
    the source of every function of its module it calls (transitively), the values of the
    module globals it reads (Numba freezes them as constants, so ``from helpers import SCALE``
    counts by value), and the local sources of every other module it reaches (functions
    imported from them, or the module itself). Editing one handler of a module therefore
    leaves the others' digests, and their compiled code, untouched."""
    return functions_digest([fn])


def functions_digest(fns) -> bytes:
    """``function_digest`` of several functions compiled together (a transport's), with one
    walk over the local sources they reach."""
    import inspect
    import types
    h = hashlib.sha256()
    modules: set[str] = set()
    seen: set[int] = set()
    todo = [getattr(fn, "py_func", fn) for fn in reversed(list(fns))]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        h.update(f"{f.__module__}:{f.__qualname__}\0".encode())
        try:
            h.update(inspect.getsource(f).encode())
        except (OSError, TypeError):
            h.update(f.__code__.co_code)
        for name in sorted(_code_names(f.__code__)):
            if name not in f.__globals__:
                continue
            value = f.__globals__[name]
            target = getattr(value, "py_func", value)
            if isinstance(target, types.ModuleType):
                modules.add(target.__name__)
            elif isinstance(target, types.FunctionType):
                if target.__module__ == f.__module__:
                    todo.append(target)
                else:
                    modules.add(target.__module__)
            elif isinstance(target, type):
                modules.add(target.__module__)
            else:
                h.update(f"{name}=".encode() + _value_digest(value) + b"\0")
    h.update(sources_digest(sorted(modules)))
    return h.digest()
