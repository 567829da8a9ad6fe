"""A transport (compiled apart by tests/test_transport_apart.py) whose transmit turn writes
past the end of its NIC table: the run must stop naming it."""
from nic_emulator.transports import open_loop as base

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    st.apart_dev[dev, st.apart_dev.shape[1] + 3] += 1   # no such column
    base.tx_step(st, dev, now)
