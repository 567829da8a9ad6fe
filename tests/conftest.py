"""Session set-up: the engine is compiled (or loaded from the cache) once, here, before pytest-xdist
starts its workers, so no test pays for it and two workers never compile it side by side."""
import time


def pytest_configure(config):
    if hasattr(config, "workerinput"):      # an xdist worker: the controller did it
        return
    from spin.simulation import Scenario, Simulation
    from spin.topology import Topology
    t0 = time.perf_counter()
    Simulation(Scenario(Topology.pair()), quiet=False).compile()
    took = time.perf_counter() - t0
    if took > 1.0:
        print(f"spin: engine ready for the test session in {took:.1f} s")
