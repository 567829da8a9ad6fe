"""What the Ultra-Ethernet-style transport (``nic_emulator.transports.ue``) and its congestion
window own in the engine state, and the keys of its ``[nic.transport.ue]`` table (``PARAMS``,
NSCC's included: ``nic_emulator.nscc_columns`` declares NSCC's columns). Declarations only.
"""
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from spin.bounds import size_bytes, time_us
from spin.engine.columns import Declares


class UeParams(BaseModel):
    """``[nic.transport.ue]``: the same keys, meanings and defaults as the flat
    ``[nic.transport]`` ones (``spin.config.TransportConfig`` documents them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ack_every_packets: int = Field(1, ge=1, le=64)
    ack_on_ecn: bool = True
    rto_us: float = time_us(500.0, positive=True)
    min_rto_us: float = time_us(100.0, positive=True)
    congestion: Literal["nscc", "window"] = "nscc"
    target_delay_us: float = time_us(0.0)
    window_bytes: int = size_bytes(0)
    base_rtt_us: float = time_us(12.0, positive=True)
    max_window_factor: int = Field(2, ge=1, le=64)


PARAMS = UeParams


def _fill(tc, env) -> dict[str, int]:
    """The window starts at ``window_bytes``, or one bandwidth-delay product of the host link
    over the base RTT, never below one MTU."""
    window = tc.window_bytes or max(env.mtu, int(env.host_rate_gbps * 1000 * tc.base_rtt_us / 8))
    return {"CWND_INIT": window, "CWND_MAX": window * tc.max_window_factor,
            "ACK_ON_ECN": 1 if tc.ack_on_ecn else 0, "CC": 1 if tc.congestion == "nscc" else 0}


DECLARES = Declares(
    owner="nic_emulator.transports.ue",
    conn=[
        ("INFLIGHT", "UE sender: packets sent and neither acknowledged nor known lost"),
        ("RTX_N", "UE sender: packets marked for retransmission"),
        ("CWND", "UE sender: congestion window, bytes"),
        ("ACKED_WIN", "UE sender: bytes acknowledged in the current window"),
        ("MARKED_WIN", "UE sender: of those, bytes acknowledged with ECN (or trimmed)"),
    ],
    dev=[("RTX_PENDING", "UE: packets marked for retransmission over all the NIC's "
          "connections")],
    trp=[
        ("CWND_INIT", "UE: initial congestion window, bytes"),
        ("CWND_MAX", "UE: largest congestion window, bytes"),
        ("ACK_ON_ECN", "UE receiver: 1 acknowledges an ECN-marked packet at once"),
        ("CC", "UE congestion control: 0 the DCTCP-like window, 1 NSCC"),
    ],
    fill=_fill,
)
