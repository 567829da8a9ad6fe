"""Data checks of scenario files (``[[check]]``) and memory dumps (``spin run --dump``).

A ``Check`` names a host-memory region and what it must hold after the run: explicit values, the
sum or a copy of initial regions, the contents of a ``.npy`` file (path relative to the scenario
file), or what a Python function named by import path says (``fn(actual) -> expected array or
bool``). Expected data is built when the file is loaded, so a missing file or function fails
before the run. A ``Dump`` is a region written to a ``.npy`` file after the run; both work with
any worker count (the regions come back from the workers that own them).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, host_label
from ..scenario_code import FUNCTION, resolve

DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
          "float64")


@dataclass(frozen=True)
class Check:
    """Expected contents of ``count`` ``dtype`` elements at ``addr`` of host ``node``."""

    where: str                          # "check[0]", for messages
    node: int
    addr: int
    dtype: str
    count: int
    expected: np.ndarray | None = None  # element-wise expectation, or
    predicate: Callable[[np.ndarray], Any] | None = None   # fn(actual) -> array or bool
    source: str = ""                    # where the expectation comes from (file, function)
    host: str = ""                      # the host's name, for messages
    exact: bool = False                 # compare bytes (a copy), not values

    @property
    def nbytes(self) -> int:
        """Size of the region in bytes."""
        return self.count * np.dtype(self.dtype).itemsize

    @property
    def region(self) -> tuple[int, int, int]:
        """(node, addr, nbytes), as ``run_scenario(regions=...)`` takes it."""
        return (self.node, self.addr, self.nbytes)


def _initial_region(sc, node: int, addr: int, nbytes: int) -> np.ndarray:
    buf = np.zeros(sc.host.memory_bytes, np.uint8)
    for n, a, raw in sc.host_memory:
        if n == node:
            buf[a:a + len(raw)] = np.frombuffer(raw, np.uint8)
    return buf[addr:addr + nbytes]


def import_object(ref: str, base_dir: Path | None) -> Any:
    """The function ``"module:function"`` names, if declared with ``@spin.scenario_function``
    (spin.scenario_code); a module that is not importable is looked for next to the scenario
    file (``base_dir``), as handler factories are."""
    try:
        return resolve(ref, FUNCTION, base_dir)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def build_check(c, path: str, sc, node_of: Callable[[Any, str], int],
                error: Callable[[str, Any, str], ConfigError],
                base_dir: Path | None) -> Check:
    """A ``Check`` from a validated ``CheckSpec``; ``node_of(value, path)`` resolves a node,
    ``error(path, value, message)`` builds the loader's ConfigError."""
    node = node_of(c.node, f"{path}.node")
    dt = np.dtype(c.dtype)
    given = {k for k in ("values", "sources", "file", "function") if getattr(c, k) is not None}
    needs = {"values": {"values"}, "sum": {"sources"}, "copy": {"sources"}, "npy": {"file"},
             "function": {"function"}}[c.expect]
    if given != needs:
        raise error(path, c.expect, f"expect = {c.expect!r} takes {', '.join(sorted(needs))} "
                    f"(given: {', '.join(sorted(given)) or 'none'})")
    count = c.count
    if c.expect == "npy":
        arr = _load_npy(c, path, error, base_dir)
        if count is not None and count != arr.size:
            raise error(f"{path}.count", count, f"{c.file} holds {arr.size} elements")
        count = arr.size
    if count is None:
        raise error(f"{path}.count", None, f"required with expect = {c.expect!r}")
    nbytes = count * dt.itemsize
    if c.addr + nbytes > sc.host.memory_bytes:
        raise error(f"{path}.addr", c.addr, f"region of {nbytes} B exceeds host.memory_bytes = "
                    f"{sc.host.memory_bytes}")
    hosts = sc.topology.hosts
    name = hosts[node] if 0 <= node < len(hosts) else ""
    make = lambda **kw: Check(path, node, c.addr, c.dtype, count, host=name, **kw)   # noqa: E731
    if c.expect == "npy":
        return make(expected=arr, source=str(c.file))
    if c.expect == "function":
        try:
            fn = import_object(c.function, base_dir)
        except ValueError as exc:
            raise error(f"{path}.function", c.function, str(exc)) from None
        if not callable(fn):
            raise error(f"{path}.function", c.function, "is not callable")
        return make(predicate=fn, source=c.function)
    if c.expect == "values":
        if len(c.values) != count:
            raise error(f"{path}.values", c.values, f"has {len(c.values)} values, count = {count}")
        return make(expected=np.array(c.values, dtype=dt))
    if c.expect == "copy" and len(c.sources) != 1:
        raise error(f"{path}.sources", [s.model_dump() for s in c.sources],
                    "expect = 'copy' takes exactly one source region")
    if c.expect == "sum" and not c.sources:
        raise error(f"{path}.sources", [], "expect = 'sum' takes at least one source region")
    regions = []
    for k, s in enumerate(c.sources):
        n = node_of(s.node, f"{path}.sources[{k}].node")
        if s.addr + nbytes > sc.host.memory_bytes:
            raise error(f"{path}.sources[{k}].addr", s.addr, "region exceeds host memory")
        regions.append(_initial_region(sc, n, s.addr, nbytes).view(dt))
    if c.expect == "copy":
        return make(expected=regions[0].copy(), exact=True)
    if len(regions) == 1:
        return make(expected=regions[0].copy())
    return make(expected=np.sum(np.stack(regions), axis=0, dtype=dt))


