"""A NIC transport of your own, compiled apart from the engine: paced open loop.

Open loop (``kind = "none"``) sends a message's packets back to back; four hosts writing to one
at once overflow the switch's queue, and open loop never resends what was dropped. *Paced* sends
one packet per gap at most, so four senders share the receiver's link instead of flooding it.

A transport is a module with the eight functions of the contract (``nic_emulator.transports``);
this one takes seven of them from the open-loop transport and changes only ``tx_step``. What it
owns (a column per NIC, a counter, a parameter) is declared with ``Declares`` and laid out in
tables of its own (``spin.transport_api``), so spin compiles it alone, in about two seconds,
and never recompiles the engine. Run it with ``python examples/transports/paced.py``; a
scenario names it by import path (``kind = "package.module:TRANSPORT"``) or, once a package
publishes it, by the name of its entry point in group ``spin.transports``.
"""
from pydantic import BaseModel, ConfigDict, Field

from nic_emulator.transports import open_loop
from spin.config import EngineConfig, NicConfig
from spin.engine import state as S
from spin.engine.columns import Declares
from spin.engine.heap import push_event
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from spin.transport_api import own_columns
from spin.transports import TransportOption

# 1. Its registration, its parameters and its state ------------------------------------------------
TRANSPORT = TransportOption("paced", "open loop, one packet per gap at most", __name__,
                            (__name__,))


class PacedParams(BaseModel):
    """The keys of ``[nic.transport.paced]``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gap_ns: float = Field(100.0, gt=0, le=1e6)


PARAMS = PacedParams
DECLARES = Declares(
    owner=__name__,
    dev=[("NEXT_PS", "earliest start of the NIC's next packet, ps")],
    ntr=[("HELD", "transmit turns held back by the gap")],
    trp=[("GAP_PS", "least time between two packets of a NIC, ps")],
    fill=lambda tc, env: {"GAP_PS": round(tc.table("paced").gap_ns * 1000)},
)
C = own_columns(DECLARES)   # C.dev.NEXT_PS, C.ntr.HELD, C.params.GAP_PS: column numbers


# 2. Its code: the open-loop transport, with a gap between two packets ----------------------------
carries, admit, find_message = open_loop.carries, open_loop.admit, open_loop.find_message
accepted, on_control = open_loop.accepted, open_loop.on_control
on_trimmed, on_timeout = open_loop.on_trimmed, open_loop.on_timeout


def tx_step(st, dev, now):
    """The transmit engine's turn: too early, come back when the gap has passed; else send
    the next packet as open loop does, and start the gap."""
    due = st.apart_dev[dev, C.dev.NEXT_PS]
    if now < due:
        st.apart_dev[dev, C.ntr.HELD] += 1
        push_event(st, due, dev, S.EV_TXM, dev, 0, 0)
        return
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.apart_dev[dev, C.dev.NEXT_PS] = now + st.apart_params[C.params.GAP_PS]
    open_loop.tx_step(st, dev, now)


# 3. An incast, open loop and paced ----------------------------------------------------------------
def incast(transport: dict):
    """Hosts 1-4 each write 64 KiB to host 0 at once, through a switch queue of 16 frames."""
    sc = Scenario(Topology.star(5), nic=NicConfig.make(transport=transport),
                  engine=EngineConfig(queue_frames=16))
    for h in range(1, 5):
        sc.host_program(h).send(0, 64 * 1024, qp=h, remote_addr=h * 65536)
    return Simulation(sc).run()


if __name__ == "__main__":
    # four senders share 100 Gb/s: a 1 KiB frame every 400 ns each is 88 % of the link
    runs = {"none": incast({"kind": "none"}),
            "paced": incast({"kind": f"{__name__}:TRANSPORT", "paced": {"gap_ns": 400}})}
    for name, result in runs.items():
        done = max((m.t_done_ps for m in result.messages), default=0) / 1e6
        print(f"{name:6s} messages delivered {len(result.messages)} of 4, frames dropped "
              f"{sum(result.drops.values())}, last delivery at {done:.1f} us")
    held = [n.own_counters["held"] for n in runs["paced"].nics]
    print(f"paced: turns held back per NIC {held}")
