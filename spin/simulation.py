"""The public entry for describing and running a scenario: ``Scenario`` and ``Simulation``
(their code lives in ``spin.describe.scenario`` and
``spin.runtime.simulation``).

    from spin.simulation import Scenario, Simulation
"""
from .describe.scenario import Scenario
from .runtime.simulation import Simulation

__all__ = ["Scenario", "Simulation"]
