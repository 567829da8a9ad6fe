"""Engine tables declared as lists of named columns, compiled to integer column constants.

The engine keeps each entity in one int64 2-D table (``st.dev``, ``st.port``, ``st.conn``...) and
jitted code indexes it with module-level integer constants (``st.dev[d, S.D_KIND]``). Numbering
those by hand let columns overlap, leave gaps and drift from the allocated width. Here, as
``spin.wire.fields`` declares headers, a table is declared once as the ordered concatenation of
its owners' column lists; the constants (``prefix + NAME``) and the width are derived from it, so
columns are contiguous from 0 by construction and a name declared twice raises at import.

A column spec is ``(NAME, doc)`` or ``(NAME, width, doc)``: a field of ``width`` consecutive
columns (handler calls per kind, transport counters, ...) whose constant is its first column.
``Table.row(values)`` reads one row by name (``RowView``), so results never hard-code indices.
"""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import StateLayoutError

Spec = tuple[str, str] | tuple[str, int, str]


@dataclass(frozen=True)
class Column:
    """One declared field: ``width`` columns from ``index``, declared by ``owner``."""

    name: str
    index: int
    width: int
    owner: str
    doc: str


@dataclass(frozen=True)
class Columns:
    """The columns one owner (a module or package, named as imported) declares in a table."""

    owner: str
    specs: tuple[Spec, ...]

    def __init__(self, owner: str, specs: Sequence[Spec]) -> None:
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "specs", tuple(specs))


