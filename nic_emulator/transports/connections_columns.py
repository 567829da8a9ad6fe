"""What the reliable transports share in the engine state (``connections``, ``sending``):
the connection row's identity, sequence and receiver columns, the NIC's transport code and
counters, and the parameters every reliable transport reads. Declarations only: imported when
the engine's tables are laid out (``spin.transports.SHARED_PARTS``), so nothing compiled here.
"""
from spin.engine.columns import Declares
from spin.units import ns

DECLARES = Declares(
    owner="nic_emulator.transports.connections",
    conn=[
        ("DEV", "device"), ("PEER", "peer node"), ("QP", "queue pair"),
        ("EV", "per-flow entropy value (also the EV of the ACKs it sends)"),
        ("SND_PSN", "sender: next PSN to assign to a posted message (not wrapped)"),
        ("UNA", "sender: oldest unacknowledged PSN"),
        ("HIGH", "sender: highest PSN sent + 1"),
        ("ALPHA", "fraction of marks, fixed point (ALPHA_ONE = 1.0): DCQCN's alpha, the UE "
         "window's marked fraction"),
        ("RTO_AT", "sender: retransmission deadline (lazy: the event re-arms itself)"),
        ("RTO_PENDING", "sender: a timer event is scheduled"),
        ("RCV", "receiver: RC expected PSN; UE cumulative PSN (every earlier one arrived)"),
        ("UNACKED", "receiver: accepted packets not acknowledged yet"),
        ("ACK_ECN", "receiver: one of those arrived ECN-marked"),
        ("MAX_PSN", "receiver: highest PSN seen + 1 (reorder degree)"),
    ],
    ntr=[
        ("RETX", "packets sent again"),
        ("TIMEOUTS", "retransmission timeouts"),
        ("ACKS_TX", "ACKs sent"),
        ("NAKS_TX", "RC NAKs and UE NACKs sent"),
        ("CNPS_TX", "CNPs sent"),
        ("ACKS_RX", "ACKs received"),
        ("NAKS_RX", "NAKs received"),
        ("CNPS_RX", "CNPs received"),
        ("OOO", "data packets that arrived after a higher PSN of their connection"),
        ("REORDER", "largest such PSN distance"),
        ("DUPS", "duplicate data packets"),
    ],
    dev=[
        ("TRANSPORT", "transport: index in spin.transports.TRANSPORTS (TR_OPEN_LOOP: 0)"),
        ("ENTROPY", "entropy policy: ENT_PER_FLOW, ENT_SPRAY, ENT_REPS"),
        ("TX_NOWORK", "1: the reliable transmit engine waits for an ACK or a timer"),
    ],
    trp=[
        ("ACK_EVERY", "receiver: ACK after this many packets"),
        ("RTO_PS", "retransmission timeout"),
    ],
    fill=lambda tc, env: {"ACK_EVERY": tc.ack_every_packets, "RTO_PS": ns(tc.rto_us * 1000)},
)
