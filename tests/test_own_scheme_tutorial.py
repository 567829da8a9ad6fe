"""The test of the tutorial "A load-balancing scheme of your own" (docs/tutorials/own-scheme.md):
a power-of-two-choices scheme written outside spin finishes a colliding permutation on a k = 4
fat tree in under three quarters of ECMP's time."""
import textwrap

from spin.loadbalancing.compare import fabric_scenario
from spin.simulation import Simulation
from spin.workloads.permutation import derangement

SCHEME = '''
from spin.port_selection import PortScheme, next_random, port_load


def two_choices(view):
    n = view.ports.shape[0]
    a = view.ports[next_random(view) % n]
    b = view.ports[next_random(view) % n]
    return a if port_load(view, a) <= port_load(view, b) else b


SCHEME = PortScheme(name="two_choices", select=two_choices, per_packet=True,
                    summary="the less loaded of two random ports")
'''


def permutation_finish_us(scheme: str) -> float:
    sc = fabric_scenario("fat_tree", {"k": 4})
    sc.host = sc.host.model_copy(update={"send_overhead_ns": 0.0, "recv_overhead_ns": 0.0})
    for h, dst in enumerate(derangement(len(sc.topology.hosts), 0)):
        program = sc.host_program(h)
        for _ in range(24):
            program.send(int(dst), 4096, qp=1, remote_addr=4096)
        program.wait_recv(qp=1, count=24).mark("done")
    sc.load_balancing(scheme, *sc.topology.switches)
    result = Simulation(sc, quiet=True).run()
    assert result.drops == {}
    return max(result.marks["done"].values()) / 1e6


def test_two_choices_beat_ecmp(tmp_path, monkeypatch):
    (tmp_path / "my_lb_test").mkdir()
    (tmp_path / "my_lb_test" / "__init__.py").write_text("")
    (tmp_path / "my_lb_test" / "two_choices.py").write_text(textwrap.dedent(SCHEME))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert permutation_finish_us("my_lb_test.two_choices") < 0.75 * permutation_finish_us("ecmp")
