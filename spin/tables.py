"""A run's results as pandas DataFrames: this code now lives in ``spin.results.tables``. This
module only re-exports its public names, so imports of ``spin.tables`` keeps working for one
release; new code imports ``spin.results.tables``."""
from spin.results.tables import (  # noqa: F401 (re-exported)
    EXTRA,
    RunTables,
    run_tables,
)

__all__ = ["EXTRA", "RunTables", "run_tables"]
