"""A device kind with engine code of its own (``bump_emulator``, ``spin.engine.device_kinds.BUMP``):
a two-port bump-in-the-wire device between a host and its switch forwards every frame from one
port to the other after its latency, so a run through it delivers the same bytes, later by
exactly its latency plus one more link hop per direction, and counts what it carried."""
from __future__ import annotations

import numpy as np
import pytest

from spin.api import SUCCESS
from spin.config import LinkConfig
from spin.engine import state as S
from spin.engine.device_kinds import BUMP, NIC, SWITCH
from spin.errors import TopologyError
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from spin.units import ETHERNET_WIRE_OVERHEAD_BYTES, ns, serialization_ps

BUMP_NS = 250.0
NBYTES = 1_000        # one frame each way
DATA = np.random.default_rng(27).integers(0, 256, NBYTES, dtype=np.uint8)


def _run(bump_ns: float | None):
    """h0 writes to h1, which answers once it has the data; h1 sits behind a bump or not."""
    topo = Topology()
    topo.add_switch("s0")
    for h in ("h0", "h1"):
        topo.add_host(h)
    topo.add_link("h0", "s0")
    if bump_ns is None:
        topo.add_link("h1", "s0")
    else:
        topo.add_bump("b0", latency_ns=bump_ns)
        topo.add_link("h1", "b0")           # the bump's port 0 faces the host
        topo.add_link("b0", "s0")
    sc = Scenario(topo)
    sc.write_host_memory("h0", 0, DATA)
    sc.host_program("h0").send("h1", NBYTES, qp=1, remote_addr=4096) \
        .wait_recv(qp=2).mark("answered")
    sc.host_program("h1").wait_recv(qp=1).mark("received") \
        .send("h0", NBYTES, qp=2, local_addr=4096, remote_addr=8192)
    sim = Simulation(sc)
    return sim, sim.run()


@pytest.fixture(scope="module")
def runs():
    return _run(None), _run(BUMP_NS)


def test_the_bump_runs_its_own_code_with_its_own_columns(runs):
    _, (sim, _) = runs
    topo = sim.scenario.topology
    names = topo.device_names()
    assert topo.device_kinds() == [NIC, NIC, SWITCH, BUMP]
    b = names.index("b0")
    assert int(sim.st.dev[b, S.D_KIND]) == S.DEV_BUMP == BUMP.code
    assert int(sim.st.dev[b, S.D_BUMP_LAT_PS]) == ns(BUMP_NS)
    # the switch keeps its routing-table number (the bump comes after it)
    assert int(sim.st.dev[names.index("s0"), S.D_SW]) == 0


def test_a_run_through_the_bump_delivers_the_same_bytes_later_by_its_latency_and_a_hop(runs):
    (plain, plain_result), (bumped, result) = runs
    for sim in (plain, bumped):
        assert sim.host_memory(1)[4096:4096 + NBYTES].tobytes() == DATA.tobytes()
        assert sim.host_memory(0)[8192:8192 + NBYTES].tobytes() == DATA.tobytes()
    assert bumped.host_memory_digests() == plain.host_memory_digests()
    # one frame each way: the bump adds its latency, then the frame crosses a second link
    # (its propagation and its serialization again, store and forward)
    names = bumped.scenario.topology.device_names()
    out = int(bumped.st.dev[names.index("b0"), S.D_PORT0]) + 1     # toward the switch
    frame_bytes = int(bumped.st.port[out, S.PT_TX_BYTES]) // int(bumped.st.port[out, S.PT_TX_FRAMES])
    link = LinkConfig()
    hop_ps = ns(link.latency_ns) + serialization_ps(frame_bytes + ETHERNET_WIRE_OVERHEAD_BYTES,
                                                   link.rate_gbps)
    per_direction = ns(BUMP_NS) + hop_ps
    assert per_direction == 371_960          # 250 ns + 100 ns + 1,098 wire bytes at 400 Gb/s
    assert result.mark("received", 1) - plain_result.mark("received", 1) == per_direction
    assert result.mark("answered", 0) - plain_result.mark("answered", 0) == 2 * per_direction


def test_its_counters_equal_the_frames_it_carried_per_direction(runs):
    (plain, _), (bumped, _) = runs
    names = bumped.scenario.topology.device_names()
    p0 = int(bumped.st.dev[names.index("b0"), S.D_PORT0])
    counters = bumped.device_counters("b0")
    assert list(counters) == list(BUMP.counters)
    # entered on port 0 (from the host) = left by port 1, and the reverse
    assert counters["BUMP_FWD_0"] == int(bumped.st.port[p0 + 1, S.PT_TX_FRAMES])
    assert counters["BUMP_FWD_1"] == int(bumped.st.port[p0, S.PT_TX_FRAMES])
    # and these are the frames h1 sent and received without the bump
    h1_port = int(plain.st.dev[names.index("h1"), S.D_PORT0])
    assert counters["BUMP_FWD_0"] == int(plain.st.port[h1_port, S.PT_TX_FRAMES]) > 0
    s_to_h1 = int(plain.st.port[h1_port, S.PT_PEER])
    assert counters["BUMP_FWD_1"] == int(plain.st.port[s_to_h1, S.PT_TX_FRAMES]) > 0


def test_a_bump_with_other_than_two_links_is_refused_by_name():
    topo = Topology()
    topo.add_switch("s0")
    topo.add_host("h0")
    topo.add_bump("b0", latency_ns=10)
    topo.add_link("h0", "b0")
    topo.add_link("b0", "s0")
    topo.add_host("h1")
    topo.add_link("h1", "b0")
    with pytest.raises(TopologyError, match="bump 'b0': ports = 3"):
        Simulation(Scenario(topo))


def test_a_bump_latency_must_be_a_time():
    with pytest.raises(TopologyError, match="latency_ns = -1"):
        Topology().add_bump("b0", latency_ns=-1)


def _bumped_scenario() -> Scenario:
    topo = Topology()
    topo.add_switch("s0")
    topo.add_host("h0")
    topo.add_host("h1")
    topo.add_link("h0", "s0")
    topo.add_bump("b0", latency_ns=10)
    topo.add_link("h1", "b0")
    topo.add_link("b0", "s0")
    return Scenario(topo)


def _forward(ctx, pkt, mem):
    return SUCCESS


def test_a_bump_refuses_what_it_would_never_run():
    """A program, a multicast group or a scheme installed on a bump would be held and never
    run: each is one line naming the bump and where it can go instead."""
    from spin.errors import ConfigError
    from spin.handler import ExecutionContext, HandlerProgram
    sc = _bumped_scenario()
    program = HandlerProgram("count", header=_forward)
    with pytest.raises(ConfigError, match=r"^execution context of program 'count': 'b0' is a "
                                          r"bump device, which runs no handlers, schemes or "
                                          r"multicast .*; install it on a host's NIC or a "
                                          r"switch: s0$"):
        sc.install(ExecutionContext(node="b0", program=program))
    with pytest.raises(ConfigError, match=r"^multicast group: 'b0' is a bump device"):
        sc.multicast_group("b0", [0, 1])
    with pytest.raises(ConfigError, match=r"^load_balancing\('random_spray'\): 'b0' is a bump device"):
        sc.load_balancing("random_spray", "b0")
    with pytest.warns(UserWarning, match="applies to all 1 switches"):
        sc.load_balancing("random_spray")
    assert sc.switch_load_balancing == {"s0": "random_spray"}
    sc.install(ExecutionContext(node="s0", program=program))     # the switch takes it
