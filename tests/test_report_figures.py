"""The figures ``spin lb`` prints, read from one real run (a sprayed permutation on a k = 4 fat
tree), against their definitions computed the obvious way: the traffic's duration and the
busiest link direction (``fabric_figures``), and the ideal of every delivered flow
(``workload_report``, paths by a Dijkstra per host pair)."""
import pytest

from spin.loadbalancing import fabric_figures, with_scheme
from spin.loadbalancing.compare import add_workload, fabric_scenario
from spin.results.records import traffic_duration_ps
from spin.simulation import Simulation
from spin.workloads import flow_messages, workload_report
from spin.workloads.metrics import FctStats, PathModel

from .test_workload_paths import reference_path


@pytest.fixture(scope="module")
def run():
    sc = fabric_scenario("fat_tree", {"k": 4}, transport="ue")
    wl = add_workload(sc, "permutation", message_bytes=20_000, seed=1, fill=False)
    sc = with_scheme(sc, "spray")
    return sc, wl, Simulation(sc, quiet=True).run()


def test_duration_and_busiest_link(run):
    _, _, result = run
    last = max(m.t_done_ps for m in result.messages)
    assert len(result.messages) == 16
    assert traffic_duration_ps(result) == last
    busiest = max(l.busy_ps for l in result.links)
    assert busiest > 0
    assert fabric_figures(result).max_utilisation == busiest / last


def test_ideal_of_every_flow(run):
    sc, wl, result = run
    topo = sc.topology
    switch_ps = {s: int(round(topo.switch_latency_ns(s, sc.switch.latency_ns) * 1000))
                 for s in topo.switches}
    model = PathModel(sc)
    msgs = flow_messages(wl, result)
    want = []
    for m in msgs:
        assert model.path(m.src, m.dst) == reference_path(topo, switch_ps, m.src, m.dst)
        flow = next(f for f in wl.flows if (f.src, f.dst, f.nbytes) == (m.src, m.dst, m.bytes))
        want.append(model.ideal_fct_ps(flow))
    report = workload_report(wl, sc, result)
    assert report.ideal_fct == FctStats.of(want)
    assert report.base_rtt_ps == max(2 * reference_path(topo, switch_ps, f.src, f.dst)[0]
                                     for f in wl.flows)
    slow = sorted(m.completion_ps / i for m, i in zip(msgs, want))
    assert report.slowdown_max == slow[-1] and report.slowdown_mean == sum(slow) / len(slow)
