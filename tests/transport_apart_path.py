"""A transport named by import path (``kind = "tests.transport_apart_path"``), compiled apart
by tests/test_transport_apart.py: open loop that counts its transmit turns, by a step set in
its own ``[nic.transport.counting]`` table. Registration, declarations and code in one module."""
from pydantic import BaseModel, ConfigDict, Field

from nic_emulator.transports import open_loop as base
from spin.engine import state as S
from spin.engine.columns import Declares
from spin.transport_api import own_columns
from spin.transports import TransportOption

TRANSPORT = TransportOption("counting", "open loop counting its turns",
                            "tests.transport_apart_path", ("tests.transport_apart_path",))
NOT_A_TRANSPORT = "a string"


class CountingParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    step: int = Field(1, ge=1)


PARAMS = CountingParams
DECLARES = Declares(owner=__name__, ntr=[("TURNS", "transmit turns, times the step")],
                    trp=[("STEP", "what a turn adds")],
                    fill=lambda tc, env: {"STEP": tc.table("counting").step})
COLUMNS = own_columns(DECLARES)

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.apart_dev[dev, COLUMNS.ntr.TURNS] += st.apart_params[COLUMNS.params.STEP]
    base.tx_step(st, dev, now)
