"""The alpha-beta time of a ring allreduce, derived from a scenario's own configs (nothing is
fitted), to validate the emulated ring against T = 2(n-1) alpha + 2(n-1)/n * S/B.

One ring step moves a message of m = S/n bytes from every rank to its right neighbour; all
ranks are symmetric, so a step lasts what one message costs end to end, and steps never
overlap (a rank sends step s+1 only after it consumed step s). On a star (host - switch - host,
two links of rate R) the model charges one step, in order:

    o_send                      host posts the send (HostConfig.send_overhead_ns)
    2 l_pcie + P(b_1)           the NIC reads the first packet from host memory
    sum of W(frame_i)           link 1 serialises every frame back to back (the link, slower
                                than PCIe, paces the message; W(f) = (f + 24 B) * 8 / R)
    2 l_link + d_switch + W(last)   the last frame crosses link 1, the switch pipeline and is
                                serialised again on link 2 (store and forward)
    c_match + P(b_last) + P(16) + l_pcie    the receiving NIC matches it, writes it and then a
                                16 B completion entry to host memory
    o_recv                      the host consumes the message (HostConfig.recv_overhead_ns)
    gamma * m                   reduce-scatter steps only: the host adds the block
                                (HostConfig.reduce_ps_per_byte)

with P(b) = b / pcie rate. Frames of a full packet carry MTU payload bytes and H = 58 B of
headers (Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4), the first one also a 16 B RETH, and
the wire adds 24 B (preamble, gap, FCS), so B = R * MTU / (MTU + H + 24) and, for m a multiple
of the MTU, sum W = m/B + W(16 B). Everything but m/B and gamma m is alpha:

    alpha = o_send + o_recv + 3 l_pcie + 2 l_link + d_switch + P(MTU) + W(MTU frame)
            + W(16 B RETH) + c_match + P(MTU) + P(16)

    T = 2(n-1) alpha + 2(n-1)/n * S/B + (n-1) gamma S/n

(the last term is the reduction, part of each reduce-scatter step's latency). c_match is the
per-packet match cost; a message of one packet pays the header match instead, and the
receiver's PCIe write queue, delayed by the first packet's header match, has caught up with
the link after (c_header - c_packet) / (W(frame) - P(MTU)) packets (~55 with the defaults):
both are exact for steps of at least that many full packets.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import ConfigError
from ..units import ETHERNET_WIRE_OVERHEAD_BYTES, NS

ROCE_HEADER_BYTES = 14 + 20 + 8 + 12 + 4      # Ethernet, IPv4, UDP, BTH, ICRC
RETH_BYTES = 16
CQE_BYTES = 16


@dataclass(frozen=True)
class RingModel:
    """alpha (ps per step, without the reduction), B (payload bytes per ps) and gamma (ps per
    reduced byte) of a ring on a one-switch star, each from the scenario's configs."""

    alpha_ps: float
    bandwidth_bytes_per_ps: float
    framing_efficiency: float
    reduce_ps_per_byte: float

    def time_ps(self, n: int, nbytes: int) -> float:
        """2(n-1) alpha + 2(n-1)/n S/B + (n-1) gamma S/n."""
        return (2 * (n - 1) * self.alpha_ps
                + 2 * (n - 1) / n * nbytes / self.bandwidth_bytes_per_ps
                + (n - 1) * self.reduce_ps_per_byte * nbytes / n)

    def to_dict(self) -> dict:
        """The fields as plain JSON-ready values."""
        return asdict(self)


def ring_model(scenario) -> RingModel:
    """The model's own alpha, B and gamma for ``scenario`` (a one-switch star)."""
    topo = scenario.topology
    if len(topo.switches) != 1:
        raise ConfigError(f"ring_model: derived for a star (one switch between every pair); "
                          f"the topology has {len(topo.switches)} switches")
    rate = {link.config.rate_gbps for link in topo.links}
    lat = {link.config.latency_ns for link in topo.links}
    if len(rate) != 1 or len(lat) != 1:
        raise ConfigError(f"ring_model: derived for links of one rate and latency; rates "
                          f"{sorted(rate)} Gb/s, latencies {sorted(lat)} ns")
    rate_gbps, link_ns = rate.pop(), lat.pop()
    nic, host = scenario.nic, scenario.host
    mtu = scenario.engine.mtu_bytes
    switch_ns = topo.latencies_ns.get(topo.switches[0], scenario.switch.latency_ns)

    def wire_ps(nbytes: float) -> float:               # W(b) at the link rate
        return nbytes * 8000 / rate_gbps

    def pcie_ps(nbytes: float) -> float:               # P(b)
        return nbytes * 1000 / nic.pcie_rate_gbytes_per_s

    cycle_ps = 1_000_000 / nic.hpu_clock_mhz
    frame = mtu + ROCE_HEADER_BYTES + ETHERNET_WIRE_OVERHEAD_BYTES
    alpha = ((host.send_overhead_ns + host.recv_overhead_ns) * NS
             + 3 * nic.pcie_latency_ns * NS + 2 * link_ns * NS + switch_ns * NS
             + pcie_ps(mtu) + wire_ps(frame) + wire_ps(RETH_BYTES)
             + nic.match_packet_cycles * cycle_ps + pcie_ps(mtu) + pcie_ps(CQE_BYTES))
    eta = mtu / frame
    return RingModel(alpha_ps=alpha, bandwidth_bytes_per_ps=rate_gbps / 8000 * eta,
                     framing_efficiency=eta, reduce_ps_per_byte=host.reduce_ps_per_byte)


