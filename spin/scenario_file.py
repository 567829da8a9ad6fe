"""Load scenario files (TOML) into a ``Scenario`` plus run options, with errors that name the file,
the field path, the bad value and the valid choices. The schema is documented and declared in
``spin.tools.scenario_schema``.

The public entry; the code is ``spin.tools.scenario_file``.

    from spin.scenario_file import load_scenario, run_loaded
"""
from .tools.scenario_file import load_scenario, run_loaded

__all__ = ["load_scenario", "run_loaded"]
