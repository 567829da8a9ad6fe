"""Broadcast by switch multicast: the root's NIC sends the message once and the switches copy
each packet down a tree to every other rank (what InfiniBand multicast with SHARP, NVLink
SHARP and Spectrum-X offer). No host relays anything, so every receiver has the root's bytes
one packet latency after the root's NIC sent them: S/B plus one latency, the broadcast's
bound, on any number of ranks.

The tree is a breadth-first tree over the switches from the root's own switch: each switch of
it copies a packet to its receivers' ports and to the ports of its child switches
(``multicast_tree``), so every link of the tree carries each packet once. A copy leaving
towards a host is addressed to that host (``spin_multicast``'s egress rewrite), so each
receiver's NIC takes a complete RDMA WRITE message into host memory and completes the
receive its host program waits for; copies towards a switch keep the original address, which
the next switch's execution context matches (QP, source and destination of the call).

Loss: the copies ride no acknowledged connection (one sender, many receivers, as UD
multicast), so the hosts' transport must be open loop (``kind="none"``); on lossless switches
(PFC) a full queue pauses its upstream port instead of dropping, and nothing is lost. A packet
dropped anyway (a lossy switch, a link fault) is not sent again: its receivers never complete
and the run reports them unfinished.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..handler import ExecutionContext
from .switch_tree import _switch_bfs, attachment

WHAT = "multicast broadcast"
PROGRAM = "switch_multicast"


def can_multicast(topo, hosts) -> bool:
    """Whether every host hangs off exactly one switch and the switches reach each other (the
    tree then exists)."""
    if topo is None or not topo.switches:
        return False
    try:
        multicast_tree(topo, hosts)
    except (ConfigError, ValueError, LookupError):
        return False
    return True


def multicast_tree(topo, hosts) -> list[tuple[str, tuple[int, ...]]]:
    """(switch, local ports to copy to) of each switch of the tree that takes a broadcast from
    ``hosts[0]`` to ``hosts[1:]`` (host ids), the root's switch first, then breadth-first."""
    ports = topo.ports()
    attach = attachment(topo, hosts, WHAT)
    start = attach[hosts[0]][0]
    dist, parent = _switch_bfs(topo, start, ports)
    copies: dict[str, set[int]] = {}

    def toward(up: str, sw: str) -> int:
        return next(i for i, (_l, peer) in enumerate(ports[up]) if peer == sw)

    for h in hosts[1:]:
        sw, local = attach[h]
        if sw not in dist:
            raise ConfigError(f"{WHAT}: no path over switches from {start} (host "
                              f"{topo.hosts[hosts[0]]}) to {sw} (host {topo.hosts[h]})")
        joined = sw in copies
        copies.setdefault(sw, set()).add(local)
        while not joined and sw != start:                     # join the tree
            up = parent[sw]
            joined = up in copies
            copies.setdefault(up, set()).add(toward(up, sw))
            sw = up
    order = sorted(copies, key=lambda s: (dist[s], topo.switches.index(s)))
    return [(s, tuple(sorted(copies[s]))) for s in order]


def install_broadcast(sc, hosts: tuple[int, ...], qp: int) -> int:
    """Install the switches' copying of a broadcast from ``hosts[0]`` to the others on ``qp``
    (once per scenario: later calls of the same ranks and QP reuse it) and return the host the
    root addresses its message to (``hosts[1]``). The root then sends once on ``qp``; every
    other rank waits for one message on ``qp``."""
    from handlers.switch_multicast import switch_multicast_program     # at run time
    if sc.nic.transport.kind != "none":
        raise ConfigError(f"{WHAT}: nic.transport.kind={sc.nic.transport.kind!r}; the "
                          f"switches' copies are acknowledged by no one (as UD multicast): "
                          f"valid choice: 'none' (open loop, lossless switches)")
    root, dst = hosts[0], hosts[1]
    program = switch_multicast_program()
    installed = {(c.node, c.match_qp, c.match_src, c.match_dst) for c in sc.contexts
                 if c.program.name == PROGRAM}
    for switch, ports in multicast_tree(sc.topology, hosts):
        if (switch, qp, root, dst) in installed:
            continue
        group = sc.multicast_group(switch, ports)
        memory = program.memory.copy()
        memory[0] = group
        sc.install(ExecutionContext(node=switch, program=program, match_qp=qp, match_src=root,
                                    match_dst=dst, memory=memory))
    return dst


def programs() -> list:
    """The handler program the switches run (the engine is compiled for it)."""
    from handlers.switch_multicast import switch_multicast_program
    return [switch_multicast_program()]
