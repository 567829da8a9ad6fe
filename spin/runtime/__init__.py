"""Running what was built: ``Simulation`` (one worker's engine, run), runs on one or several
workers (``fabric``, ``fabric_workers``), external endpoints' engine side and the watchdog.

The steps around it live apart: the ``Scenario`` in ``spin.describe``, ``build(scenario)`` in
``spin.assembly``, the ``RunResult`` and its readers in ``spin.results``. ``scenario``,
``compile_report``, ``results_builder`` and ``capture`` here only re-export their moved code,
for one release.
"""
