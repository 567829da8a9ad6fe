"""The Numba engine: event heap, buffer pool, ports and links, the run loop, and the call
boundary to handlers.

Device behaviour (NIC receive/transmit, host, switch forwarding) lives in ``nic_emulator`` and
``switch_emulator``; the engine module (``spin.engine.codegen``) composes them into one compiled
unit, once per spin version. Handlers are compiled apart (``spin.engine.handler_build``) and
called through their entry's address (``spin.engine.handler_abi``). Nothing here imports the
device packages at import time.
"""
