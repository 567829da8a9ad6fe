"""The handler API: what a header, payload or completion handler may call.

A handler is a plain Python function ``handler(ctx, pkt, mem) -> int``:

* ``ctx`` is the engine context. Pass it to the ``spin_*`` calls below; never store it.
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
import numba as nb
import numpy as np

from .engine import state as S
from .engine.pool import ICRC_PENDING, alloc_slot, copy_bytes, ensure_icrc
from .engine.rdma import OPC_WRITE_ONLY, flow_entropy, take_psns
from .wire.roce import finalize_roce_frame_no_icrc, write_roce_headers

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


@nb.njit(cache=True, _nrt=False)
def _push_action(ctx, kind, a, b, c, d, e):
    sc = ctx.sc
    k = sc[S.SC_PEND_N]
    if k >= ctx.pend.shape[0]:
        raise IndexError("spin: too many commands issued by one handler invocation (max 256)")
    p = ctx.pend[k]
    p[0] = kind
    p[1] = a
    p[2] = b
    p[3] = c
    p[4] = d
    p[5] = e
    sc[S.SC_PEND_N] = k + 1


@nb.njit(cache=True, _nrt=False)
def _host_base(ctx, host_addr, nbytes):
    dev = ctx.cur[S.CUR_DEV]
    if ctx.dev[dev, S.D_KIND] != S.DEV_NIC:
        raise ValueError("spin: a switch has no host memory (DMA, host writes and events, and "
                         "puts from host memory are NIC calls)")
    if host_addr < 0 or nbytes < 0 or host_addr + nbytes > ctx.dev[dev, S.D_HOST_MEM_SIZE]:
        raise IndexError("spin: host memory access out of bounds")
    return ctx.dev[dev, S.D_HOST_MEM_OFF] + host_addr


# --- host memory ------------------------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
def spin_dma_to_host(ctx, host_addr, src, src_offset, nbytes, generate_event=False):
    """Copy ``nbytes`` of NIC memory (a uint8 array) into host memory over PCIe."""
    if src.itemsize != 1:
        raise TypeError("spin_dma_to_host: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if src_offset < 0 or src_offset + nbytes > src.shape[0]:
        raise IndexError("spin_dma_to_host: source range outside the given NIC buffer")
    base = _host_base(ctx, host_addr, nbytes)
    copy_bytes(ctx.host_mem, base, src, src_offset, nbytes)
    _push_action(ctx, S.ACT_DMA_TO_HOST, nbytes, 1 if generate_event else 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_dma_from_host(ctx, host_addr, dst, dst_offset, nbytes):
    """Read ``nbytes`` of host memory into NIC memory. Blocking: the handler waits for the data,
    so its HPU stays busy for the PCIe round trip."""
    if dst.itemsize != 1:
        raise TypeError("spin_dma_from_host: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if dst_offset < 0 or dst_offset + nbytes > dst.shape[0]:
        raise IndexError("spin_dma_from_host: destination range outside the given NIC buffer")
    base = _host_base(ctx, host_addr, nbytes)
    copy_bytes(dst, dst_offset, ctx.host_mem, base, nbytes)
    _push_action(ctx, S.ACT_DMA_FROM_HOST, nbytes, 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_host_write(ctx, host_addr, value):
    """Write one 64-bit word (little-endian) to host memory, e.g. a flag the host polls."""
    base = _host_base(ctx, host_addr, 8)
    v = np.int64(value)
    for i in range(8):
        ctx.host_mem[base + i] = np.uint8((v >> (8 * i)) & 0xFF)
    _push_action(ctx, S.ACT_HOST_WRITE, 8, 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_host_event(ctx, value):
    """Raise an event to the host (a completion-queue entry); host programs wait for them."""
    _host_base(ctx, 0, 0)
    _push_action(ctx, S.ACT_HOST_EVENT, value, 0, 0, 0, 0)
    return SPIN_OK


# --- sending ----------------------------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
def spin_send_packet(ctx, dst_node, dest_qp, src, src_offset, nbytes, remote_addr):
    """Send ``nbytes`` from NIC memory as one RDMA WRITE ONLY packet to ``dst_node``/``dest_qp``,
    landing at ``remote_addr`` in the destination's host memory (unless a handler there
    consumes it). ``nbytes`` must fit the MTU."""
    if src.itemsize != 1:
        raise TypeError("spin_send_packet: the buffer must be a uint8 array (view it with .view(np.uint8))")
    if nbytes < 0 or nbytes > ctx.sc[S.SC_MTU]:
        raise ValueError("spin_send_packet: length exceeds the MTU (use spin_put_from_host)")
    if src_offset < 0 or src_offset + nbytes > src.shape[0]:
        raise IndexError("spin_send_packet: source range outside the given buffer")
    if dst_node < 0 or dst_node >= ctx.sc[S.SC_N_NODES]:
        raise ValueError("spin_send_packet: unknown destination node")
    dev = ctx.cur[S.CUR_DEV]
    me = ctx.dev[dev, S.D_NODE]
    slot = alloc_slot(ctx)
    frame = ctx.pool[slot]
    psn = take_psns(ctx, dev, dst_node, dest_qp, 1)
    off = write_roce_headers(frame, me, dst_node, flow_entropy(me, dst_node, dest_qp),
                             OPC_WRITE_ONLY, dest_qp, psn, 0, remote_addr, 0, nbytes, nbytes,
                             psn & 0xFFFF)
    copy_bytes(frame, off, src, src_offset, nbytes)
    ctx.slot_len[slot] = finalize_roce_frame_no_icrc(frame, off, nbytes)
    ctx.slot_trusted[slot] = ICRC_PENDING
    _push_action(ctx, S.ACT_SEND_SLOT, slot, 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_put_from_host(ctx, dst_node, dest_qp, host_addr, nbytes, remote_addr):
    """Send ``nbytes`` of host memory as an RDMA WRITE message of any size (the NIC reads it
    over PCIe and segments it), as sPIN's PutFromHost."""
    _host_base(ctx, host_addr, nbytes)
    if dst_node < 0 or dst_node >= ctx.sc[S.SC_N_NODES]:
        raise ValueError("spin_put_from_host: unknown destination node")
    _push_action(ctx, S.ACT_PUT_FROM_HOST, dst_node, dest_qp, host_addr, nbytes, remote_addr)
    return SPIN_OK


