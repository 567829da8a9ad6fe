"""A transport (named by import path in tests/test_transport_apart.py) whose transmit turn
never returns: the wall-clock watchdog must stop the run naming it."""
from nic_emulator.transports import open_loop as base
from spin.engine import state as S
from spin.transports import TransportOption

TRANSPORT = TransportOption("endless", "never ends a transmit turn", __name__)

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    while st.dev[dev, S.D_NODE] >= 0:
        st.apart_dev[dev, 0] += 1
