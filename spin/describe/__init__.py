"""Describing a scenario: the parts a ``Scenario`` holds and is checked against (host programs,
link faults, data checks, input limits).
"""
