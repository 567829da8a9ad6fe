"""Permutation: every host sends one message to another, no host receives twice, none sends to
itself (a random derangement drawn from the seed). The classic load-balancing stress: with
per-flow ECMP some flows collide on a link although every host link carries one flow each way.
"""
from __future__ import annotations

import numpy as np

from .common import (Flow, Workload, begin_iteration, check_hosts, check_memory, check_qps,
                     prepare, start_skews_ns)
from .declare import WorkloadParams, builder


class PermutationParams(WorkloadParams):
    pass


def derangement(n: int, seed: int) -> list[int]:
    """A uniformly random permutation without fixed points (rejection: ~e draws expected)."""
    rng = np.random.default_rng([seed, 0xD3])
    idx = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == idx):
            return [int(x) for x in perm]


@builder("permutation", PermutationParams)
def permutation(sc, p: PermutationParams) -> Workload:
    """Each host sends ``message_bytes`` to its image under a random derangement, then waits
    for the one message it receives, once per iteration."""
    n = check_hosts(sc, "permutation", 2)
    check_qps(sc, p.qp, 1)
    size = p.message_bytes
    check_memory(sc, "permutation", 2 * size, f"send and receive buffers of {size:,} B")
    wl = Workload("permutation", p.label or "permutation", tuple(range(n)), p.iterations,
                  send_bytes=size, recv_addr=size, fill=p.fill)
    prepare(sc, wl, range(n))
    dst = derangement(n, p.seed)
    skews = start_skews_ns(p.seed, p.start_skew_ns, p.iterations, n)
    for it in range(p.iterations):
        for h in range(n):
            prog = begin_iteration(sc.host_program(h), wl, it, skews[it, h])
            prog.send(dst[h], size, qp=p.qp, local_addr=0, remote_addr=size)
            prog.wait_recv(qp=p.qp, count=1).mark(wl.end_label(it))
            wl.flows.append(Flow(h, dst[h], p.qp, size, 0, size, it))
    return wl
