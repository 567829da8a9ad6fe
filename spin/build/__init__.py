"""Building one worker's engine from a scenario: ``build(scenario) -> Built`` (``built``), the
engine state's columns (``state_builder``), what the user sees while handlers and the engine
compile (``compile_report``) and the partition of a fabric's devices over workers.
"""
