"""What the RoCEv2 reliable connection (``nic_emulator.transports.rc``) and its DCQCN rate
control (``nic_emulator.congestion``) own in the engine state, and the keys of its
``[nic.transport.rc]`` table (``PARAMS``). Declarations only: imported when the engine's tables
are laid out and when a scenario's transport table is checked, so nothing compiled here.
"""
from pydantic import BaseModel, ConfigDict, Field

from spin.bounds import time_us
from spin.engine.columns import Declares
from spin.units import ns


class RcParams(BaseModel):
    """``[nic.transport.rc]``: the same keys, meanings and defaults as the flat
    ``[nic.transport]`` ones (``spin.config.TransportConfig`` documents them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ack_every_packets: int = Field(1, ge=1, le=64)
    rto_us: float = time_us(500.0, positive=True)
    cnp_interval_us: float = time_us(50.0)
    dcqcn_g_shift: int = Field(8, ge=1, le=16)
    dcqcn_timer_us: float = time_us(55.0, positive=True)
    dcqcn_fast_recovery_stages: int = Field(5, ge=1, le=64)
    dcqcn_ai_mbps: int = Field(40, ge=1, le=1_600_000)
    dcqcn_hai_mbps: int = Field(400, ge=1, le=1_600_000)
    dcqcn_min_rate_mbps: int = Field(100, ge=1, le=1_600_000)


PARAMS = RcParams

DECLARES = (
    Declares(
        owner="nic_emulator.transports.rc",
        conn=[
            ("NAK_SENT", "RC receiver: a NAK for the current gap went out"),
            ("LAST_CNP", "RC receiver: time of the latest CNP (-1: none)"),
            ("MSN", "RC receiver: messages completed (AETH MSN)"),
        ],
        trp=[("CNP_INTERVAL_PS", "least time between two CNPs of a connection")],
        fill=lambda tc, env: {"CNP_INTERVAL_PS": ns(tc.cnp_interval_us * 1000)},
    ),
    Declares(
        owner="nic_emulator.congestion",
        conn=[
            ("RATE", "RC sender (DCQCN): current rate R_C, Mb/s"),
            ("TARGET", "RC sender (DCQCN): target rate R_T, Mb/s"),
            ("T_ALPHA", "RC sender: last alpha update"),
            ("T_INC", "RC sender: last rate-increase timer expiry"),
            ("STAGE", "RC sender: rate-increase timer expiries since the last cut"),
            ("NEXT_SEND", "RC sender: pacing, earliest start of the next packet"),
        ],
        ntr=[("MIN_RATE", "RC: lowest DCQCN rate any connection fell to, Mb/s (0: never cut)")],
        trp=[
            ("G_SHIFT", "DCQCN: alpha gain as a shift"),
            ("TIMER_PS", "DCQCN: rate-increase timer"),
            ("FR_STAGES", "DCQCN: fast-recovery stages"),
            ("AI_MBPS", "DCQCN: additive increase"),
            ("HAI_MBPS", "DCQCN: hyper increase"),
            ("MIN_RATE_MBPS", "DCQCN: lowest rate"),
        ],
        fill=lambda tc, env: {
            "G_SHIFT": tc.dcqcn_g_shift, "TIMER_PS": ns(tc.dcqcn_timer_us * 1000),
            "FR_STAGES": tc.dcqcn_fast_recovery_stages, "AI_MBPS": tc.dcqcn_ai_mbps,
            "HAI_MBPS": tc.dcqcn_hai_mbps, "MIN_RATE_MBPS": tc.dcqcn_min_rate_mbps},
    ),
)