@dataclass(frozen=True)
class Declares:
    """What one part of a NIC transport (or of the shipped port-selection schemes: ``dev``
    only, ``spin.scheme_parts``) owns, declared next to its code in a declaration module
    (``DECLARES``) that the transport's registration names (``spin.transports``) and that
    imports nothing compiled: its columns of ``st.conn`` (per connection), of the NIC's
    transport counters (``ntr``, read back as ``NicStats``-like counters), of ``st.dev`` (per
    NIC) and its parameters (``trp``, one vector for the fabric), and ``fill(tc, env)``, which
    returns its parameters' values ``{TRP name: int}`` from the ``spin.config.TransportConfig``
    (``env``: ``mtu`` and ``host_rate_gbps``). ``spin.engine.layout`` assembles the tables from
    every registered part, in registration order."""

    owner: str
    conn: tuple[Spec, ...] = ()
    ntr: tuple[Spec, ...] = ()
    dev: tuple[Spec, ...] = ()
    trp: tuple[Spec, ...] = ()
    fill: Callable[[Any, Any], Mapping[str, int]] | None = None

    def __post_init__(self) -> None:
        for name in ("conn", "ntr", "dev", "trp"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.trp and self.fill is None:
            raise StateLayoutError(f"{self.owner}: declares parameters "
                                   f"{[s[0] for s in self.trp]} but no fill(tc, env)")

    def columns(self, table: str) -> Columns | None:
        """Its part of ``table`` (``conn``, ``ntr``, ``dev`` or ``trp``), or None."""
        specs = getattr(self, table)
        return Columns(self.owner, specs) if specs else None


def _parse(spec: Spec, owner: str) -> tuple[str, int, str]:
    if len(spec) == 2:
        name, doc = spec         # type: ignore[misc]
        width = 1
    elif len(spec) == 3:
        name, width, doc = spec  # type: ignore[misc]
    else:
        raise StateLayoutError(f"{owner}: column spec {spec!r} is not (NAME, doc) or "
                               f"(NAME, width, doc)")
    if not isinstance(name, str) or not name.isidentifier() or name.upper() != name:
        raise StateLayoutError(f"{owner}: column name {name!r} must be an UPPER_CASE identifier")
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise StateLayoutError(f"{owner}: column {name!r} has width {width!r}; it must be an "
                               f"int >= 1")
    return name, width, str(doc)


_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _is_module(module: str) -> bool:
    """Does ``module`` name a module or package? Looked up on disk in the project (importing
    nothing), else found on ``sys.path`` (a transport from outside spin: only its parent
    packages are imported, which its declaration module already imported)."""
    path = _PROJECT_ROOT.joinpath(*module.split("."))
    if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
        return True
    if module in sys.modules:   # imported already (a script's own module is "__main__")
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _check_owner(table: str, part: Columns) -> None:
    """An owner names a module or package (``pkg.mod``, optionally followed by a qualifier in
    parentheses): a renamed or deleted owner is an error at import, not a label that silently
    points nowhere. The project's owners are checked on disk, so the engine imports none."""
    module = part.owner.split(" ", 1)[0]
    if not _is_module(module):
        first = _parse(part.specs[0], part.owner)[0] if part.specs else "?"
        raise StateLayoutError(f"table {table!r}: columns from {first} on are declared by "
                               f"{part.owner!r}, which names no importable module")


_LINE_WORDS = 8   # int64 columns per 64-byte cache line


class Table:
    """A table's layout: its owners' columns in order, numbered from 0 without gaps.

    ``prefix`` makes the constants (``D_`` + ``KIND`` -> ``D_KIND``); ``count`` names the
    constant holding the width (``DEV_COLS``). ``whole_lines`` rounds the width up to whole
    64-byte lines of int64 columns, so that rows allocated on a line start on one and each
    column sits at the same place in its line in every row."""

    def __init__(self, name: str, prefix: str, count: str, parts: Sequence[Columns],
                 whole_lines: bool = False) -> None:
        self.name, self.prefix, self.count_name = name, prefix, count
        self.parts = tuple(parts)
        cols: dict[str, Column] = {}
        index = 0
        for part in self.parts:
            for spec in part.specs:
                col_name, width, doc = _parse(spec, part.owner)
                if col_name in cols:
                    raise StateLayoutError(
                        f"table {name!r}: column {col_name!r} declared by {part.owner} is "
                        f"already declared by {cols[col_name].owner}")
                cols[col_name] = Column(col_name, index, width, part.owner, doc)
                index += width
        for part in self.parts:
            _check_owner(name, part)
        self.columns: Mapping[str, Column] = MappingProxyType(cols)
        self.used = index   # columns declared; the rest of a whole-lines row is unused
        self.width = -(-index // _LINE_WORDS) * _LINE_WORDS if whole_lines else index
        self.whole_lines = whole_lines

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {len(self.columns)} fields, {self.width} columns)"

    def index(self, name: str) -> int:
        """First column of field ``name``."""
        return self._column(name).index

    def _column(self, name: str) -> Column:
        try:
            return self.columns[name.upper()]
        except KeyError:
            raise StateLayoutError(f"table {self.name!r} has no column {name!r}; columns: "
                                   f"{list(self.columns)}") from None

    def constants(self) -> dict[str, int]:
        """``prefix + NAME`` -> first column, and ``count`` -> width (plain Python ints)."""
        out = {self.prefix + c.name: c.index for c in self.columns.values()}
        out[self.count_name] = self.width
        return out

    def row(self, values: Any) -> RowView:
        """Named read-only view of one row (a 1-D array of this table's width)."""
        if len(values) != self.width:
            raise StateLayoutError(f"table {self.name!r}: a row has {self.width} columns, "
                                   f"got {len(values)}")
        return RowView(self, values)

    def describe(self) -> str:
        """The layout as text: index, width, owner, name and meaning of every field."""
        pad = f", {self.width - self.used} unused to end on a line" if self.width > self.used \
            else ""
        lines = [f"{self.name}: {self.width} columns ({self.count_name}){pad}"]
        for c in self.columns.values():
            span = f"{c.index}" if c.width == 1 else f"{c.index}..{c.index + c.width - 1}"
            lines.append(f"  {span:>7}  {self.prefix + c.name:<28} {c.owner:<28} {c.doc}")
        return "\n".join(lines)


class RowView:
    """One table row read by field name: ``row.hpu_busy_ps`` (an int), ``row.hc`` (a tuple of
    ints for a field of several columns); ``row.as_dict()`` gives them all."""

    __slots__ = ("_table", "_values")

    def __init__(self, table: Table, values: Any) -> None:
        self._table, self._values = table, values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            c = self._table._column(name)
        except StateLayoutError as e:
            raise AttributeError(str(e)) from None
        if c.width == 1:
            return int(self._values[c.index])
        return tuple(int(v) for v in self._values[c.index:c.index + c.width])

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name.lower())

    def as_dict(self) -> dict[str, Any]:
        """Field name (lower case) -> value, in column order."""
        return {c.name.lower(): getattr(self, c.name.lower())
                for c in self._table.columns.values()}

    def __repr__(self) -> str:
        return f"{self._table.name}({self.as_dict()})"


