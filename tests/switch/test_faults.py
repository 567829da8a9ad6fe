"""Link failures, repairs, degraded links and optical re-shapes at a virtual time: frames on a
dead link are lost and counted, routes converge after the configured delay, later traffic takes
the surviving paths, and everything is deterministic."""
from __future__ import annotations

import numpy as np

from spin.config import SwitchConfig
from spin.simulation import Simulation
from spin.topologies import build_topology
from spin.topology import Topology
from spin.units import NS

from .conftest import pattern, scenario

MTU = 1024
SIZE = 4 * MTU
N_MSGS = 60
GAP_NS = 2_000.0


def _paced_flow(fail_link_of=None, at_ns: float = 40_000.0, up_ns: float | None = None,
                rate_gbps: int | None = None):
    """Host 0 (leaf0) sends N_MSGS messages to host 1 (leaf1), one every GAP_NS, on one QP."""
    topo = build_topology("leaf_spine", leaves=2, spines=2, hosts_per_leaf=1)
    sc = scenario(topo, switch=SwitchConfig(route_convergence_ns=5_000.0))
    sc.write_host_memory(0, 0, pattern(0, SIZE))
    prog = sc.host_program(0)
    for k in range(N_MSGS):
        prog.send(1, SIZE, qp=1, local_addr=0, remote_addr=k * SIZE)
        prog.compute(GAP_NS)
    if fail_link_of is not None:
        link = fail_link_of(topo)
        if rate_gbps is not None:
            sc.degrade_link(link, rate_gbps, at_ns)
        else:
            sc.link_down(link, at_ns)
            if up_ns is not None:
                sc.link_up(link, up_ns)
    sim = Simulation(sc)
    return topo, sim, sim.run()


def _used_uplink(topo: Topology, result) -> int:
    """Index of the leaf0->spine link the flow's ECMP hash picked."""
    up = [l for l in result.links if l.from_device == "leaf0" and l.to_device.startswith("spine")]
    used = [l for l in up if l.tx_frames > 0]
    assert len(used) == 1
    return used[0].link


def test_link_failure_is_routed_around() -> None:
    topo, _, healthy = _paced_flow()
    assert len(healthy.messages) == N_MSGS and not healthy.drops
    dead = _used_uplink(topo, healthy)
    at_ns = 40_000.0
    _, sim, failed = _paced_flow(lambda t: dead, at_ns=at_ns)
    lost = failed.drops.get("link_down", 0)
    assert lost > 0 and set(failed.drops) <= {"link_down", "unknown_message"}
    # messages posted after convergence all arrive, whole, over the other spine
    t_conv = (at_ns + 5_000.0) * NS
    late = [m for m in failed.messages if m.t_post_ps is not None and m.t_post_ps > t_conv]
    posted_late = sum(1 for p in failed.posts if p[4] > t_conv)
    assert posted_late > 10 and len(late) == posted_late
    spines = {l.to_device: l for l in failed.links if l.from_device == "leaf0"
              and l.to_device.startswith("spine")}
    assert all(l.tx_frames > 0 for l in spines.values())
    # no frame crossed the dead link after it failed: at most the frames posted before it
    dead_tx = next(l for l in failed.links if l.link == dead and l.from_device == "leaf0")
    posted_before = sum(1 for p in failed.posts if p[4] < at_ns * NS)
    assert dead_tx.tx_frames <= posted_before * (SIZE // MTU)
    assert len(failed.messages) >= N_MSGS - 3
    last = sim.host_memory(1)[(N_MSGS - 1) * SIZE:N_MSGS * SIZE]
    assert np.array_equal(last, pattern(0, SIZE))


def test_link_repair_restores_both_paths_and_runs_are_deterministic() -> None:
    topo, _, healthy = _paced_flow()
    dead = _used_uplink(topo, healthy)
    _, _, a = _paced_flow(lambda t: dead, at_ns=20_000.0, up_ns=60_000.0)
    _, _, b = _paced_flow(lambda t: dead, at_ns=20_000.0, up_ns=60_000.0)
    assert a.to_dict(include_wall=False) == b.to_dict(include_wall=False)
    # after the repair the flow hashes back onto its original spine
    dead_tx = next(l for l in a.links if l.link == dead and l.from_device == "leaf0")
    frames_before = int(20_000.0 // GAP_NS) * (SIZE // MTU)
    assert dead_tx.tx_frames > frames_before


def test_degraded_link_slows_only_what_crosses_it() -> None:
    topo, _, healthy = _paced_flow()
    used = _used_uplink(topo, healthy)
    _, _, slow = _paced_flow(lambda t: used, at_ns=0.0, rate_gbps=10)
    assert not slow.drops and len(slow.messages) == N_MSGS
    lat = lambda r: np.mean([m.t_done_ps - m.t_post_ps for m in r.messages])
    assert lat(slow) > lat(healthy) + SIZE * 8 * 1000 / 10 * 0.5    # 10 Gb/s serialisation
    link = next(l for l in slow.links if l.link == used and l.from_device == "leaf0")
    # busy time per byte is that of 10 Gb/s (wire overhead included)
    assert link.busy_ps / link.tx_bytes > 8 * 1000 / 10 * 0.99


def test_optical_reshape_rewires_the_fabric() -> None:
    """h0..h3 on switches a..d; links a-b, c-d, a-c. Swapping the far ends of a-b and c-d makes
    a-d direct: h0's traffic to h3 then takes one switch hop fewer."""
    t = Topology()
    sw = [t.add_switch(n) for n in "abcd"]
    for s in sw:
        t.add_link(t.add_host(), s)
    t.add_link("a", "b")        # link 4
    t.add_link("c", "d")        # link 5
    t.add_link("a", "c")        # link 6
    t.add_link("b", "d")        # link 7
    sc = scenario(t, switch=SwitchConfig(route_convergence_ns=1_000.0))
    sc.write_host_memory(0, 0, pattern(0, SIZE))
    prog = sc.host_program(0)
    for k in range(20):
        prog.send(3, SIZE, qp=1, local_addr=0, remote_addr=k * SIZE)
        prog.compute(GAP_NS)
    sc.reshape(20_000.0, [(4, 5)])
    result = Simulation(sc).run()
    after = [m for m in result.messages if m.t_post_ps > 22_000 * NS]
    before = [m for m in result.messages if m.t_post_ps < 18_000 * NS]
    assert after and before
    # a-d is direct after the re-shape: one switch hop (and one link) less
    assert np.mean([m.t_done_ps - m.t_post_ps for m in after]) \
        < np.mean([m.t_done_ps - m.t_post_ps for m in before])
    # link 4 now joins a and d: a's frames for h3 leave on it
    l4 = next(l for l in result.links if l.link == 4 and l.from_device == "a")
    assert l4.tx_frames > 0
