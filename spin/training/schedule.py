"""The order in which one rank issues its trace nodes.

A rank's host program is one sequence, so the graph is walked as a list scheduler would walk
it: a node becomes ready once its ``deps`` are issued (and finished: everything but a send is
finished when the next one starts) and its ``start_deps`` are issued. Among ready nodes:

* sends go first: a send is posted and proceeds on the NIC while the host goes on, so
  whatever follows overlaps with it;
* receives go last: a receive blocks the host, so independent compute and collectives that
  are ready run first while the NIC lands the message in memory;
* everything else in trace order (the order the framework issued the kernels).

That is the overlap the dependencies allow on one host timeline: communication that a NIC
or a switch carries (sends, receives, offloaded collectives) proceeds under compute; a host
algorithm's own steps (ring sends, waits and reductions) take the host's time as on a CPU."""
from __future__ import annotations

import heapq

from ..trace_formats.model import COLLECTIVE, RECV, SEND, RankTrace, TraceOp

_CLASS = {SEND: 0, RECV: 2}


def issue_order(rank: RankTrace) -> list[TraceOp]:
    """``rank``'s nodes in issue order (the trace was validated: no cycle, no missing dep)."""
    position = {op.node_id: i for i, op in enumerate(rank.ops)}
    before = {op.node_id: set(op.deps) | set(op.start_deps) for op in rank.ops}
    last_call: dict[str, int] = {}
    for op in rank.ops:              # a group's collectives are issued in trace order (they
        if op.kind == COLLECTIVE:    # match across ranks by order, as on an NCCL stream)
            if op.group in last_call:
                before[op.node_id].add(last_call[op.group])
            last_call[op.group] = op.node_id
    waiting = {node_id: len(deps) for node_id, deps in before.items()}
    users: dict[int, list[int]] = {}
    for node_id, deps in before.items():
        for dep in deps:
            users.setdefault(dep, []).append(node_id)
    by_id = rank.by_id

    def key(node_id: int) -> tuple[int, int]:
        """Sends first, receives last, the rest in trace order."""
        return (_CLASS.get(by_id[node_id].kind, 1), position[node_id])

    ready = [key(i) + (i,) for i, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    order: list[TraceOp] = []
    while ready:
        *_, node_id = heapq.heappop(ready)
        order.append(by_id[node_id])
        for user in users.get(node_id, ()):
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, key(user) + (user,))
    return order
