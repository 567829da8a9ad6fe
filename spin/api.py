"""The handler API: what a header, payload or completion handler may call.

A handler is a plain Python function ``handler(ctx, pkt, mem) -> int``:

* ``ctx`` is the handler's own context (``spin.engine.handler_context``): its invocation, its
  host's memory, its message's state and its frame, not the engine. Pass it to the ``spin_*``
  calls below; never store it.
* ``pkt`` is the packet's RDMA payload as a writable ``uint8`` array (headers stripped, pad and
  ICRC excluded). For the completion handler it is empty.
* ``mem`` is the execution context's *handler memory*: the numpy array declared with the
  program, shared by every message the execution context handles.

Handlers are compiled by Numba together with the engine, so every call here is inlined.
Names follow sPIN/PsPIN (``spin_dma_to_host``, ``spin_send_packet``, ...). Memory effects happen
when the handler runs; the timing of commands (PCIe transfers, sends, host events) starts when
the handler ends, i.e. ``start + cycles`` on its HPU. Commands are asynchronous: the message
completes only after every command it issued has finished, so the sPIN ``*_PENDING`` return
codes behave like their base code and are accepted for source compatibility.
"""
import numpy as np

from .engine import state as S
from .engine.handler_context import HC_EXTRA_CYCLES, HC_ICRC, HC_PEND_N, HC_STAGE_N
from .engine.pool import ICRC_PENDING, ICRC_VALID, copy_bytes
from .wire.headers import IP_DST_OFF
from .wire.roce import write_icrc
from spin.jit import njit

# --- return codes (sPIN numbering) ------------------------------------------------------------
SUCCESS = 0               # the handler consumed the packet; nothing else happens to it
PROCEED = 1               # continue on the default path: the payload is written to host memory
PROCESS_DATA = 2          # header handler: run payload handlers (same as SUCCESS there)
PROCESS_DATA_PENDING = 3  # as PROCESS_DATA
DROP = 4                  # discard the packet (header handler: the whole message), counted
DROP_PENDING = 5          # as DROP
SUCCESS_PENDING = 6       # as SUCCESS

RETURN_CODE_NAMES = {
    SUCCESS: "SUCCESS", PROCEED: "PROCEED", PROCESS_DATA: "PROCESS_DATA",
    PROCESS_DATA_PENDING: "PROCESS_DATA_PENDING", DROP: "DROP", DROP_PENDING: "DROP_PENDING",
    SUCCESS_PENDING: "SUCCESS_PENDING",
}

SPIN_OK = 0


@njit(cache=True, _nrt=False)
def _push_action(ctx, kind, a, b, c, d, e):
    """Queue command ``kind`` (ACT_*) with its fields a..e in the order
    ``spin.engine.layout.COMMANDS`` declares them (unused ones 0)."""
    ctl = ctx.ctl
    k = ctl[HC_PEND_N]
    if k < 0 or k >= ctx.pend.shape[0]:
        raise IndexError("spin: too many commands issued by one handler invocation (max 256)")
    p = ctx.pend[k]
    p[0] = kind
    p[1] = a
    p[2] = b
    p[3] = c
    p[4] = d
    p[5] = e
    ctl[HC_PEND_N] = k + 1


@njit(cache=True, _nrt=False)
def _check_host_range(ctx, host_addr, nbytes):
    if ctx.device_kind != S.DEV_NIC:
        raise ValueError("spin: a switch has no host memory (DMA, host writes and events, and "
                         "puts from host memory are NIC calls)")
    if host_addr < 0 or nbytes < 0 or host_addr + nbytes > ctx.host_mem.shape[0]:
        raise IndexError("spin: host memory access out of bounds")


