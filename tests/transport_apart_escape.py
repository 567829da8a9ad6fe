"""A transport (compiled apart by tests/test_transport_apart.py) whose transmit turn recurses,
a billion levels deep: refused before it compiles (it would overflow the native stack)."""
from nic_emulator.transports import open_loop as base

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def _deeper(st, dev, now, depth):
    if depth > 0:
        _deeper(st, dev, now, depth - 1)


def tx_step(st, dev, now):
    _deeper(st, dev, now, 1 << 30)
    base.tx_step(st, dev, now)
