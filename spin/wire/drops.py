"""Reasons for which a frame is dropped, shared by the wire parser and the engine.

Codes are small integers so the Numba engine can count them in an array indexed by code;
``DROP_REASON_NAMES`` turns the counters into a readable, JSON-friendly dict.
"""

OK = 0
# wire-level (spin.wire.roce.parse_frame)
TRUNCATED = 1
NOT_IPV4 = 2
BAD_IP_HEADER = 3
BAD_IP_CHECKSUM = 4
BAD_IP_LENGTH = 5
NOT_UDP = 6
BAD_UDP_LENGTH = 7
NOT_ROCE = 8
UNKNOWN_OPCODE = 9
BAD_BTH = 10
BAD_ICRC = 11
# engine-level
QUEUE_FULL = 16
NO_ROUTE = 17
NO_BUFFER = 18
HANDLER_DROP = 19
NO_MESSAGE_SLOT = 20
UNKNOWN_MESSAGE = 21
WRONG_DESTINATION = 22
BAD_HOST_ADDRESS = 23
TTL_EXPIRED = 26
LINK_DOWN = 27
TRIMMED = 28         # a trimmed frame (payload cut by a congested switch) reached a NIC
PRIORITY_QUEUE_FULL = 29
UNKNOWN_SOURCE = 30  # the source address belongs to no device of the fabric
# reliable transports (nic_emulator.transports) and lossy links
RANDOM_LOSS = 31         # lost on a link with LinkConfig.loss_rate > 0
DUPLICATE = 32           # a packet the receiver already placed (a retransmission it had)
OUT_OF_SEQUENCE = 33     # RC: a packet after a PSN gap (go-back-N resends it; NAKed once)
TRANSPORT_MISMATCH = 34  # a frame of a transport the NIC does not run (or an ACK for no flow)
BEYOND_WINDOW = 35       # UE: a PSN past the receiver's tracking window
PFC_WATCHDOG = 36        # flushed from a queue that a PFC pause held past the switch's watchdog

NUM_DROP_REASONS = 48

DROP_REASON_NAMES = {
    TRUNCATED: "truncated",
    NOT_IPV4: "not_ipv4",
    BAD_IP_HEADER: "bad_ip_header",
    BAD_IP_CHECKSUM: "bad_ip_checksum",
    BAD_IP_LENGTH: "bad_ip_length",
    NOT_UDP: "not_udp",
    BAD_UDP_LENGTH: "bad_udp_length",
    NOT_ROCE: "not_roce",
    UNKNOWN_OPCODE: "unknown_opcode",
    BAD_BTH: "bad_bth",
    BAD_ICRC: "bad_icrc",
    QUEUE_FULL: "queue_full",
    NO_ROUTE: "no_route",
    NO_BUFFER: "no_buffer",
    HANDLER_DROP: "handler_drop",
    NO_MESSAGE_SLOT: "no_message_slot",
    UNKNOWN_MESSAGE: "unknown_message",
    WRONG_DESTINATION: "wrong_destination",
    BAD_HOST_ADDRESS: "bad_host_address",
    TTL_EXPIRED: "ttl_expired",
    LINK_DOWN: "link_down",
    TRIMMED: "trimmed",
    PRIORITY_QUEUE_FULL: "priority_queue_full",
    UNKNOWN_SOURCE: "unknown_source",
    RANDOM_LOSS: "random_loss",
    DUPLICATE: "duplicate",
    OUT_OF_SEQUENCE: "out_of_sequence",
    TRANSPORT_MISMATCH: "transport_mismatch",
    BEYOND_WINDOW: "beyond_window",
    PFC_WATCHDOG: "pfc_watchdog",
}


def drop_counts_to_dict(counts) -> dict[str, int]:
    """Turn a per-code counter array into ``{reason_name: count}``, omitting zeros."""
    return {DROP_REASON_NAMES.get(code, f"code_{code}"): int(n)
            for code, n in enumerate(counts) if n}

BAD_DMA_LENGTH = 12  # wire-level: RETH DMA length above 2^31 B or not matching FIRST/ONLY payload
DROP_REASON_NAMES[BAD_DMA_LENGTH] = "bad_dma_length"
