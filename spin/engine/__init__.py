"""The Numba engine: event heap, buffer pool, ports and links, and the generated run loop.

Device behaviour (NIC receive/transmit, host, switch forwarding) lives in ``nic_emulator`` and
``switch_emulator``; the generated engine module (``spin.engine.codegen``) composes them with the
user's handlers. Nothing here imports those packages at import time.
"""