def _load_npy(c, path: str, error, base_dir: Path | None) -> np.ndarray:
    p = Path(c.file)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    try:
        arr = np.load(p, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise error(f"{path}.file", c.file, f"cannot read {p}: {exc}") from None
    if arr.dtype != np.dtype(c.dtype):
        raise error(f"{path}.file", c.file, f"holds {arr.dtype}, the check's dtype is {c.dtype}")
    return arr.reshape(-1)


def evaluate(c: Check, region: np.ndarray) -> tuple[bool, str]:
    """Compare the region (raw bytes after the run) with the check; (passed, report line)."""
    got = np.frombuffer(np.ascontiguousarray(region).tobytes(), c.dtype)
    head = f"{c.where}: host {host_label(c.node, c.host)} addr {c.addr}"
    expected = c.expected
    if c.predicate is not None:
        try:
            out = c.predicate(got.copy())
        except Exception as exc:       # a user's function: report, do not crash the summary
            return False, (f"check FAILED {head}: {c.source} raised {type(exc).__name__}: {exc}")
        if isinstance(out, (bool, np.bool_)):
            verdict = "accepts" if out else "rejects"
            return bool(out), (f"check {'ok' if out else 'FAILED'} {head}: {c.source} {verdict} "
                               f"the {c.count} {c.dtype} elements")
        expected = np.asarray(out)
        if expected.shape != got.shape:
            return False, (f"check FAILED {head}: {c.source} returned shape {expected.shape}, "
                           f"the region has ({c.count},) {c.dtype} elements")
    bad = _differing(c, got, expected)
    if bad.size:
        i = int(bad[0])
        return False, (f"check FAILED {head}: element {i} is {got[i]}, expected {expected[i]} "
                       f"({bad.size} of {got.size} {c.dtype} elements differ)"
                       + (f" [{c.source}]" if c.source else ""))
    return True, (f"check ok {head}: {got.size} {c.dtype} elements as expected"
                  + (f" ({c.source})" if c.source else ""))


def _differing(c: Check, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Indices of the elements that differ: by bytes for a copy (NaN payloads, -0.0 included),
    else by value, where NaN matches NaN for float dtypes (NaN != NaN would fail any NaN)."""
    if c.exact:
        raw = np.dtype(f"u{got.itemsize}")
        return np.flatnonzero(got.view(raw) != np.ascontiguousarray(expected).view(raw))
    bad = got != expected
    if got.dtype.kind == "f":
        try:
            bad &= ~(np.isnan(got) & np.isnan(expected))
        except TypeError:       # a function's output NaN cannot be (objects): values decide
            pass
    return np.flatnonzero(bad)


# --- dumps ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dump:
    """``count`` ``dtype`` elements at ``addr`` of host ``node``, written to ``path`` (.npy)."""

    node: int
    addr: int
    count: int
    dtype: str
    path: Path
    host: str = ""      # the host's name, for messages

    @property
    def region(self) -> tuple[int, int, int]:
        """(node, addr, nbytes), as ``run_scenario(regions=...)`` takes it."""
        return (self.node, self.addr, self.count * np.dtype(self.dtype).itemsize)

    @property
    def label(self) -> str:
        """The host as messages name it: ``'h1' (node 1)``."""
        return host_label(self.node, self.host)

    def write(self, data: bytes) -> Path:
        """Write the region's bytes (read after the run) as a ``.npy`` of ``dtype``, at exactly
        ``path`` (``np.save`` given a name adds ``.npy``), whole or not at all: through a
        temporary file beside it, unless ``path`` is something other than a file (a device)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        array = np.frombuffer(data, self.dtype)
        if self.path.exists() and not self.path.is_file():
            with open(self.path, "wb") as f:
                np.save(f, array)
            return self.path
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        try:
            with open(tmp, "wb") as f:
                np.save(f, array)
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
        return self.path


def parse_dump(spec: str, hosts: list[str], memory_bytes: int) -> Dump:
    """``HOST:ADDR:LEN:DTYPE=FILE.npy``: HOST a node id or host name, ADDR a byte address
    (decimal or 0x hex), LEN a count of DTYPE elements."""
    form = "HOST:ADDR:LEN:DTYPE=FILE.npy"
    where, eq, file = spec.partition("=")
    parts = where.split(":")
    if not eq or not file or len(parts) != 4:
        raise ConfigError(f"--dump {spec!r}: expected {form}")
    host, addr_s, len_s, dtype = parts
    if host in hosts:
        node = hosts.index(host)
    elif host.isdigit() and int(host) < len(hosts):
        node = int(host)
    else:
        shown = ", ".join(hosts[:8]) + (", ..." if len(hosts) > 8 else "")
        raise ConfigError(f"--dump {spec!r}: HOST = {host!r}; valid: node ids "
                          f"0..{len(hosts) - 1} or names {shown}")
    try:
        addr, count = int(addr_s, 0), int(len_s, 0)
    except ValueError:
        raise ConfigError(f"--dump {spec!r}: ADDR = {addr_s!r} and LEN = {len_s!r} must be "
                          f"integers (LEN counts {dtype} elements)") from None
    if dtype not in DTYPES:
        raise ConfigError(f"--dump {spec!r}: DTYPE = {dtype!r}; valid choices: {', '.join(DTYPES)}")
    nbytes = count * np.dtype(dtype).itemsize
    if addr < 0 or count < 1 or addr + nbytes > memory_bytes:
        raise ConfigError(f"--dump {spec!r}: [{addr}, {addr + nbytes}) must lie within host "
                          f"memory of {memory_bytes} B (host.memory_bytes), with LEN >= 1")
    return Dump(node, addr, count, dtype, Path(file), host=hosts[node])
