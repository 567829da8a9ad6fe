"""HammingMesh (Hoefler et al., "HammingMesh: a network topology for large-scale deep learning",
SC22): boards of ``board_rows x board_cols`` accelerators wired as a 2D mesh on the board, and
``rows x cols`` boards. Each accelerator has four ports (north, south, west, east). A port that
would leave the board goes to a network instead: every row of accelerators across a row of boards
is joined by one fat tree (its 2 * cols west/east board-edge ports), every column of accelerators
across a column of boards by another (2 * rows north/south ports). A network is one switch when
it fits in ``switch_radix`` ports, else a non-blocking two-level fat tree of such switches.
With ``share_networks`` one fat tree per row of boards joins all its accelerator rows (2 * a *
cols ports), and one per column of boards its accelerator columns: fewer, larger networks with
the same bisection.

How an accelerator is modelled. An accelerator forwards for its board neighbours, so it is a
switch: a router with ``role = "accelerator"`` that owns the accelerator's four mesh/network
ports. Its NIC (the sPIN device, where handlers run and the node id lives) is a host attached to
that router by one fast ``internal`` link (default ``internal_rate_gbps = 1600``, the largest
``LinkConfig`` rate, and 1 ns: an on-package hop, negligible next to board and cable latency).
The router's pipeline latency is ``router_latency_ns`` (default: ``[switch] latency_ns``).
Routing sends packets along shortest paths through routers and network switches, so a packet
crosses the board mesh to the edge accelerator that owns the right network port, as in the paper.
The inventory counts internal links apart and gives them unbounded capacity in the bisection.
"""
from __future__ import annotations

from pydantic import Field

from ..config import MAX_DELAY_NS, LinkConfig
from ..topology import Topology
from .clos import join, join_counts
from .declare import TopologyParams, builder, link_config


class HammingMeshParams(TopologyParams):
    board_rows: int = Field(2, ge=1, le=16, description="accelerator rows on a board (a)")
    board_cols: int = Field(2, ge=1, le=16, description="accelerator columns on a board (b)")
    rows: int = Field(2, ge=1, le=64, description="rows of boards (y)")
    cols: int = Field(2, ge=1, le=64, description="columns of boards (x)")
    mesh_rate_gbps: int | None = Field(None, gt=0, le=1600)
    network_rate_gbps: int | None = Field(None, gt=0, le=1600)
    internal_rate_gbps: int = Field(1600, gt=0, le=1600)
    mesh_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    network_latency_ns: float | None = Field(None, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    internal_latency_ns: float = Field(1.0, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    router_latency_ns: float | None = Field(None, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    switch_radix: int = Field(64, ge=4, le=512)
    share_networks: bool = False


def _split_rows(p: HammingMeshParams) -> bool:
    """Cut between halves of the board rows (column networks carry the traffic) when that is
    possible and not cheaper to cut the other way."""
    if p.rows % 2 == 0 and (p.cols % 2 or p.board_cols <= p.board_rows):
        return True
    return False


def _bisection(p: HammingMeshParams, link: LinkConfig) -> float | None:
    """Whole boards on each side. Cutting the board rows in half, each of the cols * b column
    networks has rows ports on each side: cols * b * rows * rate; cutting the board columns,
    rows * a * cols * rate."""
    rate = p.network_rate_gbps or link.rate_gbps
    if _split_rows(p):
        return float(p.cols * p.board_cols * p.rows * rate)
    if p.cols % 2 == 0:
        return float(p.rows * p.board_rows * p.cols * rate)
    return None


def _counts(p: HammingMeshParams, link: LinkConfig) -> tuple[int, int, int]:
    """(hosts, switches, links): a router per accelerator, its internal and board links, and
    the row and column networks (``join``)."""
    a, b = p.board_rows, p.board_cols
    hosts = p.rows * p.cols * a * b
    mesh = p.rows * p.cols * (a * (b - 1) + b * (a - 1))
    switches, links = hosts, hosts + mesh
    per_row, per_col = (a, b) if p.share_networks else (1, 1)
    for networks, members in ((p.rows * a // per_row, 2 * per_row * p.cols),
                              (p.cols * b // per_col, 2 * per_col * p.rows)):
        s, l = join_counts(members, p.switch_radix)
        switches, links = switches + networks * s, links + networks * l
    return hosts, switches, links


@builder("hamming_mesh", HammingMeshParams, _bisection, _counts)
def hamming_mesh(p: HammingMeshParams, link: LinkConfig) -> Topology:
    """HammingMesh: boards of accelerators in a 2D mesh, rows and columns joined by fat trees.
    Routers ``a<R>.<C>.<i>.<j>`` (board row R, board column C, accelerator i, j on the board),
    row networks ``row<r>`` and column networks ``col<c>`` (``...l<n>``/``...s<n>`` when they
    need a fat tree). Hosts are numbered board by board, boards in the order that makes the
    first half of the host ids the first half of the board rows (or of the board columns,
    whichever has less network capacity across it): the worst-case bisection."""
    a, b = p.board_rows, p.board_cols
    mesh = link_config(link, p.mesh_rate_gbps, p.mesh_latency_ns)
    net = link_config(link, p.network_rate_gbps, p.network_latency_ns)
    internal = link_config(link, p.internal_rate_gbps, p.internal_latency_ns)
    t = Topology()
    if _split_rows(p) or p.cols % 2:
        boards = [(R, C) for R in range(p.rows) for C in range(p.cols)]
    else:
        boards = [(R, C) for C in range(p.cols) for R in range(p.rows)]

    def router(R: int, C: int, i: int, j: int) -> str:
        return f"a{R}.{C}.{i}.{j}"

    for R, C in boards:
        for i in range(a):
            for j in range(b):
                r = t.add_switch(router(R, C, i, j), role="accelerator",
                                 latency_ns=p.router_latency_ns)
                t.add_link(t.add_host(), r, internal, kind="internal")
        for i in range(a):
            for j in range(b):
                if j + 1 < b:
                    t.add_link(router(R, C, i, j), router(R, C, i, j + 1), mesh, kind="mesh")
                if i + 1 < a:
                    t.add_link(router(R, C, i, j), router(R, C, i + 1, j), mesh, kind="mesh")
    per_row_net = a if p.share_networks else 1      # accelerator rows per row network
    for n in range(p.rows * a // per_row_net):
        lines = [divmod(g, a) for g in range(n * per_row_net, (n + 1) * per_row_net)]
        ports = [router(R, C, i, j) for R, i in lines for C in range(p.cols) for j in (0, b - 1)]
        join(t, f"row{n}", ports, p.switch_radix, net, net, "row")
    per_col_net = b if p.share_networks else 1      # accelerator columns per column network
    for n in range(p.cols * b // per_col_net):
        lines = [divmod(g, b) for g in range(n * per_col_net, (n + 1) * per_col_net)]
        ports = [router(R, C, i, j) for C, j in lines for R in range(p.rows) for i in (0, a - 1)]
        join(t, f"col{n}", ports, p.switch_radix, net, net, "column")
    return t
