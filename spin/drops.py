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
}


def drop_counts_to_dict(counts) -> dict[str, int]:
    """Turn a per-code counter array into ``{reason_name: count}``, omitting zeros."""
    return {DROP_REASON_NAMES.get(code, f"code_{code}"): int(n)
            for code, n in enumerate(counts) if n}

BAD_DMA_LENGTH = 12  # wire-level: RETH DMA length above 2^31 B or not matching FIRST/ONLY payload
DROP_REASON_NAMES[BAD_DMA_LENGTH] = "bad_dma_length"
