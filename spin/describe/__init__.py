"""Describing a scenario: ``Scenario`` (plain data: everything a run needs) and the parts it holds
and is checked against (host programs, link faults, what a trace records, data checks, input
limits). Nothing here builds or runs anything: ``Scenario.run`` hands the scenario to
``spin.runtime`` when called.
"""
