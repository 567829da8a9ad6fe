"""Switch columns of the engine state and equal-cost routing tables.

Routes are computed on the port-level wiring (which global port faces which), so the same code
serves the initial topology and every re-shaped or degraded one: for each switch that has
hosts attached, one breadth-first search over the switch graph gives every switch's distance to
it; a switch's next hops towards those hosts are all its ports to neighbours one hop closer.
"""
from __future__ import annotations

import zlib
from collections import deque

import numpy as np

from spin.engine import state as S
from spin.units import ns

from .lb.registry import scheme_code


def configure_switch(st, d: int, s: int, address: int, cfg, latency_ns: float,
                     load_balancing: str) -> None:
    """Fill switch ``s`` (device ``d``) from its SwitchConfig and port-selection scheme."""
    dev = st.dev[d]
    dev[S.D_KIND] = S.DEV_SWITCH
    dev[S.D_SW] = s
    dev[S.D_NODE] = address
    dev[S.D_SW_LAT_PS] = ns(latency_ns)
    dev[S.D_HPUS] = cfg.hpus
    dev[S.D_CYCLE_PS] = int(round(1_000_000 / cfg.hpu_clock_mhz))
    dev[S.D_MATCH_HDR_CYCLES] = cfg.match_header_cycles
    dev[S.D_MATCH_PKT_CYCLES] = cfg.match_packet_cycles
    dev[S.D_MAX_MSGS] = cfg.max_inflight_messages
    dev[S.D_SW_LB] = scheme_code(load_balancing)
    dev[S.D_SW_SEED] = zlib.crc32(f"{cfg.ecmp_seed}:{s}".encode())
    dev[S.D_SW_RNG] = (zlib.crc32(f"lb:{cfg.ecmp_seed}:{s}".encode()) << 20) | 1   # never 0
    dev[S.D_SW_FLOWLET_GAP_PS] = ns(cfg.flowlet_gap_ns)
    dev[S.D_SW_TRIM] = 1 if cfg.trim else 0
    dev[S.D_SW_TRIM_DSCP] = cfg.trim_dscp
    dev[S.D_SW_PFC_XOFF] = cfg.pfc_xoff_bytes if cfg.pfc else 0
    dev[S.D_SW_PFC_XON] = cfg.pfc_xon_bytes
    dev[S.D_SW_PFC_QUANTA] = cfg.pfc_pause_quanta
    dev[S.D_SW_PFC_WATCHDOG_PS] = ns(cfg.pfc_watchdog_ns) if cfg.pfc else 0
    p0, n = int(dev[S.D_PORT0]), int(dev[S.D_NPORTS])
    for gp in range(p0, p0 + n):
        configure_port(st, gp, cfg)


def configure_port(st, gp: int, cfg) -> None:
    """Queue of switch port ``gp``: buffer, ECN marking and header priority from ``cfg`` (the
    switch's SwitchConfig, or it with a port's overrides: ``Scenario.configure_port``)."""
    st.port[gp, S.PT_Q_LIMIT_BYTES] = cfg.port_buffer_bytes
    st.port[gp, S.PT_ECN_THRESH] = cfg.ecn_threshold_bytes
    st.port[gp, S.PT_ECN_HIGH] = cfg.ecn_high_bytes
    st.port[gp, S.PT_ECN_DEQUEUE] = 1 if cfg.ecn_at == "dequeue" else 0
    st.port[gp, S.PT_HDR_PRIO] = 1 if cfg.header_priority else 0
    # RED draws: one generator per port, never 0
    st.port[gp, S.PT_ECN_RNG] = zlib.crc32(f"ecn:{cfg.ecmp_seed}:{gp}".encode()) | 1


def equal_cost_groups(port_dev: np.ndarray, port_local: np.ndarray, peer: np.ndarray,
                      up: np.ndarray, dev_is_switch: np.ndarray, n_hosts: int
                      ) -> dict[int, dict[int, tuple[int, ...]]]:
    """For each switch device: host node -> tuple of local ports on a shortest path (through
    switches only) to that host, over the links that are up."""
    n_devs = len(dev_is_switch)
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_devs)]   # (local port, neighbour)
    for gp in range(len(port_dev)):
        q = peer[gp]
        if q >= 0 and up[gp] and up[q]:
            adj[port_dev[gp]].append((int(port_local[gp]), int(port_dev[q])))
    hosts_at: dict[int, list[tuple[int, int]]] = {}   # switch -> [(host, local port)]
    for h in range(n_hosts):
        for lp, nb in adj[h]:
            if dev_is_switch[nb]:
                back = [p for p, x in adj[nb] if x == h]
                hosts_at.setdefault(nb, []).append((h, back[0]))
    groups: dict[int, dict[int, tuple[int, ...]]] = {d: {} for d in range(n_devs)
                                                       if dev_is_switch[d]}
    for attach, hosts in hosts_at.items():
        dist = {attach: 0}
        frontier = deque([attach])
        while frontier:
            u = frontier.popleft()
            for _, v in adj[u]:
                if dev_is_switch[v] and v not in dist:
                    dist[v] = dist[u] + 1
                    frontier.append(v)
        for h, lp in hosts:
            groups[attach][h] = (lp,)
        for sw, dsw in dist.items():
            if sw == attach:
                continue
            ports = tuple(sorted(lp for lp, v in adj[sw] if dist.get(v, -1) == dsw - 1
                                 and dev_is_switch[v]))
            for h, _ in hosts:
                groups[sw][h] = ports
    return groups


class RouteTables:
    """Routing epochs packed for the engine: ``route[epoch, switch, node]`` -> group id, groups
    as (first, count) into a flat port list, identical groups shared."""

    def __init__(self, n_switches: int, n_hosts: int):
        self.n_switches, self.n_hosts = n_switches, n_hosts
        self.epochs: list[np.ndarray] = []
        self._group_ids: dict[tuple[int, ...], int] = {}
        self.groups: list[tuple[int, int]] = []
        self.ports: list[int] = []

    def _group(self, ports: tuple[int, ...]) -> int:
        g = self._group_ids.get(ports)
        if g is None:
            g = self._group_ids[ports] = len(self.groups)
            self.groups.append((len(self.ports), len(ports)))
            self.ports.extend(ports)
        return g

    def add_epoch(self, groups: dict[int, dict[int, tuple[int, ...]]], switch_index) -> int:
        table = np.full((max(self.n_switches, 1), max(self.n_hosts, 1)), -1, np.int32)
        for dev, per_host in groups.items():
            s = switch_index(dev)
            for h, ports in per_host.items():
                if ports:
                    table[s, h] = self._group(ports)
        self.epochs.append(table)
        return len(self.epochs) - 1

    def write(self, st) -> None:
        for e, table in enumerate(self.epochs):
            st.route[e] = table
        if self.groups:
            st.rgroup[:len(self.groups)] = np.asarray(self.groups, np.int32)
            st.rport[:len(self.ports)] = np.asarray(self.ports, np.int32)
