"""What a port-selection scheme is and what it sees: the API of load-balancing schemes.

A switch forwards a frame towards its destination over one of the equal-cost ports of a
*route group*; when the group has several ports, the switch's scheme picks one. A scheme is a
module that declares ``SCHEME = PortScheme(...)``.

Schemes written outside spin (the common case: a researcher's own package) are **compiled
apart** from the engine, as handlers are: the engine calls them through an entry address, so a
new or edited scheme compiles alone in about a second and never recompiles the engine. Their
``select`` function takes one argument, a ``SchemeView``, and returns the local port to use,
one of ``view.ports``::

    from spin.port_selection import PortScheme, next_random, port_load

    def two_choices(view):
        a = view.ports[next_random(view) % view.ports.shape[0]]
        b = view.ports[next_random(view) % view.ports.shape[0]]
        return a if port_load(view, a) <= port_load(view, b) else b

    SCHEME = PortScheme(name="two_choices", select=two_choices, per_packet=True,
                        summary="the less loaded of two random ports")

A scenario names it by import path (``load_balancing = "mypkg.two_choices"``, or
``"mypkg.two_choices:SCHEME"``) or, once an installed package publishes it under the
entry-point group ``spin.schemes``, by its entry point's name. The schemes shipped in
``switch_emulator.lb`` are compiled into the engine instead (a static branch each, inlined) and
use the engine's internal signature.

What a scheme may read: the view's fields and the accessors below (queue occupancy of the
switch's ports, link state, the frame's headers, the switch's random stream and hash seed, the
virtual time). What it may change: its own per-switch memory (``view.memory``) and, through
``next_random``, the switch's random stream. Everything is a function of the frames the switch
has seen, so results are identical however the fabric is split over worker processes. Like
handlers, schemes run on the switch's own silicon: no object mode, no C calls, no recursion
(``spin.handler_sandbox``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import overload

from spin.engine import state as S
from spin.engine.handler_abi import array_at, readonly_array_at
from spin.engine.layout import SCHEME_CALL_WORDS
from spin.jit import njit
from spin.wire.flow_hash import flow_hash as _flow_hash

# words of a scheme's call block (written by switch_emulator.lb.apart, read by unpack_scheme_call)
SB_NOW = 0           # virtual time, ps
SB_SWITCH = 1        # the switch's index among the fabric's switches
SB_GROUP = 2         # the route group
SB_DST = 3           # destination node of the frame
SB_SEED = 4          # the switch's hash seed
SB_N_PORTS = 5       # ports of the switch
SB_PORTS = 6         # address, count: the group's local ports (int32)
SB_PORT_ROWS = 8     # address of the switch's first row of st.port
SB_MEMORY = 9        # address, entries: the switch's rows of st.lb_table
SB_RNG = 11          # address of the switch's random state word
SB_FRAME = 12        # address, length: the frame's bytes in its slot
assert SB_FRAME + 2 <= SCHEME_CALL_WORDS

LB_WORDS = S.LB_WORDS     # int64 words per entry of a scheme's memory
DOWN_LOAD = np.int64(1) << 62   # port_load of a port whose link is down


def no_table(n_route_groups: int) -> int:
    """A scheme that keeps no per-switch memory needs one (unused) entry."""
    return 1


@dataclass(frozen=True)
class PortScheme:
    """A port-selection scheme, declared once by its module as ``SCHEME``.

    ``select``: the scheme's function. Compiled apart (a scheme from outside spin):
    ``select(view: SchemeView) -> local port``, a plain Python function (spin compiles it with
    Numba, bounds-checked). Shipped in ``switch_emulator.lb``: a Numba function ``(st, dev,
    slot, group, first, count, now) -> local port`` compiled into the engine.
    ``table_entries(n_route_groups)``: entries of per-switch memory the scheme needs
    (``LB_WORDS`` int64 words each; e.g. one per route group, or a fixed hash table).
    ``per_packet``: packets of one flow may take different paths (the study flags reordering,
    and a transport without out-of-order placement is refused for multi-packet messages)."""

    name: str
    select: Any
    summary: str
    table_entries: Callable[[int], int] = no_table
    per_packet: bool = False

    def __post_init__(self) -> None:
        """Declared types held: ``per_packet="no"`` is truthy and declared the opposite."""
        from .errors import ConfigError
        for field, want in (("name", str), ("summary", str), ("per_packet", bool)):
            value = getattr(self, field)
            if not isinstance(value, want):
                raise ConfigError(f"PortScheme({field}={value!r}): expected "
                                  f"{'True or False' if want is bool else 'a string'}")
        if not callable(self.table_entries):
            raise ConfigError(f"PortScheme(table_entries={self.table_entries!r}): expected a "
                              f"function of the switch's port count")


class SchemeView(NamedTuple):
    """What a scheme compiled apart sees of one forwarding decision (all integers int64
    unless said; times in ps, sizes in bytes).

    ``ports``: the candidate local ports (int32; at least two: a one-port group is forwarded
    without asking the scheme). ``port_rows``: the switch's rows of the engine's port table
    (read it through ``port_load``, ``queued_bytes`` and ``link_up``, not by column).
    ``memory``: the scheme's per-switch memory, ``(table_entries, LB_WORDS)`` int64, zero at the
    start of a run. ``frame``: the frame's bytes from its Ethernet header on (uint8; with
    generated payload, the headers and as much payload as the slot keeps). ``rng``: the
    switch's random state (use ``next_random``). ``seed``: the switch's hash seed.
    ``ports``, ``port_rows`` and ``frame`` are read-only: a scheme that writes to them does not
    compile."""

    now_ps: int
    switch: int
    group: int
    dst_node: int
    seed: int
    n_ports: int
    ports: Any
    port_rows: Any
    memory: Any
    rng: Any
    frame: Any


@njit(cache=True, inline="always", _nrt=False)
def unpack_scheme_call(block):
    """The scheme's view of a call block (``switch_emulator.lb.apart`` writes it)."""
    b = array_at(block, SCHEME_CALL_WORDS, np.int64)
    return SchemeView(
        b[SB_NOW], b[SB_SWITCH], b[SB_GROUP], b[SB_DST], b[SB_SEED], b[SB_N_PORTS],
        readonly_array_at(b[SB_PORTS], b[SB_PORTS + 1], np.int32),
        readonly_array_at(b[SB_PORT_ROWS], (b[SB_N_PORTS], S.PORT_COLS), np.int64),
        array_at(b[SB_MEMORY], (b[SB_MEMORY + 1], S.LB_WORDS), np.int64),
        array_at(b[SB_RNG], 1, np.int64),
        readonly_array_at(b[SB_FRAME], b[SB_FRAME + 1], np.uint8))


