"""Switch output ports: header-only frames (ACK/NACK, CNP, trimmed headers) go ahead of data
and are never tail-dropped behind it; ECN marking on a step or RED-like between two thresholds,
at enqueue or at dequeue; the new fields are validated.

Traffic both ways through one star switch with small buffers: hosts 1 and 2 send to host 0
while host 0 sends to host 1, so the ACKs host 1 returns for host 0's data share host 0's
congested egress port with data.
"""
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
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

SIZE = 256 * 1024


def _scenario(switch: SwitchConfig) -> Scenario:
    topo = Topology.star(3, LinkConfig(rate_gbps=100, latency_ns=500.0))
    nic = NicConfig(transport=TransportConfig(kind="ue", rto_us=200.0))
    sc = Scenario(topo, nic=nic, switch=switch,
                  engine=EngineConfig(mtu_bytes=1024, queue_frames=64),
                  host=HostConfig(memory_bytes=4 * SIZE))
    for src, dst in ((1, 0), (2, 0), (0, 1)):
        sc.host_program(src).send(dst, SIZE, qp=1, local_addr=0, remote_addr=SIZE * (1 + src))
    sc.host_program(0).wait_recv(qp=1, count=2)
    sc.host_program(1).wait_recv(qp=1, count=1)
    return sc


def _run(switch: SwitchConfig):
    result = Simulation(_scenario(switch)).run()
    assert all(h.finished for h in result.hosts)
    return result


def _port_to(result, host: str):
    return next(l for l in result.links if l.to_device == host)


SMALL = {"port_buffer_bytes": 16 * 1024, "trim": True, "ecn_threshold_bytes": 0}


def test_header_only_frames_are_never_dropped_behind_data():
    shared = _run(SwitchConfig(**SMALL, header_priority=False))
    # trimming keeps data headers, but ACKs cannot be trimmed: in one class they are dropped
    assert shared.drops.get("queue_full", 0) > 0
    prio = _run(SwitchConfig(**SMALL, header_priority=True))
    assert prio.drops.get("queue_full", 0) == 0 and prio.drops.get("priority_queue_full", 0) == 0
    assert _port_to(prio, "h0").trims > 0                      # data still overflowed
    # host 0's message, whose ACKs cross the congested port, finishes sooner
    done = lambda r: next(m.t_done_ps for m in r.messages if m.src == 0)
    assert done(prio) < done(shared)


def test_red_marks_between_thresholds_and_step_marking_is_still_expressible():
    base = {"port_buffer_bytes": 1 << 20, "header_priority": True}
    step = _run(SwitchConfig(**base, ecn_threshold_bytes=8 * 1024))
    red = _run(SwitchConfig(**base, ecn_threshold_bytes=8 * 1024, ecn_high_bytes=64 * 1024))
    never = _run(SwitchConfig(**base, ecn_threshold_bytes=512 * 1024,
                              ecn_high_bytes=1024 * 1024))
    s, r = _port_to(step, "h0"), _port_to(red, "h0")
    assert s.max_queue_bytes > 8 * 1024
    # RED marks a fraction of what the step marks while the queue sits between the thresholds
    assert 0 < r.ecn_marks
    assert sum(l.ecn_marks for l in never.links) == 0
    # deterministic: the same run marks the same frames
    again = _run(SwitchConfig(**base, ecn_threshold_bytes=8 * 1024, ecn_high_bytes=64 * 1024))
    assert again.deterministic_digest() == red.deterministic_digest()
    # at dequeue the decision sees the queue behind the frame: a different, valid run
    deq = _run(SwitchConfig(**base, ecn_threshold_bytes=8 * 1024, ecn_high_bytes=64 * 1024,
                            ecn_at="dequeue"))
    assert _port_to(deq, "h0").ecn_marks > 0
    assert deq.deterministic_digest() != red.deterministic_digest()


def test_step_marks_every_frame_above_threshold_red_fewer():
    base = {"port_buffer_bytes": 1 << 20, "header_priority": True}
    step = _port_to(_run(SwitchConfig(**base, ecn_threshold_bytes=4 * 1024)), "h0")
    red = _port_to(_run(SwitchConfig(**base, ecn_threshold_bytes=4 * 1024,
                                     ecn_high_bytes=400 * 1024)), "h0")
    assert step.ecn_marks > red.ecn_marks > 0


@pytest.mark.parametrize("fields, needle", [
    ({"ecn_threshold_bytes": 64_000, "ecn_high_bytes": 32_000}, "ecn_high_bytes"),
    ({"ecn_at": "egress"}, "ecn_at"),
    ({"header_priority": "maybe"}, "header_priority"),
])
def test_bad_port_fields_name_field_and_value(fields, needle):
    with pytest.raises(ConfigError) as e:
        SwitchConfig.make(**fields)
    assert needle in str(e.value) and "\n" not in str(e.value).split(":", 1)[0]


def test_one_port_overrides_the_switchs_queue_settings():
    marking = SwitchConfig(port_buffer_bytes=1 << 20, ecn_threshold_bytes=4 * 1024)
    assert _port_to(_run(marking), "h0").ecn_marks > 0
    sc = _scenario(marking)
    sc.configure_port("s0", "h0", ecn_threshold_bytes=0)            # this port never marks
    r = Simulation(sc).run()
    assert _port_to(r, "h0").ecn_marks == 0 and _port_to(r, "h0").max_queue_bytes > 4 * 1024
    sc = _scenario(SwitchConfig(port_buffer_bytes=1 << 20, ecn_threshold_bytes=0))
    sc.configure_port("s0", "h0", ecn_threshold_bytes=8 * 1024, ecn_high_bytes=64 * 1024,
                      ecn_at="dequeue")                            # only this port, RED
    r = Simulation(sc).run()
    assert _port_to(r, "h0").ecn_marks > 0
    assert sum(l.ecn_marks for l in r.links if l.to_device != "h0") == 0


@pytest.mark.parametrize("switch, toward, fields, needle", [
    ("s0", "h0", {"ecn_threshold_bytes": 64_000, "ecn_high_bytes": 1_000}, "towards h0"),
    ("s0", "h0", {"latency_ns": 10.0}, "'latency_ns' is not a port field"),
    ("s0", "h9", {"ecn_at": "dequeue"}, "no port towards 'h9'"),
    ("h0", "s0", {"ecn_at": "dequeue"}, "'h0' is not a switch"),
])
def test_bad_port_override_is_refused_naming_it(switch, toward, fields, needle):
    sc = _scenario(SwitchConfig())
    with pytest.raises(ConfigError, match=needle):
        sc.configure_port(switch, toward, **fields)
