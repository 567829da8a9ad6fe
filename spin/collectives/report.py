"""The ``spin allreduce`` table and its size parsing: this code now lives in
``spin.collectives.allreduce_table`` (a name that says what it is). This module only re-exports its
public names, so imports of ``spin.collectives.report`` keep working for one release; new code
imports ``spin.collectives.allreduce_table``."""
from .allreduce_table import (  # noqa: F401 (re-exported)
    HEADERS,
    parse_size,
    allreduce_table,
    selected_algorithms,
    DEFAULT_ALGORITHMS,
    SWITCH_ALGORITHM,
    default_algorithms,
    shared_programs,
    allreduce_topology,
    run_allreduce_cli,
)

__all__ = ["HEADERS", "parse_size", "allreduce_table", "selected_algorithms", "DEFAULT_ALGORITHMS",
           "SWITCH_ALGORITHM", "default_algorithms", "shared_programs", "allreduce_topology",
           "run_allreduce_cli"]
