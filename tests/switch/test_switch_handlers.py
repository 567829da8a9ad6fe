"""Handlers in switches: the same sPIN model and API as on NICs, plus forward, multicast and
drop. Data is checked byte for byte, frames by our parser (ICRC included) and by scapy."""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switch_monitor import (BYTES, COMPLETED, DROPPED, LAST_TTL, MESSAGES,
                                     PER_SOURCE, switch_monitor_program)
from handlers.switch_multicast import REPLICATED, switch_multicast_program
from spin.errors import ConfigError
from spin.handler import ExecutionContext
from spin.simulation import Simulation
from spin.topology import Topology

from .conftest import parse, pattern, scenario

MTU = 1024


def _monitor_run(blocked: int):
    """Hosts 0 and 1 each send two 4 KiB messages to host 2 through s0, which runs the monitor."""
    sc = scenario(Topology.star(3))
    size = 4 * MTU
    for src in (0, 1):
        sc.write_host_memory(src, 0, pattern(src, 2 * size))
        prog = sc.host_program(src)
        for k in range(2):
            prog.send(2, size, qp=3, local_addr=k * size, remote_addr=(src * 2 + k) * size)
    expect = 2 if blocked in (0, 1) else 4
    sc.host_program(2).wait_recv(qp=3, count=expect).mark("received")
    ctx = sc.install(ExecutionContext(node="s0", program=switch_monitor_program(64, blocked_src=blocked,
                                                                               marker=0xAB)))
    sc.capture(2)   # link 2: h2 - s0
    sim = Simulation(sc)
    return sim, sim.run(), ctx, size


def test_switch_handler_counts_filters_and_rewrites() -> None:
    sim, result, ctx, size = _monitor_run(blocked=0)
    mem = sim.handler_memory(ctx)
    assert mem[MESSAGES] == 4 and mem[COMPLETED] == 4 and mem[DROPPED] == 2
    assert list(mem[PER_SOURCE:PER_SOURCE + 2]) == [2, 2]
    assert mem[BYTES] == 2 * size                       # only host 1's payload was handled
    assert mem[LAST_TTL] == 63                          # the frame as the switch forwards it
    got = sim.host_memory(2)
    assert not got[:2 * size].any()                     # host 0's messages were dropped
    want = pattern(1, 2 * size)
    want[::MTU] = 0xAB                                  # the switch stamped every packet
    assert np.array_equal(got[2 * size:4 * size], want)
    assert result.drops == {"handler_drop": 8}          # 2 messages x 4 packets
    sw = result.switches[0]
    assert (sw.handler_calls.header, sw.handler_calls.payload, sw.handler_calls.completion) \
        == (4, 8, 4)
    assert sw.hpu_busy_ps > 0
    # rewritten frames leave with a recomputed ICRC (also after the handler read the whole
    # frame, ICRC included, before rewriting it) and a decremented TTL
    frames = [f for _, f in sim.captured_frames(2)]
    assert len(frames) == 8
    for f in frames:
        code, _ = parse(f)
        assert code == 0
        assert f[22] == 63                              # IPv4 TTL after one switch


def test_switch_handler_timing_follows_the_switch_cost_model() -> None:
    """The handled path is slower than plain forwarding by the handlers' cost, no more."""
    _, handled, _, _ = _monitor_run(blocked=-1)
    sc = scenario(Topology.star(3))
    size = 4 * MTU
    for src in (0, 1):
        sc.write_host_memory(src, 0, pattern(src, 2 * size))
        for k in range(2):
            sc.host_program(src).send(2, size, qp=3, local_addr=k * size,
                                      remote_addr=(src * 2 + k) * size)
    sc.host_program(2).wait_recv(qp=3, count=4).mark("received")
    plain = Simulation(sc).run()
    t_handled, t_plain = handled.mark("received", 2), plain.mark("received", 2)
    assert t_handled > t_plain
    # at most: match + header + payload + completion cycles per message, serialised
    cfg = sc.switch
    per_msg = (cfg.match_header_cycles + 30 + 4 * (cfg.match_packet_cycles + 20) + 10) * 1000
    assert t_handled - t_plain <= 4 * per_msg


def test_switch_multicast_reaches_every_group_member() -> None:
    sc = scenario(Topology.star(4))
    size = 3 * MTU + 100
    data = pattern(0, size)
    sc.write_host_memory(0, 0, data)
    sc.host_program(0).send(1, size, qp=4, local_addr=0, remote_addr=4096)
    group = sc.multicast_group("s0", [1, 2, 3])
    ctx = sc.install(ExecutionContext(node="s0", program=switch_multicast_program(group),
                                      match_dst=1, match_qp=4))
    for h in (1, 2, 3):
        sc.host_program(h).wait_recv(qp=4, count=1).mark("got")
    sc.capture(*range(4))
    sim = Simulation(sc)
    result = sim.run()
    for h in (1, 2, 3):
        assert np.array_equal(sim.host_memory(h)[4096:4096 + size], data), h
        assert result.mark("got", h) > 0
    assert sim.handler_memory(ctx)[REPLICATED] == 4
    by_dir = {(l.from_device, l.to_device): l for l in result.links}
    assert by_dir[("h0", "s0")].tx_frames == 4
    for h in ("h1", "h2", "h3"):
        assert by_dir[("s0", h)].tx_frames == 4
    for link in (1, 2, 3):
        for _, f in sim.captured_frames(link):
            if f[30:34] == bytes([10, 0, 0, 0]):
                continue                                # h0's own frames on its link
            code, out = parse(f)
            assert code == 0
    assert not result.drops


def test_switch_context_errors_name_the_device() -> None:
    sc = scenario(Topology.star(2))
    with pytest.raises(ConfigError, match=r"'s9' is not a device.*hosts: h0 \(node 0\), h1 "
                       r"\(node 1\); switches: s0"):
        sc.install(ExecutionContext(node="s9", program=switch_multicast_program()))
    with pytest.raises(ConfigError, match="valid ports are 0..1"):
        sc.multicast_group("s0", [0, 5])
    with pytest.raises(ConfigError, match="not a switch"):
        sc.multicast_group("h0", [0])
