"""Assembling one worker's engine from a scenario, the *build* step of a run:
``build(scenario) -> Built`` (``built``), the engine state's columns (``state_builder``), what
the user sees while handlers and the engine compile (``compile_report``) and the partition of a
fabric's devices over workers (``partition``, ``cut_cost``).

(The package was ``spin.build``, a folder name many tools take for build output; that name
still imports, for one release.)
"""
