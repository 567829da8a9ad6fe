"""What NSCC (``nic_emulator.nscc``: the UE transport's congestion control and RTT estimate)
owns in the engine state. Its keys are in ``[nic.transport.ue]``
(``nic_emulator.transports.ue_columns.PARAMS``). Declarations only."""
from spin.engine.columns import Declares
from spin.units import ns

DECLARES = Declares(
    owner="nic_emulator.nscc",
    conn=[
        ("RTT_PSN", "sender: PSN of the packet being timed (-1: none)"),
        ("RTT_T", "sender: when it left"),
        ("SRTT", "sender: smoothed RTT, ps (0: no sample yet)"),
        ("RTTVAR", "sender: RTT variation, ps"),
        ("RTO_PS", "sender: retransmission timeout from the RTT (0: the configured one)"),
        ("RTO_EV_T", "sender: time of the timer event that counts (earlier ones are stale)"),
        ("MIN_RTT", "sender: least RTT sample, ps"),
        ("DELAY", "NSCC: newest queueing delay, ps"),
        ("AVG_DELAY", "NSCC: smoothed queueing delay, ps"),
        ("INC", "NSCC: increase owed, in bytes x cwnd (applied as INC / cwnd)"),
        ("FI_COUNT", "NSCC: bytes acknowledged in a row with near-zero delay"),
        ("FAST", "NSCC: 1 while in fast increase"),
        ("LAST_DEC", "NSCC: time of the latest multiplicative decrease"),
        ("ACHIEVED", "NSCC: bytes acknowledged in the current quick-adapt period"),
        ("QA_END", "NSCC: end of the current quick-adapt period"),
        ("QA_TRIGGER", "NSCC: a trim or timeout asks quick adapt to check"),
        ("IGNORE", "NSCC: marks of this many more acknowledged bytes are ignored"),
    ],
    trp=[
        ("BASE_RTT_PS", "NSCC: base RTT of the fabric (queueing delay = RTT sample - this)"),
        ("TARGET_PS", "NSCC: target queueing delay"),
        ("RTO_MIN_PS", "floor of the retransmission timeout derived from the measured RTT"),
    ],
    fill=lambda tc, env: {
        "BASE_RTT_PS": ns(tc.base_rtt_us * 1000),
        "TARGET_PS": ns((tc.target_delay_us or tc.base_rtt_us / 2) * 1000),
        "RTO_MIN_PS": ns(tc.min_rto_us * 1000)},
)
