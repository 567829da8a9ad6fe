"""htsim's ``main_uec`` defaults for a topology, as spin configs (``spin lb --preset htsim``).

htsim (the Ultra Ethernet fork, ``ultraethernet/uet-htsim``) sizes everything from the base
round trip of the topology's longest path: per hop the link latency both ways plus one data
packet and one 64 B ACK serialised (6 hops on a 3-tier fat tree: ~14.0 us at 100 Gb/s with
1 us links). From it, one bandwidth-delay product (BDP) at the host link rate gives:

- a queue of one BDP (whole packets) per switch port, trimming on;
- ECN marked RED-like between 20 % and 80 % of that queue, decided at dequeue;
- a congestion window starting at, and capped at, 1.5 x BDP (NSCC);
- header-only packets (ACK, NACK, trimmed headers) in a priority queue at every port;
- a minimum retransmission timeout of about 100 us;
- one ACK per 16 KiB received (4 packets), plus one at once for ECN-marked packets;
- spraying over 64 EVs per flow in a shuffled round robin, REPS exploring the same 64.

spin's packets are RoCEv2 frames with real bytes: a full Ultra-Ethernet-style data packet is
4,096 B of payload plus 78 B of headers (htsim: 4,150 B packets), an ACK 82 B (htsim: 64 B),
so serialisation differs from htsim's by about 1 %.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from ..config import EngineConfig, NicConfig, SwitchConfig, TransportConfig
from ..errors import TopologyError
from ..topology import Topology
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES, serialization_ps
from ..wire.headers import AETH_BYTES, ICRC_BYTES, PLH_BYTES, ROCE_HEADER_BYTES, SACKH_BYTES

HTSIM_ACK_BYTES = 64              # htsim's ACK size, in its base-RTT formula
ECN_LOW_FRACTION = 0.2            # main_uec: ECN between 20 % ...
ECN_HIGH_FRACTION = 0.8           # ... and 80 % of the queue
WINDOW_BDP_FACTOR = 1.5           # main_uec: NSCC initial = maximum window, 1.5 x BDP
MIN_RTO_US = 100.0                # htsim's UEC source: minimum retransmission timeout
SACK_THRESHOLD_BYTES = 16_384     # htsim's UEC sink: one ACK per 16 KiB accepted (4 packets)
HTSIM_PATHS = 64                  # htsim's -paths: EVs a sprayed (or REPS) flow walks over
FCT_DEFINITION = ("FCT = the sender's last ACK minus the flow's start, as htsim counts it "
                  "('finished at' - 'starting at')")


def ue_data_frame_bytes(mtu_bytes: int) -> int:
    """Frame bytes of a full Ultra-Ethernet-style data packet (BTH + PLH + payload + ICRC)."""
    return ROCE_HEADER_BYTES + PLH_BYTES + mtu_bytes + ICRC_BYTES


def ue_ack_frame_bytes() -> int:
    return ROCE_HEADER_BYTES + AETH_BYTES + SACKH_BYTES + ICRC_BYTES


@dataclass(frozen=True)
class HtsimPreset:
    """htsim's ``main_uec`` settings derived for one topology (times in ps, sizes in bytes)."""

    hops: int                     # links on the longest host-to-host path
    link_latency_ps: int          # the largest link latency of the topology
    rate_gbps: int                # host link rate
    mtu_bytes: int                # payload per packet
    packet_bytes: int             # frame bytes of a full data packet
    base_rtt_ps: int
    bdp_bytes: int
    queue_bytes: int              # per switch port: one BDP of whole packets
    ecn_low_bytes: int
    ecn_high_bytes: int
    window_bytes: int
    ack_every_packets: int        # receiver: one ACK per this many packets (plus AckReq/ECN)
    min_rto_us: float = MIN_RTO_US

    def switch_config(self, base: SwitchConfig | None = None) -> SwitchConfig:
        fields = (base or SwitchConfig()).model_dump()
        fields.update(port_buffer_bytes=self.queue_bytes, ecn_threshold_bytes=self.ecn_low_bytes,
                      ecn_high_bytes=self.ecn_high_bytes, ecn_at="dequeue", trim=True,
                      pfc=False, header_priority=True)
        return SwitchConfig.make(**fields)

    def transport_config(self) -> TransportConfig:
        return TransportConfig.make(kind="ue", congestion="nscc", window_bytes=self.window_bytes,
                                    max_window_factor=1, base_rtt_us=self.base_rtt_ps / 1e6,
                                    rto_us=self.min_rto_us, min_rto_us=self.min_rto_us,
                                    ack_every_packets=self.ack_every_packets, ack_on_ecn=True,
                                    ev_set_size=HTSIM_PATHS)

    def nic_config(self, base: NicConfig | None = None) -> NicConfig:
        fields = (base or NicConfig()).model_dump()
        fields["transport"] = self.transport_config().model_dump()
        return NicConfig.make(**fields)

    def describe(self) -> str:
        return (f"htsim preset: {self.hops} hops x {self.link_latency_ps / 1e6:g} us, "
                f"{self.rate_gbps} Gb/s, base RTT {self.base_rtt_ps / 1e6:.2f} us, BDP "
                f"{self.bdp_bytes:,} B; queue {self.queue_bytes:,} B per port (trimming), ECN "
                f"RED {self.ecn_low_bytes:,}-{self.ecn_high_bytes:,} B at dequeue, window "
                f"{self.window_bytes:,} B (NSCC), an ACK per {self.ack_every_packets} packets, "
                f"header-only packets prioritised, RTO >= {self.min_rto_us:g} us")


