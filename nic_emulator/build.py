"""NIC and host columns of the engine state, from NicConfig and HostConfig."""
from __future__ import annotations

from spin.engine import state as S
from spin.units import ns


def configure_nic(st, d: int, nic, host, host_mem_offset: int) -> None:
    dev = st.dev[d]
    dev[S.D_KIND] = S.DEV_NIC
    dev[S.D_NODE] = d
    dev[S.D_HPUS] = nic.hpus
    dev[S.D_CYCLE_PS] = int(round(1_000_000 / nic.hpu_clock_mhz))
    dev[S.D_MATCH_HDR_CYCLES] = nic.match_header_cycles
    dev[S.D_MATCH_PKT_CYCLES] = nic.match_packet_cycles
    dev[S.D_PCIE_LAT_PS] = ns(nic.pcie_latency_ns)
    dev[S.D_PCIE_MPS_PER_BYTE] = int(round(1_000_000 / nic.pcie_rate_gbytes_per_s))
    dev[S.D_MAX_MSGS] = nic.max_inflight_messages
    dev[S.D_NIC_TX_WINDOW] = nic.tx_window_frames
    dev[S.D_HOST_MEM_OFF] = host_mem_offset
    dev[S.D_HOST_MEM_SIZE] = host.memory_bytes
    dev[S.D_HOST_O_SEND_PS] = ns(host.send_overhead_ns)
    dev[S.D_HOST_O_RECV_PS] = ns(host.recv_overhead_ns)
    dev[S.D_HOST_REDUCE_MPS_PER_BYTE] = int(round(host.reduce_ps_per_byte * 1000))
