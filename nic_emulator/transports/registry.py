"""The engine's dispatch over the transports: this code now lives in
``nic_emulator.transports.dispatch`` (a name that says what it is). This module only re-exports its
public names, so imports of ``nic_emulator.transports.registry`` keep working for one release; new
code imports ``nic_emulator.transports.dispatch``."""
from .dispatch import (  # noqa: F401 (re-exported)
    CONTRACT,
    checked_module,
    dispatch_params,
    dispatch_source,
    transport_modules,
)

__all__ = ["CONTRACT", "checked_module", "dispatch_params", "dispatch_source",
           "transport_modules"]
