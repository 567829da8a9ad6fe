"""Broadcast by switch multicast: the root's NIC sends once, the switches copy each packet down
a tree over the switches, and every rank ends with the root's bytes; ``auto`` picks it only
where the switches offload collectives, and only where every rank hangs off a switch."""
from __future__ import annotations

import numpy as np
import pytest

from spin.collectives.measure import lossless
from spin.collectives.switch_broadcast import can_multicast, multicast_tree
from spin.config import HostConfig, NicConfig, SwitchConfig, TransportConfig
from spin.errors import ConfigError
from spin.runs import run
from spin.simulation import Scenario
from spin.topologies import build_topology
from spin.topology import Topology
from spin.trace_formats.model import COLLECTIVE, RankTrace, StepTrace, TraceOp
from spin.training import collectives as other
from spin.training.collective_choice import PathCosts, resolve
from spin.training.replay import ReplayConfig, replay

NBYTES = 40_000                        # 40 frames of 1 KiB, the last one short


def _leaf_spine():
    return build_topology("leaf_spine", leaves=3, spines=2, hosts_per_leaf=3)


def _costs(topo, in_network: bool) -> PathCosts:
    return PathCosts.of(topo, HostConfig.preset("network"), NicConfig(), SwitchConfig(),
                        in_network=in_network)


def test_the_tree_copies_to_each_receiver_and_each_child_switch_once():
    topo = _leaf_spine()
    tree = dict(multicast_tree(topo, tuple(range(9))))
    assert list(tree) == ["leaf0", "spine0", "leaf1", "leaf2"]     # breadth-first from h0's
    ports = topo.ports()
    peers = {s: sorted(ports[s][p][1] for p in tree[s]) for s in tree}
    assert peers == {"leaf0": ["h1", "h2", "spine0"], "spine0": ["leaf1", "leaf2"],
                     "leaf1": ["h3", "h4", "h5"], "leaf2": ["h6", "h7", "h8"]}


def test_a_group_rooted_on_another_leaf_reaches_only_its_ranks():
    """Ranks (4, 1, 7, 8): the root is host 4 on leaf1; hosts outside the group get nothing."""
    topo = _leaf_spine()
    ranks = (4, 1, 7, 8)
    host = HostConfig.preset("network").model_copy(update={"memory_bytes": 40_960})
    sc = Scenario(topo, host=host, switch=lossless())
    root = np.arange(other.elements(NBYTES), dtype=np.float32) - 5000
    sc.write_host_memory(4, 0, root)
    other.build("broadcast", sc, ranks, NBYTES, qp=2, algo="multicast")
    res = run(sc, read=[(h, 0, root.size, "float32") for h in range(9)]).require_finished()
    for h in range(9):
        got = res.read(h, 0, root.size, "float32")
        assert np.array_equal(got, root) if h in ranks else not got.any(), h


