"""Load-balancing schemes of a switch: how a frame's egress port is chosen out of the equal-cost
group towards its destination (``switch_emulator.routing.select_port`` dispatches on the
switch's ``D_SW_LB`` column).

One module per scheme, each a single Numba function with the same signature, so a new scheme is
a copy of one of them plus one branch in ``select_port`` and one name in ``LB_NAMES``::

    def my_port(st, dev, slot, group, first, count, now) -> local port number

``st.rport[first:first + count]`` are the local ports of route group ``group`` (``st.dev[dev, D_PORT0]`` plus a
local port is the global port, whose queue ``common.port_load`` reads); ``st.pool[slot]`` is the
frame; ``now`` is the virtual time in ps. Per-switch memory lives in ``st.lb_table[st.dev[dev,
D_SW]]`` (``LB_WORDS`` words per entry, sized by ``table_entries``) and a per-switch PRNG in
``common.next_random``: everything is a function of the frames a switch has seen, so results
are identical however the fabric is split over worker processes.

- ``ecmp``: per-flow hash of the 5-tuple (a flow keeps one path; EVs in the UDP source port
  change it).
- ``flowlet``: per-flow hash until the flow pauses longer than ``flowlet_gap_ns``; a new
  flowlet takes the least-loaded port.
- ``adaptive``: per packet, the least-loaded port (switch-local adaptive routing).
- ``drill``: per packet, the less loaded of two random ports and the last best (DRILL).
"""
LB_ECMP = 0
LB_FLOWLET = 1
LB_ADAPTIVE = 2
LB_DRILL = 3
LB_NAMES = ("ecmp", "flowlet", "adaptive", "drill")

FLOWLET_TABLE_ENTRIES = 4096   # per switch, indexed by flow hash (a power of two)


def table_entries(schemes, n_route_groups: int) -> int:
    """Entries of ``st.lb_table`` per switch that the schemes in use need."""
    need = 1
    if "flowlet" in schemes:
        need = max(need, FLOWLET_TABLE_ENTRIES)
    if "drill" in schemes:
        need = max(need, n_route_groups)
    return need