class Variants:
    """A variant record, declared once: word 0 holds the variant's code (1, 2, ... in declaration
    order) and the next words its fields, in declaration order. A handler's pending commands
    and a host program's operations are such records: each variant's fields have names here
    instead of positions known to the writer and the reader alike. Constants:
    ``code_prefix + VARIANT`` (the code) and ``field_prefix + VARIANT_FIELD`` (the word)."""

    def __init__(self, name: str, code_prefix: str, field_prefix: str, width: int, owner: str,
                 variants: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        self.name, self.code_prefix, self.field_prefix = name, code_prefix, field_prefix
        self.width, self.owner = width, owner
        self.codes: dict[str, int] = {}
        self.fields: dict[str, tuple[str, ...]] = {}
        self.docs: dict[str, str] = {}
        for code, (variant, doc, fields) in enumerate(variants, start=1):
            if variant in self.codes:
                raise StateLayoutError(f"record {name!r}: variant {variant} declared twice")
            if len(set(fields)) != len(fields):
                raise StateLayoutError(f"record {name!r}: variant {variant} repeats a field")
            if len(fields) > width - 1:
                raise StateLayoutError(f"record {name!r}: variant {variant} has {len(fields)} "
                                       f"fields; a record holds {width - 1} after its code")
            self.codes[variant], self.docs[variant] = code, doc
            self.fields[variant] = tuple(fields)

    def constants(self) -> dict[str, int]:
        out = {self.code_prefix + v: c for v, c in self.codes.items()}
        for v, fields in self.fields.items():
            out.update({f"{self.field_prefix}{v}_{f}": 1 + i for i, f in enumerate(fields)})
        return out

    def record(self, variant: str, **values: int) -> list[int]:
        """One record as a list of ``width`` ints: the variant's code, then its fields by name
        (those not given are 0)."""
        fields = self.fields[variant]
        row = [0] * self.width
        row[0] = self.codes[variant]
        for f, v in values.items():
            try:
                row[1 + fields.index(f.upper())] = int(v)
            except ValueError:
                raise StateLayoutError(f"record {self.name!r}: variant {variant} has no field "
                                       f"{f!r}; fields: {list(fields)}") from None
        return row

    def describe(self) -> str:
        """The variants as text: code, name, fields in word order, meaning."""
        lines = [f"{self.name}: records of {self.width} words ({self.owner})"]
        for v, code in self.codes.items():
            lines.append(f"  {code:>3}  {self.code_prefix + v:<24} "
                         f"[{', '.join(self.fields[v]) or '-'}]  {self.docs[v]}")
        return "\n".join(lines)


def export(tables: Sequence[Table | Variants], namespace: dict[str, Any]) -> dict[str, int]:
    """Write every table's constants into ``namespace`` (a module's globals); a constant that
    another table (or the module itself) already defines raises."""
    made: dict[str, int] = {}
    for t in tables:
        for k, v in t.constants().items():
            if k in made or k in namespace:
                raise StateLayoutError(f"constant {k} of table {t.name!r} is already defined")
            made[k] = v
    namespace.update(made)
    return made
