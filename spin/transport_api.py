"""What a NIC transport from outside spin owns, and where: the API of transports compiled apart.

A transport is a module of eight functions (the contract in ``nic_emulator.transports``'
docstring: ``tx_step``, ``carries``, ``admit``, ``find_message``, ``accepted``, ``on_control``,
``on_trimmed``, ``on_timeout``), registered by a ``spin.transports.TransportOption`` that an
installed package publishes under the entry-point group ``spin.transports``. spin's own
transports are compiled into the engine; one from outside spin is **compiled apart**: its
functions, and the engine functions they call (``nic_emulator.transports.sending``,
``connections``, ``spin.engine.heap``...), are compiled into a module of their own the first
time a run uses it (``spin.assembly.transport_entries``), and the engine calls them through
their entry addresses. Nothing of the engine is recompiled when the transport is installed,
edited or removed.

Its functions see the whole engine state ``st`` as spin's own transports do (the same arrays,
passed by reference). What it declares (``spin.engine.columns.Declares`` in its declaration
modules: connection columns, per-NIC columns, counters, parameters) is laid out in three tables
of its own, not in the engine's, so that they can change without a new engine:

``st.apart_conn[c, COLUMNS.conn.NAME]``
    per connection (``c``: a row of ``st.conn``, opened by ``connections.connection``; zero when
    the connection opens).
``st.apart_dev[dev, COLUMNS.dev.NAME]`` and ``st.apart_dev[dev, COLUMNS.ntr.NAME]``
    per NIC: its columns, then its counters (reported as ``NicStats.own_counters``, by name in
    lower case). Zero at the start of a run.
``st.apart_params[COLUMNS.params.NAME]``
    its parameters, from its ``fill(tc, env)`` (``tc.table(kind)`` is its ``[nic.transport.<kind>]``
    table, validated by its ``PARAMS``).

``COLUMNS = own_columns(DECLARES)`` in the declaration module numbers them (from 0 in each
table, parts in the order given, which must be the order its ``TransportOption.declares``
names their modules in); Numba reads the namedtuple's fields as constants.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Any, NamedTuple

from .engine.columns import Declares, Table


class OwnColumns(NamedTuple):
    """Column indices of a transport compiled apart, one namedtuple per table part."""

    conn: Any      # of st.apart_conn
    dev: Any       # of st.apart_dev
    ntr: Any       # of st.apart_dev, after the dev columns: its counters
    params: Any    # of st.apart_params


@dataclass(frozen=True)
class OwnLayout:
    """The tables of a transport compiled apart, assembled from its ``Declares``."""

    conn: Table
    dev: Table
    ntr: Table
    params: Table
    parts: tuple[Declares, ...]

    @property
    def dev_width(self) -> int:
        """Columns of ``st.apart_dev``: its per-NIC columns, then its counters."""
        return self.dev.width + self.ntr.width


def own_layout(*parts: Declares) -> OwnLayout:
    """The tables of ``parts`` (one transport's, in order): names checked as the engine's are
    (upper-case identifiers, none declared twice, owners that name modules)."""
    for part in parts:
        if not isinstance(part, Declares):
            raise TypeError(f"own_columns: {part!r} is a {type(part).__name__}, not a "
                            f"spin.engine.columns.Declares")

    def table(name: str, prefix: str, attr: str) -> Table:
        return Table(f"apart_{name}", prefix, f"APART_{name.upper()}_COLS",
                     [c for c in (p.columns(attr) for p in parts) if c is not None])
    return OwnLayout(conn=table("conn", "C_", "conn"), dev=table("dev", "D_", "dev"),
                     ntr=table("ntr", "NT_", "ntr"), params=table("params", "P_", "trp"),
                     parts=tuple(parts))


def own_transport_layout(kind: str) -> OwnLayout | None:
    """The tables of transport ``kind`` when it is compiled apart, else None (spin's own)."""
    from .transports import is_shipped, own_declarations
    if is_shipped(kind):
        return None
    return own_layout(*own_declarations(kind))


def _indices(typename: str, table: Table, offset: int = 0) -> Any:
    names = list(table.columns)
    return namedtuple(typename, names)(*(table.columns[n].index + offset for n in names))


def own_columns(*parts: Declares) -> OwnColumns:
    """The column indices of a transport compiled apart, from its ``Declares`` (``DECLARES``
    of its declaration modules, in registration order). A field of several columns gives its
    first."""
    layout = own_layout(*parts)
    return OwnColumns(conn=_indices("ConnColumns", layout.conn),
                      dev=_indices("DevColumns", layout.dev),
                      ntr=_indices("CounterColumns", layout.ntr, layout.dev.width),
                      params=_indices("ParamColumns", layout.params))


__all__ = ["OwnColumns", "OwnLayout", "own_columns", "own_layout", "own_transport_layout"]
