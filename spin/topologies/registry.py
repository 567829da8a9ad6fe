"""How a topology builder is declared: this code now lives in ``spin.topologies.declare`` (a name
that says what it is). This module only re-exports its public names, so imports of
``spin.topologies.registry`` keep working for one release; new code imports
``spin.topologies.declare``."""
from .declare import (  # noqa: F401 (re-exported)
    TopologyParams,
    Builder,
    Bisection,
    Counts,
    TopologyKind,
    builder,
    first_sentence,
    valid_range,
    ParamError,
    link_config,
)

__all__ = ["TopologyParams", "Builder", "Bisection", "Counts", "TopologyKind", "builder",
           "first_sentence", "valid_range", "ParamError", "link_config"]