def as_port(port):
    """A scheme's answer as the engine's int64 local port (typed check: see the overload)."""
    return np.int64(port)


@overload(as_port)
def _as_port_typed(port):
    if isinstance(port, (types.Integer, types.IntegerLiteral)):
        return lambda port: np.int64(port)
    what = "nothing (a missing return)" if port in (types.none, types.void) else str(port)
    raise TypingError(f"the scheme returns {what}; select(view) returns a local port, an int "
                      f"(one of view.ports)")


@njit(cache=True, inline="always", _nrt=False)
def link_up(view, port):
    """True while the link of local port ``port`` is up (faults take links down)."""
    return view.port_rows[port, S.PT_UP] != 0


@njit(cache=True, inline="always", _nrt=False)
def queued_bytes(view, port):
    """Bytes waiting at local port ``port``'s egress (data and priority queues), whatever the
    link's state."""
    return view.port_rows[port, S.PT_Q_BYTES] + view.port_rows[port, S.PT_PQ_BYTES]


@njit(cache=True, inline="always", _nrt=False)
def port_load(view, port):
    """``queued_bytes``, or ``DOWN_LOAD`` (2**62) for a port whose link is down, so that a
    scheme choosing the least loaded port never picks a dead one."""
    if view.port_rows[port, S.PT_UP] == 0:
        return DOWN_LOAD
    return view.port_rows[port, S.PT_Q_BYTES] + view.port_rows[port, S.PT_PQ_BYTES]


@njit(cache=True, inline="always", _nrt=False)
def next_random(view):
    """The switch's next pseudo-random number, 63 bits (xorshift64, the stream the shipped
    schemes draw from: a scheme apart that draws as ``random_spray`` does picks the same
    ports)."""
    x = view.rng[0]
    x ^= x << 13
    x ^= (x >> 7) & 0x01FFFFFFFFFFFFFF     # logical shift on a signed word
    x ^= x << 17
    view.rng[0] = x
    return x & 0x7FFFFFFFFFFFFFFF


@njit(cache=True, inline="always", _nrt=False)
def flow_hash(view):
    """The 32-bit hash of the frame's 5-tuple with the switch's seed: ECMP's hash, so
    ``view.ports[flow_hash(view) % view.ports.shape[0]]`` is ECMP's choice."""
    return _flow_hash(view.frame, view.seed)


__all__ = ["DOWN_LOAD", "LB_WORDS", "PortScheme", "SchemeView", "flow_hash", "link_up",
           "next_random", "no_table", "port_load", "queued_bytes"]
