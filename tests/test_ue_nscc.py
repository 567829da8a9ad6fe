"""The Ultra-Ethernet-style transport as htsim runs it: NSCC (ECN and measured delay), ACK
coalescing with AckReq and ack-on-ECN, a retransmission timeout from the measured RTT with a
floor, EV sets for spraying, and the sender's completion time (its last ACK) in the results.

Small fabrics (a 3-host star, a k = 4 fat tree) so each run takes well under a second."""
from __future__ import annotations

import pytest

from spin.config import (
    EngineConfig,
    HostConfig,
    LinkConfig,
    NicConfig,
    SwitchConfig,
    TransportConfig,
)
from spin.errors import ConfigError
from spin.loadbalancing import with_scheme
from spin.loadbalancing.compare import add_workload, fabric_scenario
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

SIZE = 256 * 1024


def _star(transport: TransportConfig, loss: float = 0.0, **switch) -> Scenario:
    """Hosts 1 and 2 send 256 KiB to host 0 (incast) through one switch."""
    topo = Topology.star(3, LinkConfig(rate_gbps=100, latency_ns=1000.0, loss_rate=loss,
                                       loss_seed=5))
    sc = Scenario(topo, nic=NicConfig(transport=transport),
                  switch=SwitchConfig(**{"port_buffer_bytes": 64 * 1024, "trim": True,
                                         "ecn_threshold_bytes": 8 * 1024,
                                         "ecn_high_bytes": 32 * 1024, "ecn_at": "dequeue",
                                         **switch}),
                  engine=EngineConfig(mtu_bytes=4096), host=HostConfig(memory_bytes=4 * SIZE))
    for src in (1, 2):
        sc.host_program(src).send(0, SIZE, qp=1, local_addr=0, remote_addr=SIZE * src)
    sc.host_program(0).wait_recv(qp=1, count=2)
    return sc


def _run(sc: Scenario):
    r = Simulation(sc).run()
    assert all(h.finished for h in r.hosts), [h.waiting_for for h in r.hosts]
    return r


def _nics(r, field: str) -> int:
    return sum(getattr(n, field) for n in r.nics)


def test_acks_coalesce_and_ackreq_keeps_a_small_window_moving():
    base = {"kind": "ue", "window_bytes": 2 * 4096, "max_window_factor": 1, "rto_us": 300.0}
    every = _run(_star(TransportConfig(**base, ack_every_packets=1)))
    coalesced = _run(_star(TransportConfig(**base, ack_every_packets=8)))
    assert _nics(coalesced, "acks_sent") < _nics(every, "acks_sent") / 1.5
    # a 2-packet window never fills 8 packets: AckReq on the packet that closes the window
    # gets it acknowledged at once instead of after a timeout
    assert _nics(coalesced, "timeouts") == 0
    assert coalesced.end_time_ps < 1.2 * every.end_time_ps


def test_ecn_marked_packets_are_acknowledged_at_once():
    base = {"kind": "ue", "ack_every_packets": 16}
    on = _run(_star(TransportConfig(**base, ack_on_ecn=True)))
    off = _run(_star(TransportConfig(**base, ack_on_ecn=False)))
    assert sum(l.ecn_marks for l in on.links) > 0
    assert _nics(on, "acks_sent") > _nics(off, "acks_sent")


def test_timeout_follows_the_measured_rtt_down_to_its_floor():
    """Random loss is recovered by the timeout: from the measured RTT (tens of us here) when
    the floor allows, not the configured 500 us."""
    lossy = {"kind": "ue", "rto_us": 500.0}
    fast = _run(_star(TransportConfig(**lossy, min_rto_us=30.0), loss=0.01))
    slow = _run(_star(TransportConfig(**lossy, min_rto_us=400.0), loss=0.01))
    assert _nics(fast, "timeouts") > 0
    assert fast.end_time_ps < slow.end_time_ps


def test_sender_completion_is_the_last_ack():
    r = _run(_star(TransportConfig(kind="ue")))
    for m in r.messages:
        assert m.t_acked_ps is not None and m.t_acked_ps > m.t_done_ps - 2_000_000
        assert m.sender_completion_ps == m.t_acked_ps - m.t_post_ps
    open_loop = Scenario(Topology.star(2), host=HostConfig(memory_bytes=2 * 4096))
    open_loop.host_program(0).send(1, 4096, qp=1, remote_addr=4096)
    open_loop.host_program(1).wait_recv(qp=1, count=1)
    m = _run(open_loop).messages[0]
    assert m.t_acked_ps is None and m.sender_completion_ps is None


def _sprayed_permutation(buffer_bytes: int = 64 * 1024, **transport):
    sc = fabric_scenario("fat_tree", {"k": 4}, transport="ue",
                         switch={"port_buffer_bytes": buffer_bytes,
                                 "ecn_threshold_bytes": 8 * 1024,
                                 "ecn_high_bytes": 48 * 1024, "ecn_at": "dequeue"})
    sc.nic = NicConfig(transport=TransportConfig(kind="ue", **transport))
    add_workload(sc, "permutation", message_bytes=512 * 1024, seed=1, fill=False)
    return with_scheme(sc, "spray")


def test_nscc_ignores_marks_without_a_standing_queue():
    """Sprayed packets collide briefly and get marked; NSCC only cuts when the measured delay
    is above target too, the ECN-only window cuts on every marked window."""
    nscc = _run(_sprayed_permutation(congestion="nscc"))
    window = _run(_sprayed_permutation(congestion="window"))
    assert sum(l.ecn_marks for l in window.links) > 0
    done = lambda r: max(m.t_done_ps for m in r.messages)
    assert done(nscc) < done(window)


def test_nscc_drains_an_incast_without_timeouts():
    """Two senders into one port: the first windows overflow it (trims), then the delay and the
    marks steer NSCC; it finishes before the ECN-only window and no sender times out."""
    nscc = _run(_star(TransportConfig(kind="ue", congestion="nscc")))
    window = _run(_star(TransportConfig(kind="ue", congestion="window")))
    assert _nics(nscc, "timeouts") == 0
    assert nscc.end_time_ps < window.end_time_ps


def test_ev_set_of_one_keeps_a_sprayed_flow_on_one_path():
    # buffers that never trim: a resent packet would count as reordered
    one = _run(_sprayed_permutation(1 << 20, ev_set_size=1))
    many = _run(_sprayed_permutation(1 << 20, ev_set_size=64))
    assert _nics(one, "retransmissions") == 0
    assert _nics(one, "reorder_degree") == 0 and _nics(many, "reorder_degree") > 0


@pytest.mark.parametrize("fields, needle", [
    ({"congestion": "bbr"}, "congestion"),
    ({"min_rto_us": 0}, "min_rto_us"),
    ({"ev_set_size": -1}, "ev_set_size"),
    ({"ack_on_ecn": "sometimes"}, "ack_on_ecn"),
])
def test_bad_transport_fields_name_field_and_value(fields, needle):
    with pytest.raises(ConfigError, match=needle):
        TransportConfig.make(kind="ue", **fields)
