"""The run description as data: a tagged-JSON codec for the spec a coordinator hands its workers.

Why not pickle: unpickling runs whatever callable the bytes name, so a worker would execute code
chosen by anyone able to reach its control socket. Here the wire carries only JSON; decoding can
do nothing but build plain values, numpy arrays (from a dtype description and raw bytes), and
instances of **dataclasses and pydantic models** found by import path (attributes set as pickle
does, without calling ``__init__``, so a decoded spec is the encoded one, field for field).
Functions — handlers, host-program callbacks — travel as import paths ``module:qualname`` and are
resolved, never called, by the decoder: code is never sent, only named, and must already be
installed where the worker runs. The encoder refuses what a worker could not resolve (closures,
lambdas, anything from ``__main__``) in the caller, before any process starts.

This is generic over dataclasses on purpose: scenarios, topologies and configs evolve, and a
hand-written schema per class would drift from them; the codec follows their fields.
Shared objects (one program referenced by many execution contexts) are encoded once and stay
shared after decoding; lists of plain numbers and strings travel by value (the fast path for
host-program ops).
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
from typing import Any

import numpy as np

from spin.errors import ConfigError, TransportError

_MAX_DEPTH = 200
_PLAIN = (int, float, str, bool, type(None))


def _path_of(obj: Any) -> str:
    target = getattr(obj, "py_func", obj)  # numba dispatchers: the module-level name they were bound to
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None)
    if not module or not qualname:
        raise ConfigError(f"{obj!r} cannot be named by import path (no __module__/__qualname__)")
    return f"{module}:{qualname}"


def resolve(path: str) -> Any:
    """``module:qualname`` -> the object; ConfigError naming the path on any failure."""
    if not isinstance(path, str):
        raise ConfigError(f"import path must be a string, got {type(path).__name__}")
    module, sep, qualname = path.partition(":")
    if not sep or not module or not qualname:
        raise ConfigError(f"import path must look like 'package.module:name', got {path!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"module {module!r} of {path!r} cannot be imported: {exc}") from exc
    for part in qualname.split("."):
        if part.startswith("<"):
            raise ConfigError(f"{path!r} is not a module-level name")
        if not hasattr(obj, part):
            raise ConfigError(f"{path!r}: {module} has no attribute {qualname!r}")
        obj = getattr(obj, part)
    return obj


def reference(obj: Any) -> str:
    """The import path of a module-level function or class, checked to resolve to ``obj`` itself."""
    path = _path_of(obj)
    if path.startswith("__main__:"):
        raise ConfigError(f"{path.split(':', 1)[1]!r} is defined in __main__, which workers cannot "
                          f"import; move it to an importable module")
    if "<locals>" in path or "<lambda>" in path:
        raise ConfigError(f"{path!r} is not a module-level name; workers can only import those")
    if resolve(path) is not obj:
        raise ConfigError(f"{path!r} does not name {obj!r} (rebound or shadowed); workers would "
                          f"import something else")
    return path


def _is_model(cls: Any) -> bool:
    try:
        from pydantic import BaseModel
    except ImportError:  # pragma: no cover - pydantic is a dependency
        return False
    return isinstance(cls, type) and issubclass(cls, BaseModel)


def _descr(dt: np.dtype) -> Any:
    if dt.hasobject:
        raise ConfigError(f"numpy arrays of dtype {dt} (holding Python objects) cannot be sent to workers")
    return np.lib.format.dtype_to_descr(dt)


def _dtype(descr: Any) -> np.dtype:
    if isinstance(descr, list):  # structured: JSON turned tuples into lists
        descr = [tuple(_dtype_field(f)) for f in descr]
    dt = np.lib.format.descr_to_dtype(descr)
    if dt.hasobject:
        raise TransportError("refusing an object dtype in a run description")
    return dt


def _dtype_field(f: list) -> list:
    out = list(f)
    if len(out) >= 2 and isinstance(out[1], list):
        out[1] = [tuple(_dtype_field(g)) for g in out[1]]
    if len(out) == 3:
        out[2] = tuple(out[2])
    return out


class _Encoder:
    def __init__(self) -> None:
        self._ids: dict[int, int] = {}
        self._keep: list[Any] = []  # keeps encoded objects alive so their ids stay unique

    def _memo(self, obj: Any) -> tuple[int, bool]:
        key = id(obj)
        if key in self._ids:
            return self._ids[key], True
        self._ids[key] = len(self._ids)
        self._keep.append(obj)
        return self._ids[key], False

    def enc(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return {"$b": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, np.ndarray):
            arr = np.ascontiguousarray(obj)
            return {"$a": [_descr(arr.dtype), list(arr.shape), base64.b64encode(arr.tobytes()).decode()]}
        if isinstance(obj, np.generic):
            return {"$s": [_descr(obj.dtype), base64.b64encode(obj.tobytes()).decode()]}
        if isinstance(obj, np.dtype):
            return {"$dt": _descr(obj)}
        if isinstance(obj, tuple):
            return {"$t": [self.enc(v) for v in obj]}
        if isinstance(obj, (set, frozenset)):
            return {"$set": [self.enc(v) for v in obj], "frozen": isinstance(obj, frozenset)}
        if type(obj) is list and all(type(v) in _PLAIN for v in obj):
            return obj  # lists of plain values (host-program ops): by value, the fast path
        if isinstance(obj, (list, dict)) or dataclasses.is_dataclass(obj) or _is_model(type(obj)):
            ref, seen = self._memo(obj)
            if seen:
                return {"$ref": ref}
            if isinstance(obj, list):
                return {"$l": [self.enc(v) for v in obj], "id": ref}
            if isinstance(obj, dict):
                return {"$m": [[self.enc(k), self.enc(v)] for k, v in obj.items()], "id": ref}
            if isinstance(obj, type):
                return {"$r": reference(obj)}
            cls = type(obj)
            if _is_model(cls):
                fields = {name: self.enc(getattr(obj, name)) for name in cls.model_fields}
                return {"$p": reference(cls), "f": fields, "id": ref}
            fields = {f.name: self.enc(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
            return {"$c": reference(cls), "f": fields, "id": ref}
        if callable(obj):
            return {"$r": reference(obj)}
        raise ConfigError(f"cannot send a {type(obj).__name__} to workers ({obj!r:.80}): use plain "
                          f"data, numpy arrays, dataclasses, pydantic models or module-level functions")


class _Decoder:
    def __init__(self) -> None:
        self._objs: dict[int, Any] = {}

    def _register(self, node: dict, obj: Any) -> None:
        ref = node.get("id")
        if not isinstance(ref, int) or ref in self._objs:
            raise TransportError(f"run description: bad or repeated object id {ref!r}")
        self._objs[ref] = obj

    def dec(self, node: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise TransportError(f"run description nested deeper than {_MAX_DEPTH} levels")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            if all(type(v) in _PLAIN for v in node):
                return node
            return [self.dec(v, depth + 1) for v in node]
        if not isinstance(node, dict) or len(node) < 1:
            raise TransportError(f"run description: unexpected {type(node).__name__}")
        tag = next(iter(node))
        body = node[tag]
        d = depth + 1
        if tag == "$b":
            return base64.b64decode(body, validate=True)
        if tag == "$a":
            descr, shape, data = body
            dt = _dtype(descr)
            raw = base64.b64decode(data, validate=True)
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if len(raw) != count * dt.itemsize:
                raise TransportError(f"run description: array of shape {shape} {dt} carries {len(raw)} B")
            return np.frombuffer(raw, dt).reshape(shape).copy()
        if tag == "$s":
            descr, data = body
            return np.frombuffer(base64.b64decode(data, validate=True), _dtype(descr))[0]
        if tag == "$dt":
            return _dtype(body)
        if tag == "$t":
            return tuple(self.dec(v, d) for v in body)
        if tag == "$set":
            items = [self.dec(v, d) for v in body]
            return frozenset(items) if node.get("frozen") else set(items)
        if tag == "$ref":
            if body not in self._objs:
                raise TransportError(f"run description: reference to unknown object {body!r}")
            return self._objs[body]
        if tag == "$l":
            out: list = []
            self._register(node, out)
            out.extend(self.dec(v, d) for v in body)
            return out
        if tag == "$m":
            m: dict = {}
            self._register(node, m)
            for k, v in body:
                m[self.dec(k, d)] = self.dec(v, d)
            return m
        if tag == "$r":
            return resolve(body)
        if tag in ("$c", "$p"):
            return self._instance(tag, node, d)
        raise TransportError(f"run description: unknown tag {tag!r}")

    def _instance(self, tag: str, node: dict, depth: int) -> Any:
        cls = resolve(node[tag])
        fields = node.get("f")
        if not isinstance(fields, dict):
            raise TransportError(f"run description: {node[tag]} without fields")
        if tag == "$p":
            if not _is_model(cls):
                raise TransportError(f"run description: {node[tag]} is not a pydantic model")
            obj = cls(**{k: self.dec(v, depth) for k, v in fields.items()})
            self._register(node, obj)
            return obj
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TransportError(f"run description: {node[tag]} is not a dataclass")
        names = {f.name for f in dataclasses.fields(cls)}
        if set(fields) != names:
            raise TransportError(f"run description: {node[tag]} fields {sorted(fields)} differ from "
                                 f"this installation's {sorted(names)} (different spin versions?)")
        obj = cls.__new__(cls)
        self._register(node, obj)
        for name, value in fields.items():
            object.__setattr__(obj, name, self.dec(value, depth))
        return obj


def encode(obj: Any) -> bytes:
    """JSON bytes describing ``obj``; ConfigError naming anything that cannot travel as data."""
    return json.dumps(_Encoder().enc(obj), separators=(",", ":")).encode()


def decode(data: bytes | str) -> Any:
    """Inverse of ``encode``; TransportError on malformed input (never executes named code)."""
    try:
        tree = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TransportError(f"run description is not valid JSON: {exc}") from None
    try:
        return _Decoder().dec(tree)
    except (TransportError, ConfigError):
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise TransportError(f"malformed run description: {type(exc).__name__}: {exc}") from None
