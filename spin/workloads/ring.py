"""Ring allreduce traffic: 2(n-1) steps (reduce-scatter, then all-gather) of S/n bytes each to
the next host of the ring; a host's step k+1 send waits until it received step k, as in NCCL's
ring. Traffic only: chunks are not reduced, so the run measures the network, not the hosts'
arithmetic (``HostProgram.reduce`` adds that when wanted).
"""
from __future__ import annotations

from ..errors import ConfigError
from .common import (Flow, Workload, begin_iteration, check_hosts, check_memory, check_qps,
                     prepare, start_skews_ns)
from .declare import WorkloadParams, builder


class RingParams(WorkloadParams):
    pass


@builder("ring_allreduce", RingParams)
def ring_allreduce(sc, p: RingParams) -> Workload:
    """Ring allreduce of ``message_bytes`` per host (a multiple of the host count): step s
    sends chunk (i - s) mod n of host i to host i + 1 and lands in its own slot of the
    receiver, so every step's bytes can be checked."""
    n = check_hosts(sc, "ring_allreduce", 2)
    check_qps(sc, p.qp, 1)
    size = p.message_bytes
    if size % n:
        lo = max(n, size - size % n)
        raise ConfigError(f"message_bytes = {size}: must be a multiple of the {n} hosts (each "
                          f"step moves message_bytes / n); e.g. {lo} or {lo + n}")
    chunk, steps = size // n, 2 * (n - 1)
    check_memory(sc, "ring_allreduce", size + steps * chunk,
                 f"a {size:,} B buffer and {steps} receive slots of {chunk:,} B")
    wl = Workload("ring_allreduce", p.label or "ring_allreduce", tuple(range(n)), p.iterations,
                  send_bytes=size, recv_addr=size, fill=p.fill)
    prepare(sc, wl, range(n))
    skews = start_skews_ns(p.seed, p.start_skew_ns, p.iterations, n)
    for it in range(p.iterations):
        for h in range(n):
            prog = begin_iteration(sc.host_program(h), wl, it, skews[it, h])
            nxt = (h + 1) % n
            for s in range(steps):
                if s:
                    prog.wait_recv(qp=p.qp, count=1)        # step s-1 arrived from h - 1
                local, remote = ((h - s) % n) * chunk, size + s * chunk
                prog.send(nxt, chunk, qp=p.qp, local_addr=local, remote_addr=remote)
                wl.flows.append(Flow(h, nxt, p.qp, chunk, local, remote, it, s))
            prog.wait_recv(qp=p.qp, count=1).mark(wl.end_label(it))
    return wl
