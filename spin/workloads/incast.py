"""Incast: k senders write ``message_bytes`` each to one receiver at once, so the receiver's
link is the bottleneck (the partition/aggregate and parameter-server pattern). Between
iterations the receiver answers every sender with a 1-byte release on ``qp + 1`` once all k
messages arrived (a request/response round), so bursts do not overlap and each iteration is a
synchronised incast; releases are not workload flows and stay out of the FCT figures.
"""
from __future__ import annotations

import numpy as np
from pydantic import Field

from ..errors import ConfigError
from .common import (Flow, Workload, begin_iteration, check_hosts, check_memory, check_qps,
                     prepare, start_skews_ns)
from .declare import WorkloadParams, builder

RELEASE_BYTES = 1


class IncastParams(WorkloadParams):
    senders: int | None = Field(None, ge=1, description="k; default every other host")
    receiver: int = Field(0, ge=0)


@builder("incast", IncastParams)
def incast(sc, p: IncastParams) -> Workload:
    """``senders`` hosts (drawn from the seed among the others; all others by default) each
    send ``message_bytes`` to ``receiver``, once per iteration."""
    n = check_hosts(sc, "incast", 2)
    if p.receiver >= n:
        raise ConfigError(f"receiver = {p.receiver}: valid hosts are 0..{n - 1}")
    others = [h for h in range(n) if h != p.receiver]
    k = len(others) if p.senders is None else p.senders
    if k > len(others):
        raise ConfigError(f"senders = {k}: at most {len(others)} (every host but the receiver)")
    rng = np.random.default_rng([p.seed, 0x1C])
    senders = others if k == len(others) else sorted(int(x) for x in
                                                     rng.choice(others, k, replace=False))
    check_qps(sc, p.qp, 2)
    size = p.message_bytes
    check_memory(sc, "incast", size * (k + 1), f"a {size:,} B send buffer and {k} receive "
                 f"slots of {size:,} B at the receiver")
    wl = Workload("incast", p.label or "incast", tuple([p.receiver] + senders), p.iterations,
                  send_bytes=size, recv_addr=size, fill=p.fill)
    prepare(sc, wl, senders)
    skews = start_skews_ns(p.seed, p.start_skew_ns, p.iterations, n)
    rx = sc.host_program(p.receiver)
    for it in range(p.iterations):
        begin_iteration(rx, wl, it, 0.0)
        for rank, h in enumerate(senders):
            prog = begin_iteration(sc.host_program(h), wl, it, skews[it, h])
            remote = size * (1 + rank)
            prog.send(p.receiver, size, qp=p.qp, local_addr=0, remote_addr=remote)
            prog.wait_recv(qp=p.qp + 1, count=1).mark(wl.end_label(it))
            wl.flows.append(Flow(h, p.receiver, p.qp, size, 0, remote, it))
        rx.wait_recv(qp=p.qp, count=k).mark(wl.end_label(it))
        for h in senders:
            rx.send(h, RELEASE_BYTES, qp=p.qp + 1, local_addr=0, remote_addr=size)  # past its buffer
    return wl