def test_every_rank_of_a_leaf_spine_gets_the_roots_bytes_and_each_link_one_copy():
    topo = _leaf_spine()
    n = len(topo.hosts)
    host = HostConfig.preset("network").model_copy(update={"memory_bytes": 40_960})
    sc = Scenario(topo, host=host, switch=lossless())
    x = np.random.default_rng(3).integers(-100, 100, (n, other.elements(NBYTES)))
    x = x.astype(np.float32)
    for r in range(n):
        sc.write_host_memory(r, 0, x[r])
    assert other.build("broadcast", sc, tuple(range(n)), NBYTES, qp=0,
                       algo="multicast") == "multicast"
    res = run(sc, read=[(r, 0, x.shape[1], "float32") for r in range(n)]).require_finished()
    for r in range(n):
        assert np.array_equal(res.read(r, 0, x.shape[1], "float32"), x[0]), r
    frames = {(link.from_device, link.to_device): link.tx_frames for link in res.links}
    packets = -(-NBYTES // 1024)
    assert frames[("h0", "leaf0")] == packets
    for hop in (("leaf0", "spine0"), ("spine0", "leaf1"), ("spine0", "leaf2")):
        assert frames[hop] == packets, hop
    assert frames.get(("leaf0", "spine1"), 0) == 0 and frames.get(("spine1", "leaf1"), 0) == 0
    for r in range(1, n):
        assert frames[(f"leaf{r // 3}", f"h{r}")] == packets, r
        assert frames.get((f"h{r}", f"leaf{r // 3}"), 0) == 0      # no rank relays


def test_auto_multicasts_only_where_the_switches_offload_collectives():
    topo = Topology.star(8)
    assert resolve("broadcast", "auto", 8, 1 << 20, _costs(topo, False)) == "scatter_direct"
    assert resolve("broadcast", "auto", 8, 1 << 20, _costs(topo, True)) == "multicast"
    assert resolve("broadcast", "auto", 8, 1 << 10, _costs(topo, True)) == "multicast"
    assert resolve("broadcast", "auto", 2, 1 << 20, _costs(topo, True)) == "binomial"
    assert not can_multicast(Topology.pair(), (0, 1))    # no switch to copy
    assert can_multicast(_leaf_spine(), tuple(range(9)))


def test_a_step_replays_its_broadcasts_by_multicast_when_offload_is_on():
    n = 8
    ops = tuple(TraceOp(i + 1, COLLECTIVE, collective="broadcast", nbytes=1 << 20,
                        deps=(i,) if i else ()) for i in range(2))
    trace = StepTrace("bc", "test", tuple(RankTrace(r, f"r{r}", ops) for r in range(n)))
    off = replay(trace, config=ReplayConfig(host_preset="network"))
    on = replay(trace, config=ReplayConfig(host_preset="network", in_network=True))
    assert {c.algo for c in off.collectives} == {"scatter_direct"}
    assert {c.algo for c in on.collectives} == {"multicast"}
    assert on.step_us < off.step_us


def test_multicast_refuses_an_acknowledged_transport():
    sc = Scenario(Topology.star(4), nic=NicConfig(transport=TransportConfig(kind="rc")))
    with pytest.raises(ConfigError, match=r"^multicast broadcast: nic.transport.kind='rc'; .*"
                                          r"valid choice: 'none'"):
        other.build("broadcast", sc, (0, 1, 2, 3), 4096, qp=0, algo="multicast")


@pytest.mark.parametrize("flags, line", [
    ([], "in-network collectives: off (--in-network lets auto broadcast by switch multicast)"),
    (["--in-network"], "in-network collectives: on (--in-network): auto broadcasts by switch "
                       "multicast")])
def test_spin_train_says_whether_the_switches_offload_collectives(capsys, flags, line):
    from pathlib import Path

    from spin.cli import main
    trace = Path(__file__).parent / "data" / "chakra-microbenchmarks" / "all_gather" / \
        "4npus_1MB" / "all_gather"
    assert main(["train", str(trace), "--quiet", *flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [x for x in out if x.startswith("in-network collectives:")] == [line]
    assert out.index(line) < next(i for i, x in enumerate(out) if "step" in x)


def test_a_lost_copy_is_not_sent_again_its_receiver_never_completes():
    """No retransmission over multicast (as UD multicast): with rank 3's link down, ranks 1
    and 2 get the root's bytes and complete; rank 3 never does, and the run says so."""
    sc = Scenario(Topology.star(4), host=HostConfig.preset("network"), switch=lossless())
    sc.payload = "generated"
    other.build("broadcast", sc, (0, 1, 2, 3), NBYTES, qp=0, algo="multicast")
    for r in range(4):
        sc.host_program(r).mark("end")
    sc.link_down(3, at_ns=0.0)                 # link 3: h3 - s0
    res = run(sc)
    assert [h.node for h in res.unfinished_hosts()] == [3]
    assert all(res.mark("end", r) > 0 for r in (1, 2))      # they received


def test_a_replay_that_lost_multicast_copies_says_so_not_deadlock():
    from spin.config import LinkConfig
    from spin.errors import TraceError
    ops = (TraceOp(1, COLLECTIVE, collective="broadcast", nbytes=64 << 10),)
    trace = StepTrace("lossy", "test", tuple(RankTrace(r, f"r{r}", ops) for r in range(4)))
    topo = Topology.star(4, LinkConfig(loss_rate=0.2, loss_seed=5))
    with pytest.raises(TraceError, match=r"^lossy: \d of 4 ranks never finished .* frame\(s\) "
                                         r"were dropped \(random_loss: \d+.*\) and were not sent "
                                         r"again"):
        replay(trace, topo, ReplayConfig(per_kind={"broadcast": "multicast"}))


def test_a_multicast_broadcast_of_one_rank_sends_nothing():
    ops = (TraceOp(1, COLLECTIVE, collective="broadcast", nbytes=4096),)
    trace = StepTrace("bc1", "test", (RankTrace(0, "r0", ops),))
    one = replay(trace, config=ReplayConfig(host_preset="network", in_network=True,
                                            per_kind={"broadcast": "multicast"}))
    assert [c.algo for c in one.collectives] == ["multicast"] and one.step_us == 0.0
