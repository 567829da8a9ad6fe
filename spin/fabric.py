"""Run a scenario on one or several worker processes, with results identical for any count.

The public entry; the code is ``spin.runtime.fabric``.

    from spin.fabric import run_scenario
"""
from .runtime.fabric import run_scenario

__all__ = ["run_scenario"]
