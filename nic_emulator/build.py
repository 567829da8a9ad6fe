"""NIC and host columns of the engine state, from NicConfig and HostConfig."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from spin.engine import layout as L
from spin.engine import state as S
from spin.errors import StateLayoutError
from spin.transport_api import own_transport_layout
from spin.transports import ENTROPIES, transport_code
from spin.units import ns


def build_nics(st, rows, build) -> None:
    """The NIC kind's build (``spin.engine.device_kinds.NIC``): each NIC and its host from the
    scenario's NicConfig and HostConfig; a NIC's node id is its row. Every NIC gets the same
    columns but its node id and host-memory offset, written for all rows at once (a row at a
    time took 40 ms at 8,192 hosts)."""
    sc = build.scenario
    rows = np.asarray(rows, np.int64)
    columns = nic_columns(sc.nic, sc.host, build.generated)
    st.dev[np.ix_(rows, list(columns))] = list(columns.values())
    st.dev[rows, S.D_NODE] = rows
    st.dev[rows, S.D_HOST_MEM_OFF] = rows * build.host_stride_bytes


def nic_columns(nic, host, generated: bool = False) -> dict[int, int]:
    """The state's device columns every NIC of ``nic`` and ``host`` shares, by column.
    ``generated``: the host keeps no memory (``Scenario.payload``); its address space is still
    ``host.memory_bytes``, so the same sends and deliveries are accepted or refused."""
    return {
        S.D_KIND: S.DEV_NIC,
        S.D_HPUS: nic.hpus,
        S.D_CYCLE_PS: int(round(1_000_000 / nic.hpu_clock_mhz)),
        S.D_MATCH_HDR_CYCLES: nic.match_header_cycles,
        S.D_MATCH_PKT_CYCLES: nic.match_packet_cycles,
        S.D_PCIE_LAT_PS: ns(nic.pcie_latency_ns),
        S.D_PCIE_MPS_PER_BYTE: int(round(1_000_000 / nic.pcie_rate_gbytes_per_s)),
        S.D_MAX_MSGS: nic.max_inflight_messages,
        S.D_NIC_TX_WINDOW: nic.tx_window_frames,
        S.D_LOOPBACK_PS: ns(nic.loopback_latency_ns),
        S.D_HOST_MEM_SIZE: 0 if generated else host.memory_bytes,
        S.D_HOST_ADDR_SPACE: host.memory_bytes,
        S.D_PAYLOAD_GEN: 1 if generated else 0,
        S.D_HOST_O_SEND_PS: ns(host.send_overhead_ns),
        S.D_HOST_O_RECV_PS: ns(host.recv_overhead_ns),
        S.D_HOST_REDUCE_MPS_PER_BYTE: int(round(host.reduce_ps_per_byte * 1000)),
    }


def send_flows(scenario) -> int:
    """Distinct (source, destination, QP) the host programs send on, plus room for the ones
    handlers open with puts: the open-loop transport keeps a PSN counter per flow."""
    flows = {(node, op[S.HO_SEND_DST], op[S.HO_SEND_QP])
             for node, prog in scenario.host_programs.items()
             for op in prog.ops if op[0] == S.OP_SEND}
    return len(flows) + 16 * scenario.n_hosts + 256


def transport_connections(scenario) -> int:
    """Rows of the transport connection table: a sender and a receiver row per send flow."""
    if scenario.nic.transport.kind == "none":
        return 1
    return 2 * send_flows(scenario)


class TransportEnv(NamedTuple):
    """What a transport part's ``fill`` may read besides the TransportConfig."""

    mtu: int              # bytes of payload per packet
    host_rate_gbps: int   # rate of the host links


def _fill(part, tc, env, params: dict[str, int]) -> None:
    """Part ``part``'s parameters, checked to be exactly those it declares, each an int64,
    into ``params``; a fill that fails is named with its owner."""
    try:
        values = part.fill(tc, env)
    except Exception as exc:  # noqa: BLE001 - a transport's own code, named in one line
        raise StateLayoutError(f"{part.owner}: fill(tc, env) failed: {type(exc).__name__}: "
                               f"{exc}") from None
    own = {spec[0] for spec in part.trp}
    if not isinstance(values, dict) or set(values) != own:
        got = sorted(values) if isinstance(values, dict) else repr(values)
        raise StateLayoutError(f"{part.owner}: fill returned parameters {got}; it declares "
                               f"{sorted(own)}")
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or not -2**63 <= value < 2**63:
            raise StateLayoutError(f"{part.owner}: fill returned {name} = {value!r}; a parameter "
                                   f"is an int64 (times in ps, rates in Mb/s, sizes in bytes)")
    params.update(values)


def configure_transport(st, n_hosts: int, nic, host_rate_gbps: int, mtu: int) -> None:
    """Transport kind and entropy policy of every NIC, and the fabric's transport parameters:
    each registered part (``spin.engine.layout.TRANSPORT_PARTS``) fills its own from
    ``spin.config.TransportConfig``; a transport compiled apart fills ``st.apart_params``."""
    tc = nic.transport
    st.dev[:n_hosts, S.D_TRANSPORT] = transport_code(tc.kind)
    st.dev[:n_hosts, S.D_ENTROPY] = ENTROPIES.names().index(tc.entropy)
    env = TransportEnv(mtu=mtu, host_rate_gbps=host_rate_gbps)
    params: dict[str, int] = {}
    for part in L.TRANSPORT_PARTS:
        if part.fill is not None:
            _fill(part, tc, env, params)
    p = st.sc[S.SC_TRP:S.SC_TRP + S.TRP_N]   # a view: writes land in st.sc
    for name, value in params.items():
        p[L.TRP.index(name)] = value
    own = own_transport_layout(tc.kind)
    if own is not None:
        params = {}
        for part in own.parts:
            if part.fill is not None:
                _fill(part, tc, env, params)
        for name, value in params.items():
            st.apart_params[own.params.index(name)] = value


def loss_prng_seed(seed: int, link: int, direction: int) -> int:
    """Non-zero xorshift32 state of one direction of a lossy link."""
    x = (seed * 0x9E3779B1 + link * 0x85EBCA77 + direction * 0xC2B2AE3D + 1) & 0xFFFFFFFF
    return x or 1
