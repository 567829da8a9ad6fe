"""The rank grid of a two-dimensional allreduce: ranks on a q x p torus, rows and columns each a
ring, and the streams that split the vector across the directions (``spin.collectives.ring2d``).

On a HammingMesh the grid is the accelerators' own: row i of the grid is an accelerator row
across a row of boards, in board-column then on-board order, so a row ring leaves each
accelerator by its east port (a board trace, or at the board's edge the row network to the next
board) and the last accelerator's east port closes the ring through the row network to the
first one's west port; columns likewise with the south and north ports. Elsewhere the grid is
the ranks in id order cut into rows of p, with p x q = n as close to square as n allows (fewest
ring steps, p + q), so a row's ranks are neighbours under one leaf or edge switch; on a
rail-optimised fabric a row is a server's GPUs and a column one rail.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError

# A stream is (the dimension it reduces first, ring direction); each takes an equal share of
# the vector. Four streams put one on every direction of every port of a four-port
# accelerator in both phases: in the first phase the row-first streams use the east/west
# ports (one direction each) while the column-first ones use north/south, and they swap.
STREAMS: dict[int, tuple[tuple[str, int], ...]] = {
    1: (("row", 1),),
    2: (("row", 1), ("column", 1)),
    4: (("row", 1), ("row", -1), ("column", 1), ("column", -1)),
}


@dataclass(frozen=True)
class Grid:
    """Ranks (indices into the plan's hosts) on a torus: ``rows[i][j]`` is the rank in row i
    at column j; row i's ring runs j = 0, 1, ..., p-1 and back to 0, column j's ring runs
    i = 0, ..., q-1."""

    rows: tuple[tuple[int, ...], ...]

    @property
    def p(self) -> int:
        """Ranks per row."""
        return len(self.rows[0])

    @property
    def q(self) -> int:
        """Ranks per column (the number of rows)."""
        return len(self.rows)

    @property
    def columns(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(row[j] for row in self.rows) for j in range(self.p))

    def rings(self, dim: str, sign: int) -> tuple[tuple[int, ...], ...]:
        """The rings along ``dim`` ("row" or "column"), reversed for ``sign`` -1."""
        lines = self.rows if dim == "row" else self.columns
        return tuple(line[::sign] for line in lines)

    def positions(self, dim: str, sign: int) -> dict[int, tuple[tuple[int, ...], int]]:
        """rank -> (its ring along ``dim`` in direction ``sign``, its position there)."""
        return {rank: (ring, i) for ring in self.rings(dim, sign) for i, rank in enumerate(ring)}


def near_square(n: int) -> tuple[int, int]:
    """(q, p) with q * p = n, q <= p and q as large as possible: fewest ring steps."""
    q = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return q, n // q


def id_order_grid(n: int, shape: tuple[int, int] | None = None) -> Grid:
    """Ranks 0..n-1 in rows of p consecutive ranks; ``shape`` (q, p) or the nearest square."""
    q, p = shape if shape is not None else near_square(n)
    if q < 1 or p < 1 or q * p != n:
        raise ConfigError(f"ring2d grid {q} x {p}: must hold the {n} ranks exactly "
                          f"(rows x ranks per row = {n})")
    return Grid(tuple(tuple(range(i * p, (i + 1) * p)) for i in range(q)))


def hamming_mesh_grid(topo, hosts: tuple[int, ...]) -> Grid:
    """The accelerator grid of a HammingMesh whose every host is a rank: row (R, i) ordered
    by (C, j) from the routers' names ``a<R>.<C>.<i>.<j>``."""
    from .switch_tree import attachment
    rank_of = {h: r for r, h in enumerate(hosts)}
    rows: dict[tuple[int, int], list[tuple[tuple[int, int], int]]] = {}
    for h, (router, _port) in attachment(topo, hosts).items():
        R, C, i, j = (int(x) for x in router[1:].split("."))
        rows.setdefault((R, i), []).append(((C, j), rank_of[h]))
    return Grid(tuple(tuple(rank for _, rank in sorted(rows[key])) for key in sorted(rows)))


def grid_for(topo, hosts: tuple[int, ...], shape: tuple[int, int] | None = None) -> Grid:
    """With every host a rank and no ``shape``: the accelerator grid on a HammingMesh; on a
    rail-optimised fabric rows of a server's GPUs (joined by NVLink) and columns of one rail
    (``gpus_per_server`` per row), as NCCL's hierarchical allreduce; else ``id_order_grid``."""
    every_host = sorted(hosts) == list(range(len(topo.hosts)))
    if shape is None and every_host and topo.kind == "hamming_mesh":
        return hamming_mesh_grid(topo, hosts)
    if shape is None and every_host and topo.kind == "rail_optimized":
        per_server = int(topo.params["gpus_per_server"])
        shape = (len(hosts) // per_server, per_server)
    return id_order_grid(len(hosts), shape)


def default_streams(topo) -> int:
    """4 on a HammingMesh (every accelerator has four ports), else 1 (a host's one link)."""
    return 4 if topo.kind == "hamming_mesh" else 1


def check_streams(streams: int) -> int:
    if streams not in STREAMS:
        raise ConfigError(f"ring2d streams={streams!r}; valid choices: "
                          f"{', '.join(map(str, STREAMS))}")
    return streams
