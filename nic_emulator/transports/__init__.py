"""The NIC transports, one module each, registered by name in ``spin.transports.TRANSPORTS``.

A transport module defines these Numba functions (``st`` the engine state, ``dev`` the NIC,
``out`` the parsed header row of ``spin.wire.roce.parse_frame``, ``now`` in ps). The engine
calls them through a dispatch on the NIC's transport code (``D_TRANSPORT``, the index of the
name in the registry) that ``nic_emulator.transports.dispatch.dispatch_source`` generates into
the engine module, so adding a transport is this module plus its registration, nothing else:

``tx_step(st, dev, now)``
    The transmit engine's turn: send at most one packet of the NIC's send queue and schedule
    the next turn (an ``EV_TXM`` event), or leave it waiting for an ACK or a timer.
``carries(opcode) -> bool``
    Whether a data frame of this BTH opcode belongs to the transport (anything else is a
    ``TRANSPORT_MISMATCH`` drop).
``admit(st, dev, out, now) -> (reason, conn, psn)``
    A data packet before placement: ``drops.OK``, its connection row (-1: none) and its
    unwrapped PSN to go on, or the reason it is dropped (after answering it, e.g. a NAK).
``find_message(st, dev, out, psn, timer, now) -> (reason, m, first, index, t_ready, key)``
    The receive message the packet belongs to (opened by the packet that starts it), whether
    it opened it, the packet's index in it, when matching finished, and the receive-map key
    (-1: not in the map); or a drop reason.
``accepted(st, dev, conn, psn, out, message_done, now)``
    The packet was placed: acknowledge it when due.
``on_control(st, dev, out, frame, now) -> reason``
    An ACK, NAK or CNP for one of the NIC's sending connections.
``on_trimmed(st, dev, out, now)``
    A packet whose payload a switch cut arrived.
``on_timeout(st, dev, conn, now) -> bool``
    A connection's retransmission timer fired; True only when something was resent.

Code 0 is always the open-loop transport (``none``): packets it sends belong to no connection,
and handler timer packets take its receive path whatever the NIC's transport. The reliable
transports share ``connections`` (rows, PSN bitmaps, control frames) and ``sending`` (the send
queue's bookkeeping and packet emission).
"""
