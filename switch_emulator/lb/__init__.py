"""Load-balancing schemes of a switch: how a frame's egress port is chosen out of the equal-cost
group towards its destination (``select_port``, generated into the engine module by
``switch_emulator.routing.dispatch_source``, dispatches on the switch's ``D_SW_LB`` column).

Adding a scheme is one file in this package: a Numba function with the common signature and a
module-level declaration, found by ``registry.port_schemes`` (no other file names it)::

    @njit(cache=True, _nrt=False)
    def my_port(st, dev, slot, group, first, count, now):
        ...                                    # -> a local port number
    SCHEME = PortScheme(name="my_scheme", select=my_port, summary="one line for `spin lb --list`")

From then on ``SwitchConfig(load_balancing="my_scheme")``, ``Scenario.load_balancing``,
``[loadbalancing] scheme = "my_scheme"`` and ``spin lb --schemes my_scheme`` accept it, and the
next engine build dispatches to it. ``PortScheme.table_entries`` sizes the scheme's per-switch
memory (below); ``per_packet=True`` marks schemes whose packets of one flow may take different
paths.

``st.rport[first:first + count]`` are the local ports of route group ``group`` (``st.dev[dev, D_PORT0]`` plus a
local port is the global port, whose queue ``common.port_load`` reads); ``st.pool[slot]`` is the
frame; ``now`` is the virtual time in ps. Per-switch memory lives in ``st.lb_table[st.dev[dev,
D_SW]]`` (``LB_WORDS`` words per entry, sized by ``table_entries``) and a per-switch PRNG in
``common.next_random``: everything is a function of the frames a switch has seen, so results
are identical however the fabric is split over worker processes. A scheme with per-switch
state of its own in ``st.dev`` declares those columns next to it, in ``<scheme>_columns.py``
(``DECLARES = Declares(owner=..., dev=[...])``, as ``flowlet_columns.py`` does); the engine
lays ``st.dev`` out from every ``*columns`` module here (``spin.scheme_parts``).

Each module's docstring describes its scheme and cites its paper; ``spin lb --list`` lists
them with their summaries. ``ecmp`` (a per-flow hash of the 5-tuple) is the default and code 0.
"""
__all__ = ["PortScheme", "port_schemes", "scheme_code", "scheme_names", "table_entries"]


def __getattr__(name: str):
    """The registry's names, imported on first use: the engine lays its tables out from the
    schemes' declaration modules in this package (``columns``, ``flowlet_columns``), which
    must import nothing compiled."""
    if name in __all__:
        from . import registry
        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
