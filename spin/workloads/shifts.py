"""Random shifts: every host sends ``message_bytes`` to the hosts ``shifts`` random offsets
away (the same offsets for every host, drawn from the seed), all at once. An all-to-all is the
union of the n - 1 shift permutations h -> h + d; a random sample of them loads every link, in
expectation, as the all-to-all does in proportion, with n x shifts messages instead of
n (n - 1), so a fabric's all-to-all bandwidth can be measured at thousands of hosts.
"""
from __future__ import annotations

import numpy as np
from pydantic import Field

from .common import (Flow, Workload, begin_iteration, check_hosts, check_memory, check_qps,
                     prepare, start_skews_ns)
from .declare import WorkloadParams, builder


class ShiftsParams(WorkloadParams):
    shifts: int = Field(64, ge=1, le=65_535, description="offsets (at most hosts - 1)")


def offsets(n: int, shifts: int, seed: int) -> list[int]:
    """``shifts`` distinct offsets in 1..n-1 (all of them when there are no more), sorted."""
    if shifts >= n - 1:
        return list(range(1, n))
    rng = np.random.default_rng([seed, 0x5F])
    return sorted(int(d) for d in rng.choice(np.arange(1, n), size=shifts, replace=False))


@builder("shifts", ShiftsParams)
def shifts(sc, p: ShiftsParams) -> Workload:
    """Each host sends ``message_bytes`` to host (h + d) mod n for each offset d, then waits for
    the as many messages it receives, once per iteration. Send buffer: one chunk per offset;
    receive buffer: one per offset (the chunk from h - d)."""
    n = check_hosts(sc, "shifts", 2)
    check_qps(sc, p.qp, 1)
    ds = offsets(n, p.shifts, p.seed)
    c, k = p.message_bytes, len(ds)
    check_memory(sc, "shifts", 2 * k * c, f"send and receive buffers of {k} x {c:,} B")
    wl = Workload("shifts", p.label or "shifts", tuple(range(n)), p.iterations,
                  send_bytes=k * c, recv_addr=k * c, fill=p.fill)
    prepare(sc, wl, range(n))
    skews = start_skews_ns(p.seed, p.start_skew_ns, p.iterations, n)
    for it in range(p.iterations):
        for h in range(n):
            prog = begin_iteration(sc.host_program(h), wl, it, skews[it, h])
            for j, d in enumerate(ds):
                peer = (h + d) % n
                prog.send(peer, c, qp=p.qp, local_addr=j * c, remote_addr=(k + j) * c)
                wl.flows.append(Flow(h, peer, p.qp, c, j * c, (k + j) * c, it))
            prog.wait_recv(qp=p.qp, count=k).mark(wl.end_label(it))
    return wl