def longest_host_path_hops(topo: Topology) -> int:
    """Links on the longest path from the first host to another (fewest hops each; hosts do
    not forward). htsim's formula takes the fabric's diameter, which every host of a
    symmetric fabric sees."""
    adj: dict[str, list[str]] = {}
    for link in topo.links:
        adj.setdefault(link.a, []).append(link.b)
        adj.setdefault(link.b, []).append(link.a)
    hosts = set(topo.hosts)
    best = 0
    if topo.hosts:
        start = topo.hosts[0]
        seen = {start: 0}
        todo = deque([start])
        while todo:
            u = todo.popleft()
            if u in hosts and u != start:
                best = max(best, seen[u])
                continue
            for v in adj.get(u, ()):
                if v not in seen:
                    seen[v] = seen[u] + 1
                    todo.append(v)
    if best == 0:
        raise TopologyError("htsim preset: the topology has no path between two hosts")
    return best


def htsim_preset(topo: Topology, mtu_bytes: int = 4096) -> HtsimPreset:
    """The preset for ``topo`` with packets of ``mtu_bytes`` payload."""
    hops = longest_host_path_hops(topo)
    lat_ps = max(round(link.config.latency_ns * 1000) for link in topo.links)
    hosts = set(topo.hosts)        # not the list: a search per link (11 s at 8,192 hosts)
    host_rates = {link.config.rate_gbps for link in topo.links
                  if link.a in hosts or link.b in hosts}
    rate = min(host_rates)
    packet = ue_data_frame_bytes(mtu_bytes)
    per_hop = (serialization_ps(packet + ETHERNET_WIRE_OVERHEAD_BYTES, rate)
               + serialization_ps(HTSIM_ACK_BYTES, rate))
    base_rtt = 2 * hops * lat_ps + hops * per_hop
    bdp = base_rtt * rate // 8000
    wire_packet = packet + ETHERNET_WIRE_OVERHEAD_BYTES
    queue = math.ceil(bdp / wire_packet) * packet
    return HtsimPreset(hops=hops, link_latency_ps=lat_ps, rate_gbps=rate, mtu_bytes=mtu_bytes,
                       packet_bytes=packet, base_rtt_ps=base_rtt, bdp_bytes=bdp,
                       queue_bytes=queue, ecn_low_bytes=int(queue * ECN_LOW_FRACTION),
                       ecn_high_bytes=int(queue * ECN_HIGH_FRACTION),
                       window_bytes=int(bdp * WINDOW_BDP_FACTOR),
                       ack_every_packets=max(1, SACK_THRESHOLD_BYTES // mtu_bytes))


def engine_for(n_hosts: int, mtu_bytes: int) -> EngineConfig:
    """Engine tables sized for a congested fabric of ``n_hosts`` (as ``fabric_scenario``)."""
    return EngineConfig.for_fabric(n_hosts, mtu_bytes=mtu_bytes)
