"""The public entry for describing and running a scenario: ``Scenario`` and ``Simulation``
(their code lives in ``spin.runtime``).

    from spin.simulation import Scenario, Simulation
"""
from .runtime.scenario import Scenario
from .runtime.simulation import Simulation

__all__ = ["Scenario", "Simulation"]
