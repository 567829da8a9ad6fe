"""NIC loopback and handler timers: a frame a NIC sends to its own node never reaches a link (so
a link that loses 99% of its frames cannot lose it, and no link counter moves), whatever the
transport; a handler's timer fires exactly its delay after the handler started, on a NIC or a
switch, and crosses no link either; a bad delay stops the run naming the handler."""
from __future__ import annotations

import numpy as np
import pytest

from spin.config import LinkConfig, NicConfig, TransportConfig
from spin.errors import HandlerError
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topologies import build_topology
from tests.timer_handlers import (ARMED_AT, DATA_QP, FIRED_AT, FIRED_LEN, FIRED_SRC, FIRED_WORD,
                                  FIRES, MODE_FORGED_TIMER, MODE_PUT_SELF, MODE_SEND_SELF,
                                  MODE_TIMER, PAYLOAD_BYTES, PUT_ADDR, PUT_BYTES, SEND_ADDR,
                                  TIMER_VA, timer_probe_program)

from .conftest import SWITCH_LIBRARY, pattern

PROBE_QP = 7
LOSSY = LinkConfig(loss_rate=0.99, loss_seed=3)     # LinkConfig.loss_rate must stay below 1
MATCH_PS = 100 * 1000          # NIC and switch default: 100 header-matching cycles at 1 GHz


def _scenario(link: LinkConfig = LinkConfig(), transport: str = "none",
              loopback_ns: float = 50.0, hosts: int = 2):
    nic = NicConfig(transport=TransportConfig(kind=transport), loopback_latency_ns=loopback_ns)
    return Scenario(build_topology("star", hosts=hosts, link=link), engine_programs=SWITCH_LIBRARY,
                    nic=nic)


def _links_untouched(result) -> None:
    assert [(s.tx_frames, s.drops) for s in result.links] == [(0, 0)] * len(result.links)
    assert result.drops == {}


def _send_to_itself(transport: str, loopback_ns: float):
    sc = _scenario(LOSSY, transport, loopback_ns)
    sc.write_host_memory(0, 0, pattern(0, 3000))
    sc.host_program(0).send(0, 3000, qp=3, local_addr=0, remote_addr=8192).wait_recv(qp=3)
    sc.host_program(0).mark("done")
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    return sim, result


@pytest.mark.parametrize("transport", ["none", "rc", "ue"])
def test_host_message_to_itself_never_touches_a_link(transport: str) -> None:
    """A 3-packet RDMA WRITE from host 0 to itself over a 99%-lossy link arrives whole; under
    a reliable transport its ACKs loop back too. The loopback latency is what delays it."""
    sim, result = _send_to_itself(transport, 50.0)
    assert np.array_equal(sim.host_memory(0)[8192:8192 + 3000], pattern(0, 3000))
    _links_untouched(result)
    nic = result.nic(0)
    acks = nic.acks_sent
    assert nic.acks_received == acks and nic.retransmissions == 0
    assert (transport == "none") == (acks == 0)
    assert nic.loopback_frames == 3 + acks
    _, slower = _send_to_itself(transport, 1050.0)
    assert slower.mark("done", 0) - result.mark("done", 0) == 1_000_000


@pytest.mark.parametrize("mode", [MODE_SEND_SELF, MODE_PUT_SELF])
def test_handler_sends_to_its_own_node_through_the_loopback(mode: int) -> None:
    """spin_send_packet and spin_put_from_host to the handler's own node land in its host
    memory (default path on another QP) without reaching a link."""
    sc = _scenario(LOSSY)
    probe = sc.install(ExecutionContext(0, timer_probe_program(mode), match_qp=PROBE_QP))
    data = pattern(0, PUT_BYTES)
    sc.write_host_memory(0, 0, data)
    sc.host_program(0).send(0, 64, qp=PROBE_QP, local_addr=0, remote_addr=0) \
        .wait_recv(qp=DATA_QP)
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    _links_untouched(result)
    mem = sim.handler_memory(probe)
    if mode == MODE_SEND_SELF:
        staged = mem.view(np.uint8)[64:64 + PAYLOAD_BYTES]
        assert bytes(sim.host_memory(0)[SEND_ADDR:SEND_ADDR + PAYLOAD_BYTES]) == bytes(staged)
        assert result.nic(0).loopback_frames == 2          # the trigger and the packet
    else:
        assert np.array_equal(sim.host_memory(0)[PUT_ADDR:PUT_ADDR + PUT_BYTES], data)
        assert result.nic(0).loopback_frames == 1 + 3      # the trigger and a 3-packet put


