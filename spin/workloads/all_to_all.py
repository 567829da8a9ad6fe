"""All-to-all as in mixture-of-experts layers: *dispatch* sends every other host a chunk of
tokens, *combine* returns each host the chunk it sent once its own dispatch inputs are all in
(the experts ran). Each host walks its peers starting from its right neighbour (i+1, i+2, ...),
as pairwise exchange does, so no host is everyone's first destination.
"""
from __future__ import annotations

from typing import Literal

from .common import (Flow, Workload, begin_iteration, check_hosts, check_memory, check_qps,
                     prepare, start_skews_ns)
from .declare import WorkloadParams, builder


class AllToAllParams(WorkloadParams):
    phases: Literal["dispatch", "combine", "both"] = "both"


@builder("all_to_all", AllToAllParams)
def all_to_all(sc, p: AllToAllParams) -> Workload:
    """Each host sends ``message_bytes`` to every other host (dispatch, on ``qp``), waits for
    the n - 1 chunks it receives, then sends each back to its origin (combine, on ``qp + 1``:
    its own QP, so a receiver counts the phases apart). ``phases`` picks one or both; a
    combine-only run sends from the send buffer."""
    n = check_hosts(sc, "all_to_all", 2)
    c = p.message_bytes
    phases = ["dispatch", "combine"] if p.phases == "both" else [p.phases]
    check_qps(sc, p.qp, 2)
    check_memory(sc, "all_to_all", 3 * n * c,
                 f"send, dispatch-receive and combine-receive buffers of {n} x {c:,} B")
    wl = Workload("all_to_all", p.label or "all_to_all", tuple(range(n)), p.iterations,
                  send_bytes=n * c, recv_addr=n * c, fill=p.fill)
    prepare(sc, wl, range(n))
    skews = start_skews_ns(p.seed, p.start_skew_ns, p.iterations, n)
    combine_addr = 2 * n * c
    for it in range(p.iterations):
        for h in range(n):
            prog = begin_iteration(sc.host_program(h), wl, it, skews[it, h])
            for k, phase in enumerate(phases):
                qp = p.qp + (phase == "combine")
                for d in range(1, n):
                    peer = (h + d) % n
                    if phase == "dispatch":
                        local, remote, origin = peer * c, n * c + h * c, None
                    elif p.phases == "both":    # return what peer dispatched: its chunk for h
                        local, remote, origin = n * c + peer * c, combine_addr + h * c, (peer,
                                                                                         h * c)
                    else:                       # combine alone: from the send buffer
                        local, remote, origin = peer * c, combine_addr + h * c, None
                    prog.send(peer, c, qp=qp, local_addr=local, remote_addr=remote)
                    wl.flows.append(Flow(h, peer, qp, c, local, remote, it, k, origin))
                prog.wait_recv(qp=qp, count=n - 1)
            prog.mark(wl.end_label(it))
    return wl