# --- switches: forwarding ---------------------------------------------------------------------
ROUTED = -1   # spin_forward's port for "the routed next hop"


@nb.njit(cache=True, _nrt=False)
def spin_forward(ctx, port):
    """Switch: send a copy of the packet (as the handler left it) out of local port ``port``, or
    along its route with ``ROUTED``. The copy leaves when the handler ends; the packet itself
    still follows the return code (PROCEED also forwards it on its route)."""
    dev = ctx.cur[S.CUR_DEV]
    if ctx.dev[dev, S.D_KIND] != S.DEV_SWITCH:
        raise ValueError("spin_forward: only switch handlers forward (a NIC sends with "
                         "spin_send_packet)")
    if ctx.cur[S.CUR_SLOT] < 0:
        raise ValueError("spin_forward: no packet to forward in a completion handler")
    if port < ROUTED or port >= ctx.dev[dev, S.D_NPORTS]:
        raise ValueError("spin_forward: port outside the switch's ports (or ROUTED)")
    _push_action(ctx, S.ACT_FORWARD, port, 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_multicast(ctx, group):
    """Switch: send a copy of the packet out of every port of multicast ``group`` (declared with
    ``Scenario.multicast_group``), when the handler ends."""
    dev = ctx.cur[S.CUR_DEV]
    if ctx.dev[dev, S.D_KIND] != S.DEV_SWITCH:
        raise ValueError("spin_multicast: only switch handlers multicast")
    if ctx.cur[S.CUR_SLOT] < 0:
        raise ValueError("spin_multicast: no packet to multicast in a completion handler")
    if group < 0 or group >= ctx.mgroup.shape[0] or ctx.mgroup[group, 1] <= 0:
        raise ValueError("spin_multicast: unknown multicast group")
    _push_action(ctx, S.ACT_MULTICAST, group, 0, 0, 0, 0)
    return SPIN_OK


@nb.njit(cache=True, _nrt=False)
def spin_is_switch(ctx):
    """True when the handler runs in a switch (False: in a NIC)."""
    return ctx.dev[ctx.cur[S.CUR_DEV], S.D_KIND] == S.DEV_SWITCH


@nb.njit(cache=True, _nrt=False)
def spin_dst(ctx):
    """Node id of the packet's destination (IPv4 destination address)."""
    slot = ctx.cur[S.CUR_SLOT]
    if slot < 0:
        return np.int64(-1)
    f = ctx.pool[slot]
    return (np.int64(f[31]) << 16) | (np.int64(f[32]) << 8) | np.int64(f[33])


# --- atomics on handler memory ----------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
def spin_fetch_add(arr, index, value):
    """Atomic fetch-and-add on handler memory; returns the old value."""
    old = arr[index]
    arr[index] = old + value
    return old


@nb.njit(cache=True, _nrt=False)
def spin_compare_and_swap(arr, index, expected, new):
    """Atomic compare-and-swap on handler memory; returns the old value."""
    old = arr[index]
    if old == expected:
        arr[index] = new
    return old


# --- cost and context queries -----------------------------------------------------------------
@nb.njit(cache=True, _nrt=False)
def spin_add_cycles(ctx, cycles):
    """Charge data-dependent work (e.g. a loop whose length depends on the packet)."""
    ctx.cur[S.CUR_EXTRA_CYCLES] += cycles


@nb.njit(cache=True, _nrt=False)
def spin_msg_offset(ctx):
    """Byte offset of this packet's payload within its message."""
    return ctx.cur[S.CUR_MSG_OFFSET]


@nb.njit(cache=True, _nrt=False)
def spin_msg_size(ctx):
    """Total message length in bytes (RETH DMA length)."""
    return ctx.msg[ctx.cur[S.CUR_MSG], S.M_LEN]


@nb.njit(cache=True, _nrt=False)
def spin_msg_addr(ctx):
    """Target host address of the message (RETH virtual address)."""
    return ctx.msg[ctx.cur[S.CUR_MSG], S.M_VA]


@nb.njit(cache=True, _nrt=False)
def spin_msg_rkey(ctx):
    return ctx.msg[ctx.cur[S.CUR_MSG], S.M_RKEY]


@nb.njit(cache=True, inline="always", _nrt=False)  # returns a view: inline it
def spin_msg_state(ctx):
    """Per-message scratch state: 16 int64 words, zeroed when the message starts."""
    return ctx.msg_state[ctx.cur[S.CUR_MSG]]


@nb.njit(cache=True, _nrt=False)
def spin_source(ctx):
    """Node id of the message's sender."""
    return ctx.cur[S.CUR_SRC]


@nb.njit(cache=True, _nrt=False)
def spin_node(ctx):
    """Node id of the device running the handler: a NIC's host id, or a switch's address
    (host count + switch index), which is the source of the packets it sends."""
    return ctx.dev[ctx.cur[S.CUR_DEV], S.D_NODE]


@nb.njit(cache=True, _nrt=False)
def spin_qp(ctx):
    return ctx.cur[S.CUR_QP]


@nb.njit(cache=True, _nrt=False)
def spin_psn(ctx):
    return ctx.cur[S.CUR_PSN]


@nb.njit(cache=True, _nrt=False)
def spin_hpu(ctx):
    """Index of the HPU running the handler (0 .. hpus-1)."""
    return ctx.cur[S.CUR_HPU]


@nb.njit(cache=True, _nrt=False)
def spin_now_ps(ctx):
    """Virtual time at which the handler started, in picoseconds."""
    return ctx.cur[S.CUR_TIME]


@nb.njit(cache=True, inline="always", _nrt=False)  # returns a view: inline it
def spin_frame(ctx):
    """The whole received frame (Ethernet header to ICRC) as a uint8 array."""
    slot = ctx.cur[S.CUR_SLOT]
    ensure_icrc(ctx, slot)
    return ctx.pool[slot][:ctx.cur[S.CUR_FRAME_LEN]]