@pytest.mark.parametrize("transport", ["none", "ue"])
def test_nic_timer_fires_exactly_its_delay_after_the_handler_started(transport: str) -> None:
    """The timer's packet reaches the NIC at arm time + delay exactly (message log), its
    handler starts one header match later, it carries the staged bytes and comes from the
    NIC's own node; it needs no link (99% loss) and no transport (UE would refuse a plain
    RoCE WRITE from the network)."""
    delay = 7_777_777
    sc = _scenario(LOSSY, transport)
    probe = sc.install(ExecutionContext(0, timer_probe_program(MODE_TIMER, delay),
                                        match_qp=PROBE_QP))
    sc.host_program(0).send(0, 64, qp=PROBE_QP)
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    _links_untouched(result)
    mem = sim.handler_memory(probe)
    assert mem[FIRES] == 1 and result.nic(0).timers == 1
    fired = [m for m in result.messages if m.src == 0 and m.dst == 0 and m.bytes == PAYLOAD_BYTES]
    assert [m.t_first_arrival_ps for m in fired] == [mem[ARMED_AT] + delay]
    assert mem[FIRED_AT] == mem[ARMED_AT] + delay + MATCH_PS
    assert mem[FIRED_SRC] == 0 and mem[FIRED_LEN] == PAYLOAD_BYTES
    assert mem[FIRED_WORD] == 0x0123_4567_89AB_CDEF
    nic = result.nic(0)                    # the trigger (and its ACK); a timer is no frame sent
    assert nic.loopback_frames == 1 + nic.acks_sent and nic.acks_sent == (transport == "ue")
    assert result.end_time_ps >= mem[FIRED_AT]


def test_switch_timer_fires_exactly_its_delay_after_the_handler_started() -> None:
    """A switch handler's timer comes back to the same switch's handler, on time."""
    delay = 1_234_567
    sc = _scenario()
    probe = sc.install(ExecutionContext("s0", timer_probe_program(MODE_TIMER, delay),
                                        match_qp=PROBE_QP))
    sc.host_program(0).send(1, 64, qp=PROBE_QP)
    sim = Simulation(sc)
    result = sim.run()
    result.require_finished()
    mem = sim.handler_memory(probe)
    assert mem[FIRES] == 1 and mem[FIRED_AT] == mem[ARMED_AT] + delay + MATCH_PS
    assert mem[FIRED_SRC] == sc.n_hosts and mem[FIRED_LEN] == PAYLOAD_BYTES
    switch = result.switches[0]
    assert switch.timers == 1 and switch.handler_calls.payload == 2
    assert sum(s.tx_frames for s in result.links) == 1      # the trigger's one hop only


@pytest.mark.parametrize("delay,mode", [(-5, MODE_TIMER), (0, MODE_TIMER),
                                        (2 * 10**12, MODE_TIMER), (0, MODE_FORGED_TIMER)])
def test_bad_timer_delay_is_a_handler_error(delay: int, mode: int) -> None:
    """Checked in the call and again in the action sink (a command written by hand)."""
    sc = _scenario()
    sc.install(ExecutionContext(1, timer_probe_program(mode, delay), match_qp=PROBE_QP))
    sc.host_program(0).send(1, 64, qp=PROBE_QP)
    with pytest.raises(HandlerError) as info:
        Simulation(sc).run()
    msg = str(info.value)
    assert "payload handler 'timer_probe_payload'" in msg and "timer_handlers.py" in msg
    assert "spin_set_timer: delay_ps outside 1 .. 10**12" in msg

