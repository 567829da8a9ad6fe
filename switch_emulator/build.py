"""Switch columns of the engine state: pipeline, handlers, load balancing, PFC and port queues.
The routing tables are ``switch_emulator.route_tables``."""
from __future__ import annotations

import zlib

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
    configure_port(st, int(dev[S.D_PORT0]), cfg, int(dev[S.D_NPORTS]))


def configure_port(st, gp: int, cfg, count: int = 1) -> None:
    """Queues of switch ports ``gp .. gp + count - 1``: buffer, ECN marking and header priority
    from ``cfg`` (the switch's SwitchConfig, or it with a port's overrides:
    ``Scenario.configure_port``)."""
    rows = st.port[gp:gp + count]
    rows[:, S.PT_Q_LIMIT_BYTES] = cfg.port_buffer_bytes
    rows[:, S.PT_ECN_THRESH] = cfg.ecn_threshold_bytes
    rows[:, S.PT_ECN_HIGH] = cfg.ecn_high_bytes
    rows[:, S.PT_ECN_DEQUEUE] = 1 if cfg.ecn_at == "dequeue" else 0
    rows[:, S.PT_HDR_PRIO] = 1 if cfg.header_priority else 0
    # RED draws: one generator per port, never 0
    rows[:, S.PT_ECN_RNG] = [zlib.crc32(f"ecn:{cfg.ecmp_seed}:{p}".encode()) | 1
                             for p in range(gp, gp + count)]
