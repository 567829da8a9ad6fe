"""``Scenario``, a description, now lives in ``spin.describe.scenario``. This module only
re-exports it, so imports of ``spin.runtime.scenario`` keep working for one release; new code
imports ``spin.describe.scenario`` (or ``spin.Scenario``)."""
from spin.describe.scenario import Scenario  # noqa: F401 (re-exported)

__all__ = ["Scenario"]
