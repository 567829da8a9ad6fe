"""Switch columns of the engine state: pipeline, handlers, load balancing, PFC and port queues.
The routing tables are ``switch_emulator.route_tables``."""
from __future__ import annotations

import zlib

import numpy as np

from spin.engine import state as S
from spin.units import ns

from .lb.registry import run_scheme_codes, switch_schemes


def build_switches(st, rows: np.ndarray, build) -> None:
    """The switch kind's build (``spin.engine.device_kinds.SWITCH``): ``rows`` are the
    topology's switches in its order (the routing tables' switch numbering). Switches with as
    many ports share one SwitchConfig (their HPUs follow their ports)."""
    sc = build.scenario
    topo, sw = sc.topology, sc.switch
    nports = st.dev[rows, S.D_NPORTS].tolist()
    by_ports = {n: sw.model_copy(update={"hpus": sw.hpus_for(n)}) for n in set(nports)}
    latency = getattr(topo, "switch_latency_ns", None)
    # the routing tables number every device after the hosts (other kinds among them too)
    ids = np.asarray(rows, np.int64) - len(topo.hosts)
    names = [topo.switches[i] for i in ids.tolist()]
    schemes = switch_schemes(sc)
    configure_switches(st, rows, [by_ports[n] for n in nports],
                       [latency(name, sw.latency_ns) if callable(latency) else sw.latency_ns
                        for name in names],
                       [schemes[i] for i in ids.tolist()], ids)


def configure_switches(st, rows: np.ndarray, configs: list, latencies_ns: list[float],
                       schemes: list[str], switch_ids: np.ndarray | None = None) -> None:
    """Fill switches 0..n-1 (devices ``rows``) from their SwitchConfigs (few distinct objects,
    shared), pipeline latencies and port-selection schemes, whole columns at a time: a
    65,536-GPU fabric has 80,000 switches. ``switch_ids``: their numbers in the routing tables
    (0..n-1 unless said)."""
    n = len(configs)
    if not n:
        return
    devices = np.asarray(rows, np.int64)
    dev = st.dev[devices]      # a copy (fancy indexing): written back below
    dev[:, S.D_KIND] = S.DEV_SWITCH
    dev[:, S.D_SW] = np.arange(n) if switch_ids is None else switch_ids
    dev[:, S.D_NODE] = devices
    dev[:, S.D_SW_LAT_PS] = [ns(x) for x in latencies_ns]
    codes = run_scheme_codes(schemes)
    dev[:, S.D_SW_LB] = [codes[name] for name in schemes]
    groups: dict[int, tuple[object, list[int]]] = {}
    for s, cfg in enumerate(configs):
        groups.setdefault(id(cfg), (cfg, []))[1].append(s)
    for cfg, members in groups.values():
        rows = np.asarray(members)
        for col, value in ((S.D_HPUS, cfg.hpus),
                           (S.D_CYCLE_PS, int(round(1_000_000 / cfg.hpu_clock_mhz))),
                           (S.D_MATCH_HDR_CYCLES, cfg.match_header_cycles),
                           (S.D_MATCH_PKT_CYCLES, cfg.match_packet_cycles),
                           (S.D_MAX_MSGS, cfg.max_inflight_messages),
                           (S.D_SW_FLOWLET_GAP_PS, ns(cfg.flowlet_gap_ns))):
            dev[rows, col] = value
        dev[rows, S.D_SW_SEED] = [zlib.crc32(f"{cfg.ecmp_seed}:{s}".encode()) for s in members]
        dev[rows, S.D_SW_RNG] = [(zlib.crc32(f"lb:{cfg.ecmp_seed}:{s}".encode()) << 20) | 1
                                 for s in members]              # never 0
        p0, count = dev[rows, S.D_PORT0], dev[rows, S.D_NPORTS]
        ports = np.repeat(p0 - np.cumsum(count) + count, count) + np.arange(count.sum())
        _configure_ports(st, ports, cfg)
    st.dev[devices] = dev


def configure_port(st, gp: int, cfg) -> None:
    """Queue of switch port ``gp`` from ``cfg`` (the switch's SwitchConfig with a port's
    overrides: ``Scenario.configure_port``)."""
    _configure_ports(st, np.array([gp]), cfg)


def _configure_ports(st, ports: np.ndarray, cfg) -> None:
    """Queues of switch ports ``ports`` from ``cfg``: buffer, ECN marking, header priority,
    trimming and PFC (per port, so the engine's queues test ports, not device kinds)."""
    st.port[ports, S.PT_Q_LIMIT_BYTES] = cfg.port_buffer_bytes
    st.port[ports, S.PT_TRIM_DSCP] = cfg.trim_dscp if cfg.trim else -1
    st.port[ports, S.PT_PFC_XOFF] = cfg.pfc_xoff_bytes if cfg.pfc else 0
    st.port[ports, S.PT_PFC_XON] = cfg.pfc_xon_bytes
    st.port[ports, S.PT_PFC_QUANTA] = cfg.pfc_pause_quanta
    st.port[ports, S.PT_PFC_WATCHDOG_PS] = ns(cfg.pfc_watchdog_ns) if cfg.pfc else 0
    st.port[ports, S.PT_ECN_THRESH] = cfg.ecn_threshold_bytes
    st.port[ports, S.PT_ECN_HIGH] = cfg.ecn_high_bytes
    st.port[ports, S.PT_ECN_DEQUEUE] = 1 if cfg.ecn_at == "dequeue" else 0
    st.port[ports, S.PT_HDR_PRIO] = 1 if cfg.header_priority else 0
    # RED draws: one generator per port, never 0
    st.port[ports, S.PT_ECN_RNG] = [zlib.crc32(f"ecn:{cfg.ecmp_seed}:{p}".encode()) | 1
                                    for p in ports.tolist()]
