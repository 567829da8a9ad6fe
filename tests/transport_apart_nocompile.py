"""A transport (compiled apart by tests/test_transport_apart.py) that does not compile: the
error must name this file and line."""
from nic_emulator.transports import open_loop as base

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    label = "spin" + dev
    base.tx_step(st, dev, now)
    return label