def switch_framing_efficiency(mtu_bytes: int) -> float:
    """eta of in-switch aggregation: every packet is an RDMA WRITE ONLY carrying k = MTU/w
    elements of w bytes and its SwitchML header in a RETH (``spin.wire.switchml``)."""
    return mtu_bytes / (mtu_bytes + ROCE_HEADER_BYTES + RETH_BYTES + ETHERNET_WIRE_OVERHEAD_BYTES)


def switch_speedup_bound(scenario, n: int) -> float:
    """The framing-corrected ceiling of ring time / in-switch time for large S:
    2(n-1)/n * eta_switch / eta_ring. Each rank sends and receives S once through one switch
    (full duplex), where the ring sends 2(n-1)/n S; the reduction costs are left out, as in
    the bound (``allreduce-anchors.md``, section 4)."""
    mtu = scenario.engine.mtu_bytes
    eta_ring = mtu / (mtu + ROCE_HEADER_BYTES + ETHERNET_WIRE_OVERHEAD_BYTES)
    return 2 * (n - 1) / n * switch_framing_efficiency(mtu) / eta_ring


@dataclass(frozen=True)
class StreamingRingBound:
    """The link bound of a packet-pipelined ring (the NIC ring): every link carries
    2(n-1)/n S at B = R * eta, and only one packet's path is latency: the first packet's post
    and PCIe read, the last packet's hop (link, switch, link, store and forward) and its PCIe
    write and completion. Reductions are free and every link is busy from start to end."""

    latency_ps: float
    bandwidth_bytes_per_ps: float

    def time_ps(self, n: int, nbytes: int) -> float:
        """latency + 2(n-1)/n S/B."""
        return self.latency_ps + 2 * (n - 1) / n * nbytes / self.bandwidth_bytes_per_ps


def streaming_ring_bound(scenario) -> StreamingRingBound:
    """``StreamingRingBound`` from ``scenario``'s configs (a one-switch star, as ``ring_model``)."""
    ring = ring_model(scenario)
    topo, nic, host = scenario.topology, scenario.nic, scenario.host
    rate_gbps = topo.links[0].config.rate_gbps
    link_ns = topo.links[0].config.latency_ns
    switch_ns = topo.latencies_ns.get(topo.switches[0], scenario.switch.latency_ns)
    mtu = scenario.engine.mtu_bytes
    frame = mtu + ROCE_HEADER_BYTES + ETHERNET_WIRE_OVERHEAD_BYTES
    pcie_ps = 1000 / nic.pcie_rate_gbytes_per_s
    latency = ((host.send_overhead_ns + host.recv_overhead_ns + 3 * nic.pcie_latency_ns
                + 2 * link_ns + switch_ns) * NS
               + 2 * mtu * pcie_ps + CQE_BYTES * pcie_ps + frame * 8000 / rate_gbps)
    return StreamingRingBound(latency_ps=latency,
                              bandwidth_bytes_per_ps=ring.bandwidth_bytes_per_ps)


def injection_gbps(topo, host: int) -> float:
    """What ``host`` can send into the fabric at once (Gb/s): its link's rate, or, for the NIC
    of an accelerator router (a HammingMesh accelerator), the rates of the router's links
    other than the one to its NIC (its four mesh and network ports)."""
    from ..topologies.inventory import ACCELERATOR, INTERNAL
    ports = topo.ports()
    link, peer = ports[topo.hosts[host]][0]
    if peer in topo.roles and topo.switch_role(peer) == ACCELERATOR:
        return float(sum(topo.links[i].config.rate_gbps for i, _ in ports[peer]
                         if topo.links[i].kind != INTERNAL))
    return float(topo.links[link].config.rate_gbps)


def injection_bound_ps(topo, hosts, nbytes: int, *, mtu_bytes: int,
                       pcie_gbytes_per_s: float) -> float:
    """A lower bound on the time of an allreduce of ``nbytes`` per rank on ``hosts`` that the
    ranks compute (no reduction in switches): every rank sends at least 2(n-1)/n * S bytes
    (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations",
    JPDC 2009), here over all its ports at once at the payload rate R * MTU / (MTU + 82 B of
    headers and wire overhead) of the slowest rank; and its NIC reads S from host memory and
    writes S back (over PCIe, each direction at its own rate). Latency is left out."""
    n = len(hosts)
    eta = mtu_bytes / (mtu_bytes + ROCE_HEADER_BYTES + ETHERNET_WIRE_OVERHEAD_BYTES)
    gbps = min(injection_gbps(topo, h) for h in hosts)
    network = 2 * (n - 1) / n * nbytes / (gbps / 8000 * eta)
    return max(network, nbytes * 1000 / pcie_gbytes_per_s)