# --- host memory ------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def spin_dma_to_host(ctx, host_addr, src, src_offset, nbytes, generate_event=False):
    """Copy ``nbytes`` of NIC memory (a uint8 array) into host memory over PCIe."""
    if src.itemsize != 1:
        raise TypeError("spin_dma_to_host: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if src_offset < 0 or nbytes < 0 or src_offset + nbytes > src.shape[0]:
        raise IndexError("spin_dma_to_host: source range outside the given NIC buffer")
    _check_host_range(ctx, host_addr, nbytes)
    copy_bytes(ctx.host_mem, host_addr, src, src_offset, nbytes)
    _push_action(ctx, S.ACT_DMA_TO_HOST, nbytes, 1 if generate_event else 0, 0, 0, 0)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_dma_from_host(ctx, host_addr, dst, dst_offset, nbytes):
    """Read ``nbytes`` of host memory into NIC memory. Blocking: the handler waits for the data,
    so its HPU stays busy for the PCIe round trip."""
    if dst.itemsize != 1:
        raise TypeError("spin_dma_from_host: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if dst_offset < 0 or nbytes < 0 or dst_offset + nbytes > dst.shape[0]:
        raise IndexError("spin_dma_from_host: destination range outside the given NIC buffer")
    _check_host_range(ctx, host_addr, nbytes)
    copy_bytes(dst, dst_offset, ctx.host_mem, host_addr, nbytes)
    _push_action(ctx, S.ACT_DMA_FROM_HOST, nbytes, 0, 0, 0, 0)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_host_write(ctx, host_addr, value):
    """Write one 64-bit word (little-endian) to host memory, e.g. a flag the host polls."""
    _check_host_range(ctx, host_addr, 8)
    v = np.int64(value)
    for i in range(8):
        ctx.host_mem[host_addr + i] = np.uint8((v >> (8 * i)) & 0xFF)
    _push_action(ctx, S.ACT_HOST_WRITE, 8, 0, 0, 0, 0)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_host_event(ctx, value):
    """Raise an event to the host (a completion-queue entry); host programs wait for them."""
    _check_host_range(ctx, 0, 0)
    _push_action(ctx, S.ACT_HOST_EVENT, value, 0, 0, 0, 0)
    return SPIN_OK


# --- sending ---------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _stage(ctx, src, src_offset, nbytes):
    """Copy a packet's payload to the invocation's staging area; returns its offset there."""
    ctl = ctx.ctl
    off = ctl[HC_STAGE_N]
    if off < 0 or off + nbytes > ctx.stage.shape[0]:
        raise IndexError("spin: too many bytes sent by one handler invocation "
                         "(spin_send_packet, spin_set_timer)")
    copy_bytes(ctx.stage, off, src, src_offset, nbytes)
    ctl[HC_STAGE_N] = off + nbytes
    return off


@njit(cache=True, _nrt=False)
def spin_send_packet(ctx, dst_node, dest_qp, src, src_offset, nbytes, remote_addr):
    """Send ``nbytes`` from NIC memory as one RDMA WRITE ONLY packet to ``dst_node``/``dest_qp``,
    landing at ``remote_addr`` in the destination's host memory (unless a handler there
    consumes it). ``nbytes`` must fit the MTU. The bytes are copied now; the packet leaves
    when the handler ends. A NIC's packet to its own node takes the NIC's loopback (no link)."""
    if src.itemsize != 1:
        raise TypeError("spin_send_packet: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if nbytes < 0 or nbytes > ctx.mtu:
        raise ValueError("spin_send_packet: length exceeds the MTU (use spin_put_from_host)")
    if src_offset < 0 or src_offset + nbytes > src.shape[0]:
        raise IndexError("spin_send_packet: source range outside the given buffer")
    if dst_node < 0 or dst_node >= ctx.n_nodes:
        raise ValueError("spin_send_packet: unknown destination node")
    off = _stage(ctx, src, src_offset, nbytes)
    _push_action(ctx, S.ACT_SEND_PACKET, dst_node, dest_qp, off, nbytes, remote_addr)
    return SPIN_OK


MAX_TIMER_DELAY_PS = S.MAX_TIMER_DELAY_PS   # 1 s


@njit(cache=True, _nrt=False)
def spin_set_timer(ctx, delay_ps, dest_qp, src, src_offset, nbytes, remote_addr):
    """Set a one-shot timer: ``delay_ps`` after this handler started (at virtual time
    ``spin_now_ps(ctx) + delay_ps``), a packet reaches this same device's receive path without
    crossing any link, so no loss, fault or switch can touch it. It is built like
    ``spin_send_packet``'s (``nbytes`` of ``src`` copied now, at most the MTU, an RDMA WRITE
    ONLY to ``dest_qp`` with ``remote_addr`` as its RETH address) and comes from the device's
    own node, so it matches execution contexts as any packet does and a handler tells its
    timer apart by its address (``spin_msg_addr``) or by ``spin_source(ctx) == spin_node(ctx)``.
    It belongs to no connection: the NIC's transport neither sequences nor acknowledges it.
    On a NIC, a timer no execution context takes goes down the default path to host memory;
    on a switch it is dropped (counted as ``no_route``). ``delay_ps``: 1 ps to 1 s. There is
    no cancel: a handler ignores a timer it no longer needs (e.g. by a generation number in
    ``remote_addr``)."""
    if delay_ps < 1 or delay_ps > MAX_TIMER_DELAY_PS:
        raise ValueError("spin_set_timer: delay_ps outside 1 .. 10**12 (1 ps .. 1 s)")
    if src.itemsize != 1:
        raise TypeError("spin_set_timer: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if nbytes < 0 or nbytes > ctx.mtu:
        raise ValueError("spin_set_timer: length exceeds the MTU")
    if src_offset < 0 or src_offset + nbytes > src.shape[0]:
        raise IndexError("spin_set_timer: source range outside the given buffer")
    off = _stage(ctx, src, src_offset, nbytes)
    _push_action(ctx, S.ACT_TIMER, delay_ps, dest_qp, off, nbytes, remote_addr)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_put_from_host(ctx, dst_node, dest_qp, host_addr, nbytes, remote_addr):
    """Send ``nbytes`` of host memory as an RDMA WRITE message of any size (the NIC reads it
    over PCIe and segments it), as sPIN's PutFromHost."""
    _check_host_range(ctx, host_addr, nbytes)
    if dst_node < 0 or dst_node >= ctx.n_nodes:
        raise ValueError("spin_put_from_host: unknown destination node")
    _push_action(ctx, S.ACT_PUT_FROM_HOST, dst_node, dest_qp, host_addr, nbytes, remote_addr)
    return SPIN_OK


# --- switches: forwarding ---------------------------------------------------------------------
ROUTED = -1   # spin_forward's port for "the routed next hop"


@njit(cache=True, _nrt=False)
def spin_forward(ctx, port):
    """Switch: send a copy of the packet (as the handler left it) out of local port ``port``, or
    along its route with ``ROUTED``. The copy leaves when the handler ends; the packet itself
    still follows the return code (PROCEED also forwards it on its route)."""
    if ctx.device_kind != S.DEV_SWITCH:
        raise ValueError("spin_forward: only switch handlers forward (a NIC sends with "
                         "spin_send_packet)")
    if ctx.frame.shape[0] == 0:
        raise ValueError("spin_forward: no packet to forward in a completion handler")
    if port < ROUTED or port >= ctx.n_ports:
        raise ValueError("spin_forward: port outside the switch's ports (or ROUTED)")
    _push_action(ctx, S.ACT_FORWARD, port, 0, 0, 0, 0)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_multicast(ctx, group):
    """Switch: send a copy of the packet out of every port of multicast ``group`` (declared with
    ``Scenario.multicast_group``), when the handler ends."""
    if ctx.device_kind != S.DEV_SWITCH:
        raise ValueError("spin_multicast: only switch handlers multicast")
    if ctx.frame.shape[0] == 0:
        raise ValueError("spin_multicast: no packet to multicast in a completion handler")
    if group < 0:
        raise ValueError("spin_multicast: unknown multicast group")
    _push_action(ctx, S.ACT_MULTICAST, group, 0, 0, 0, 0)
    return SPIN_OK


@njit(cache=True, _nrt=False)
def spin_is_switch(ctx):
    """True when the handler runs in a switch (False: in a NIC)."""
    return ctx.device_kind == S.DEV_SWITCH


@njit(cache=True, _nrt=False)
def spin_dst(ctx):
    """Node id of the packet's destination (IPv4 destination address)."""
    f = ctx.frame
    if f.shape[0] < IP_DST_OFF + 4:
        return np.int64(-1)
    return (np.int64(f[IP_DST_OFF + 1]) << 16) | (np.int64(f[IP_DST_OFF + 2]) << 8) \
        | np.int64(f[IP_DST_OFF + 3])


# --- atomics on handler memory ----------------------------------------------------------------
@njit(cache=True, _nrt=False)
def spin_fetch_add(arr, index, value):
    """Atomic fetch-and-add on handler memory; returns the old value."""
    old = arr[index]
    arr[index] = old + value
    return old


@njit(cache=True, _nrt=False)
def spin_compare_and_swap(arr, index, expected, new):
    """Atomic compare-and-swap on handler memory; returns the old value."""
    old = arr[index]
    if old == expected:
        arr[index] = new
    return old


# --- cost and context queries -----------------------------------------------------------------
@njit(cache=True, _nrt=False)
def spin_add_cycles(ctx, cycles):
    """Charge data-dependent work (e.g. a loop whose length depends on the packet)."""
    if cycles < 0:
        raise ValueError("spin_add_cycles: cycles must be >= 0")
    ctx.ctl[HC_EXTRA_CYCLES] += cycles


@njit(cache=True, _nrt=False)
def spin_msg_offset(ctx):
    """Byte offset of this packet's payload within its message."""
    return ctx.msg_offset


@njit(cache=True, _nrt=False)
def spin_msg_size(ctx):
    """Total message length in bytes (RETH DMA length)."""
    return ctx.msg_len


@njit(cache=True, _nrt=False)
def spin_msg_addr(ctx):
    """Target host address of the message (RETH virtual address)."""
    return ctx.msg_va


@njit(cache=True, _nrt=False)
def spin_msg_rkey(ctx):
    return ctx.msg_rkey


@njit(cache=True, inline="always", _nrt=False)  # returns a view: inline it
def spin_msg_state(ctx):
    """Per-message scratch state: 16 int64 words, zeroed when the message starts."""
    return ctx.msg_state


@njit(cache=True, _nrt=False)
def spin_source(ctx):
    """Node id of the message's sender."""
    return ctx.src


@njit(cache=True, _nrt=False)
def spin_node(ctx):
    """Node id of the device running the handler: a NIC's host id, or a switch's address
    (host count + switch index), which is the source of the packets it sends."""
    return ctx.node


@njit(cache=True, _nrt=False)
def spin_qp(ctx):
    return ctx.qp


@njit(cache=True, _nrt=False)
def spin_psn(ctx):
    return ctx.psn


@njit(cache=True, _nrt=False)
def spin_hpu(ctx):
    """Index of the HPU running the handler (0 .. hpus-1)."""
    return ctx.hpu


@njit(cache=True, _nrt=False)
def spin_now_ps(ctx):
    """Virtual time at which the handler started, in picoseconds."""
    return ctx.start_ps


@njit(cache=True, inline="always", _nrt=False)  # returns a view: inline it
def spin_frame(ctx):
    """The whole received frame (Ethernet header to ICRC) as a uint8 array."""
    frame = ctx.frame
    if frame.shape[0] > 0 and ctx.ctl[HC_ICRC] == ICRC_PENDING:
        write_icrc(frame, frame.shape[0])
        ctx.ctl[HC_ICRC] = ICRC_VALID
    return frame
