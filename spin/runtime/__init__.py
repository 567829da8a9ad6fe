"""Running a scenario: ``Scenario`` and ``Simulation`` (one worker's engine), runs on several
workers (``fabric``), external endpoints' engine side, the watchdog, compile reporting, pcap
capture and collecting the ``RunResult``.
"""
