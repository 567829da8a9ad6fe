"""The ``spin topo`` inventory tables: this code now lives in ``spin.topologies.inventory_tables``
(a name that says what it is). This module only re-exports its public names, so imports of
``spin.topologies.report`` keep working for one release; new code imports
``spin.topologies.inventory_tables``."""
from .inventory_tables import (  # noqa: F401 (re-exported)
    COMPARE,
    COMPARE_16,
    COMPARE_4096,
    COMPARE_SETS,
    available,
    parse_value,
    parse_params,
    parse_spec,
    label,
    kinds_text,
    NOTES,
    inventory_table,
    COMPARE_NOTES,
    link_rates,
    measured_basis,
    compare_table,
)

__all__ = ["COMPARE", "COMPARE_16", "COMPARE_4096", "COMPARE_SETS", "available", "parse_value",
           "parse_params", "parse_spec", "label", "kinds_text", "NOTES", "inventory_table",
           "COMPARE_NOTES", "link_rates", "measured_basis", "compare_table"]
