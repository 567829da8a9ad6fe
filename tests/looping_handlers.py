"""A handler that never returns, and a script that runs it (for the watchdog tests)."""
import sys

import numpy as np

from spin.api import SUCCESS
from spin.config import EngineConfig
from spin.handler import ExecutionContext, HandlerProgram
from spin.simulation import Scenario, Simulation
from spin.topology import Topology


def endless_payload(ctx, pkt, mem):
    while mem[0] >= 0:          # mem[0] stays 0: loops forever, writing memory each round
        mem[1] += 1
    return SUCCESS


def endless_program() -> HandlerProgram:
    return HandlerProgram("endless", payload=endless_payload, memory=np.zeros(2, np.int64))


def endless_scenario(timeout_s: float) -> Scenario:
    sc = Scenario(Topology.pair(), engine=EngineConfig(handler_timeout_s=timeout_s))
    sc.install(ExecutionContext(1, endless_program(), match_qp=3))
    sc.host_program(0).send(1, 100, qp=3)
    return sc


if __name__ == "__main__":
    sim = Simulation(endless_scenario(float(sys.argv[1])))
    sim.run_until(-1)            # compile (or load) the engine first
    print("ready", flush=True)
    sim.run()
