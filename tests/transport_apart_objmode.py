"""A transport (compiled apart by tests/test_transport_apart.py) whose transmit turn runs
Python in object mode: refused before it compiles."""
import numba

from nic_emulator.transports import open_loop as base

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    with numba.objmode():
        print("Python on the NIC")
    base.tx_step(st, dev, now)
