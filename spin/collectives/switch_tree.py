"""The aggregation tree of one in-switch allreduce job on any topology: which switch takes whose
contributions, where it sends its partial, and how it reaches each child with the result.

The root is the switch closest to all of the job's hosts (smallest largest hop count; the
first in topology order on a tie): a spine of a leaf-spine, a core of a fat tree whose job spans
pods, the only switch of a star. A breadth-first search from the root over switches gives each
switch its parent; the tree is the union of the paths from the root to the switches the hosts
hang off. Contributions go up over explicit ports (the parent port), so they need no route;
results go down by multicast to host children and, to a switch child, as a packet addressed to
a host of the child's subtree that every equal-cost route from the parent reaches through that
child (down a fat tree or a leaf-spine the route is unique).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..errors import TopologyError


@dataclass
class TreeNode:
    """One switch of a job's tree: children as (kind, node to address, hosts of its subtree),
    the local port towards the parent (-1 at the root), the parent's address (-1), and the
    local ports of its host children (the result multicast group)."""

    switch: str
    children: list[tuple[str, int, list[int]]] = field(default_factory=list)
    parent_port: int = -1
    parent_node: int = -1
    host_ports: list[int] = field(default_factory=list)


def _switch_bfs(topo, start: str, ports) -> tuple[dict[str, int], dict[str, str]]:
    """Hop distance and BFS parent of every switch reachable from ``start`` over switches."""
    switches = set(topo.switches)
    dist, parent = {start: 0}, {}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for _link, peer in ports[s]:
            if peer in switches and peer not in dist:
                dist[peer] = dist[s] + 1
                parent[peer] = s
                queue.append(peer)
    return dist, parent


def attachment(topo, hosts) -> dict[int, tuple[str, int]]:
    """Host id -> (the switch it hangs off, that switch's local port to it)."""
    ports = topo.ports()
    out = {}
    for h in hosts:
        name = topo.hosts[h]
        links = ports[name]
        if len(links) != 1 or links[0][1] not in topo.roles:
            raise TopologyError(f"in-switch aggregation: host {name} must hang off exactly one "
                                f"switch; it has links to {[p for _, p in links]}")
        link, sw = links[0]
        local = next(i for i, (l, _p) in enumerate(ports[sw]) if l == link)
        out[h] = (sw, local)
    return out


def aggregation_tree(topo, hosts, equal_cost=None) -> tuple[str, dict[str, TreeNode]]:
    """(root switch, tree nodes by switch name) of a job on ``hosts`` (host ids)."""
    ports = topo.ports()
    attach = attachment(topo, hosts)
    leaves = sorted({sw for sw, _ in attach.values()}, key=topo.switches.index)
    best, root = None, None
    for cand in topo.switches:
        dist, _ = _switch_bfs(topo, cand, ports)
        if any(leaf not in dist for leaf in leaves):
            continue
        worst = max(dist[leaf] for leaf in leaves)
        if best is None or worst < best:
            best, root = worst, cand
    if root is None:
        raise TopologyError("in-switch aggregation: the job's switches are not connected")
    _, bfs_parent = _switch_bfs(topo, root, ports)
    nodes: dict[str, TreeNode] = {}
    for leaf in leaves:
        s = leaf
        while s not in nodes:
            nodes[s] = TreeNode(s)
            if s == root:
                break
            s = bfs_parent[s]
    n_hosts = len(topo.hosts)
    index = {name: n_hosts + i for i, name in enumerate(topo.switches)}
    for h in sorted(attach):
        sw, local = attach[h]
        nodes[sw].children.append(("host", h, [h]))
        nodes[sw].host_ports.append(local)
    subtree = _subtree_hosts(nodes, bfs_parent, root, attach)
    if equal_cost is None and len(nodes) > 1:
        equal_cost = topo.equal_cost_ports()
    for s in sorted(nodes, key=topo.switches.index):
        if s == root:
            continue
        p = bfs_parent[s]
        node = nodes[s]
        node.parent_port = next(i for i, (_l, peer) in enumerate(ports[s]) if peer == p)
        node.parent_node = index[p]
        down = {i for i, (_l, peer) in enumerate(ports[p]) if peer == s}
        rep = next((h for h in subtree[s] if set(equal_cost[p].get(h, ())) and
                    set(equal_cost[p][h]) <= down), None)
        if rep is None:
            raise TopologyError(f"in-switch aggregation: no host below {s} that {p} routes "
                                f"to through {s} only; the tree cannot send results down")
        nodes[p].children.append(("switch", rep, sorted(subtree[s])))
    return root, nodes


def _subtree_hosts(nodes, bfs_parent, root, attach) -> dict[str, list[int]]:
    out = {s: [] for s in nodes}
    for h, (sw, _) in attach.items():
        s = sw
        while True:
            out[s].append(h)
            if s == root:
                break
            s = bfs_parent[s]
    return {s: sorted(v) for s, v in out.items()}
