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

``aggregators`` restricts which switches may aggregate (a HammingMesh's row and column network
switches, not the accelerators' routers). The tree is then built over those switches only, and
a host behind non-aggregating switches is a *relayed* child: it addresses its contributions to a
job host whose every equal-cost route meets an aggregating switch first at one and the same
switch (its entry, recorded in ``TreeNode.entry``), and that switch sends it results by
unicast, on routes that cross no switch of the tree.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..errors import TopologyError


@dataclass
class TreeNode:
    """One switch of a job's tree: children as (kind, node to address, hosts of its subtree),
    kind "host" (attached: results by multicast), "switch" or "relay" (a host behind
    non-aggregating switches; both get results by unicast at the node), the local port towards
    the parent (-1 at the root), the parent's address (-1), the local ports of its host
    children (the result multicast group), and for relayed children the host their
    contributions are addressed to."""

    switch: str
    children: list[tuple[str, int, list[int]]] = field(default_factory=list)
    parent_port: int = -1
    parent_node: int = -1
    host_ports: list[int] = field(default_factory=list)
    entry: dict[int, int] = field(default_factory=dict)


def _switch_bfs(topo, start: str, ports, allowed=None) -> tuple[dict[str, int], dict[str, str]]:
    """Hop distance and BFS parent of every switch reachable from ``start`` over switches (over
    ``allowed`` ones only, if given)."""
    switches = set(topo.switches) if allowed is None else allowed
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


def attachment(topo, hosts, what: str = "in-switch aggregation") -> dict[int, tuple[str, int]]:
    """Host id -> (the switch it hangs off, that switch's local port to it); ``what`` names the
    collective in the error for a host that does not hang off exactly one switch."""
    ports = topo.ports()
    out = {}
    for h in hosts:
        name = topo.hosts[h]
        links = ports[name]
        if len(links) != 1 or links[0][1] not in topo.roles:
            raise TopologyError(f"{what}: host {name} must hang off exactly one "
                                f"switch; it has links to {[p for _, p in links]}")
        link, sw = links[0]
        local = next(i for i, (l, _p) in enumerate(ports[sw]) if l == link)
        out[h] = (sw, local)
    return out


def aggregation_tree(topo, hosts, equal_cost=None, aggregators=None
                     ) -> tuple[str, dict[str, TreeNode]]:
    """(root switch, tree nodes by switch name) of a job on ``hosts`` (host ids); only the
    switches in ``aggregators`` (names; default every switch) aggregate."""
    ports = topo.ports()
    attach = attachment(topo, hosts)
    allowed = set(topo.switches) if aggregators is None else set(aggregators)
    if equal_cost is None and any(sw not in allowed for sw, _ in attach.values()):
        equal_cost = topo.equal_cost_ports()
    leaf_of, entry = {}, {}
    for h, (sw, _local) in attach.items():
        if sw in allowed:
            leaf_of[h] = sw
        else:
            leaf_of[h], entry[h] = _relay_entry(topo, ports, equal_cost, h, sw, attach, allowed)
    leaves = sorted(set(leaf_of.values()), key=topo.switches.index)
    best, root = None, None
    for cand in topo.switches:
        if cand not in allowed:
            continue
        dist, _ = _switch_bfs(topo, cand, ports, allowed)
        if any(leaf not in dist for leaf in leaves):
            continue
        worst = max(dist[leaf] for leaf in leaves)
        if best is None or worst < best:
            best, root = worst, cand
    if root is None:
        raise TopologyError("in-switch aggregation: the job's switches are not connected")
    _, bfs_parent = _switch_bfs(topo, root, ports, allowed)
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
        if h in entry:
            leaf = leaf_of[h]
            if _route_hits(ports, equal_cost, leaf, h, set(nodes)) != {None}:
                raise TopologyError(f"in-switch aggregation: results from {leaf} to host {h} "
                                    f"would cross another switch of the tree")
            nodes[leaf].children.append(("relay", h, [h]))
            nodes[leaf].entry[h] = entry[h]
        else:
            nodes[sw].children.append(("host", h, [h]))
            nodes[sw].host_ports.append(local)
    subtree = _subtree_hosts(nodes, bfs_parent, root, leaf_of)
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


def _route_hits(ports, equal_cost, start: str, dst: int, stop: set) -> set:
    """Where the equal-cost routes from switch ``start`` to host ``dst`` first meet a switch of
    ``stop`` (after ``start``): those switches, and None for a route that reaches ``dst``
    without meeting one."""
    hits, seen, todo = set(), {start}, [start]
    while todo:
        u = todo.pop()
        for p in equal_cost[u].get(dst, ()):
            peer = ports[u][p][1]
            if peer not in equal_cost:              # the host itself
                hits.add(None)
            elif peer in stop:
                hits.add(peer)
            elif peer not in seen:
                seen.add(peer)
                todo.append(peer)
    return hits


def _relay_entry(topo, ports, equal_cost, h: int, sw: str, attach, allowed) -> tuple[str, int]:
    """(the aggregating switch that takes host ``h``'s contributions, the job host they are
    addressed to): the first job host whose every route from ``sw`` meets an aggregating
    switch first at the same one."""
    for d in sorted(attach):
        if d == h:
            continue
        hits = _route_hits(ports, equal_cost, sw, d, allowed)
        if len(hits) == 1 and None not in hits:
            return next(iter(hits)), d
    raise TopologyError(f"in-switch aggregation: host {topo.hosts[h]} hangs off {sw}, which may "
                        f"not aggregate, and no route to another host of the job meets one "
                        f"aggregating switch first")


def _subtree_hosts(nodes, bfs_parent, root, leaf_of) -> dict[str, list[int]]:
    out = {s: [] for s in nodes}
    for h, sw in leaf_of.items():
        s = sw
        while True:
            out[s].append(h)
            if s == root:
                break
            s = bfs_parent[s]
    return {s: sorted(v) for s, v in out.items()}
