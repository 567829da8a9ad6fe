"""What a handler can reach: the restricted context of each handler invocation.

A handler gets ``ctx``, its packet and its execution context's handler memory, nothing else. The
context is an immutable tuple, rebuilt inside the handler's entry from the call block the engine
writes (``spin.engine.handler_abi.prepare_call``): scalars describing the invocation (its message, source, PSN, start
time, the device's node id) and five small arrays a handler may write without harming anyone
else:

* ``host_mem``: a view of *its own* host's memory (empty on a switch), so a DMA cannot land in
  another node's memory whatever address it names;
* ``msg_state``: the 16 scratch words of its own message;
* ``frame``: its own received frame (empty in a completion handler; ``spin_frame`` writes its
  ICRC first when it was deferred);
* ``pend`` / ``ctl`` / ``stage``: its pending-command table, the invocation's counters and the
  bytes of the packets it sends. Commands take effect when the handler ends, through the device's
  action sink, which checks every entry again: a handler that writes these tables directly
  instead of calling ``spin_*`` can only issue wrong commands *of its own*, refused with an
  error, never reach engine memory.

The engine's tables (scheduler, ports, frame pool, other nodes' memory) are not in the tuple, so
no index a handler computes can reach them; handlers are compiled with bounds checks, so an index
outside these arrays stops the run with a ``HandlerError`` instead.
"""
from collections import namedtuple

import numpy as np

from . import state as S
from .heap import push_event
from .pool import ICRC_PENDING, alloc_slot, copy_bytes
from .rdma import OPC_WRITE_ONLY, flow_entropy, take_psns
from ..wire.roce import finalize_roce_frame_no_icrc, write_roce_headers
from spin.jit import njit

HandlerContext = namedtuple("HandlerContext", (
    "kind", "device_kind", "node", "hpu", "start_ps", "src", "qp", "psn", "msg_offset",
    "msg_len", "msg_va", "msg_rkey", "mtu", "n_nodes", "n_ports",
    "ctl", "pend", "stage", "host_mem", "msg_state", "frame",
))

# columns of ``ctl`` (the row after the command rows of st.pend): the invocation's counters
HC_EXTRA_CYCLES = 0   # spin_add_cycles
HC_PEND_N = 1         # commands in ``pend``
HC_STAGE_N = 2        # bytes used in ``stage``
HC_ICRC = 3           # the frame's ICRC state as the handler sees it (pool.ICRC_*)
HC_COLS = 8

BTH_QP_LIMIT = 1 << 24   # destination QPs are 24-bit BTH fields


@njit(cache=True, inline="always", _nrt=False)
def staging_area(st):
    """Where ``spin_send_packet`` copies a packet's payload until the handler ends: room for a
    full frame per command, after every host's memory (no array of its own: each array of the
    engine state costs every call from Python into the engine, see ``spin.engine.state``)."""
    return st.host_mem[st.host_mem.shape[0] - S.MAX_PENDING_ACTIONS * st.pool.shape[1]:]


@njit(cache=True, _nrt=False)
def close_context(st):
    """After the handler: return the extra cycles it charged and its command count, both checked
    (the handler could write ``ctl`` directly). An ICRC that ``spin_frame`` wrote is not trusted
    further: the handler may have rewritten the packet after reading it, so a frame still pending
    gets its ICRC when next observed."""
    ctl = st.pend[S.MAX_PENDING_ACTIONS]
    extra = ctl[HC_EXTRA_CYCLES]
    if extra < 0:
        raise ValueError("spin_add_cycles: the handler charged a negative number of cycles")
    n = ctl[HC_PEND_N]
    if n < 0 or n > S.MAX_PENDING_ACTIONS:
        raise ValueError("spin: the handler's command count was overwritten (issue commands "
                         "with the spin_* calls)")
    return extra, n


@njit(cache=True, _nrt=False)
def check_host_bytes(st, dev, nbytes):
    """A command's byte count for the PCIe timing: at most the host's memory."""
    if nbytes < 0 or nbytes > st.dev[dev, S.D_HOST_MEM_SIZE]:
        raise ValueError("spin: a handler command names a transfer larger than host memory")


@njit(cache=True, _nrt=False)
def _staged_frame(st, dev, dst_node, dest_qp, psn, stage_off, nbytes, remote_addr):
    """An RDMA WRITE ONLY frame from the device to ``dst_node`` carrying staged bytes (ICRC
    deferred); returns its slot."""
    me = st.dev[dev, S.D_NODE]
    slot = alloc_slot(st)
    frame = st.pool[slot]
    off = write_roce_headers(frame, me, dst_node, flow_entropy(me, dst_node, dest_qp),
                             OPC_WRITE_ONLY, dest_qp, psn, 0, remote_addr, 0, nbytes, nbytes,
                             psn & 0xFFFF)
    copy_bytes(frame, off, staging_area(st), stage_off, nbytes)
    st.slot_meta[slot, S.SM_LEN] = finalize_roce_frame_no_icrc(frame, off, nbytes)
    st.slot_meta[slot, S.SM_ICRC] = ICRC_PENDING
    return slot


@njit(cache=True, _nrt=False)
def _check_staged(st, dest_qp, stage_off, nbytes):
    """The QP and staged bytes of a send or timer command (0: fine, 1: bad QP, 2: bad bytes)."""
    if dest_qp < 0 or dest_qp >= BTH_QP_LIMIT:
        return 1
    if nbytes < 0 or nbytes > st.sc[S.SC_MTU] or stage_off < 0 \
            or stage_off + nbytes > st.pend[S.MAX_PENDING_ACTIONS, HC_STAGE_N]:
        return 2
    return 0


@njit(cache=True, _nrt=False)
def build_staged_packet(st, dev, dst_node, dest_qp, stage_off, nbytes, remote_addr):
    """Build the RDMA WRITE ONLY frame of a ``spin_send_packet`` command from its staged payload
    and return its slot (PSN taken now, in command order; ICRC deferred)."""
    if dst_node < 0 or dst_node >= st.sc[S.SC_N_NODES]:
        raise ValueError("spin_send_packet: unknown destination node")
    bad = _check_staged(st, dest_qp, stage_off, nbytes)
    if bad == 1:
        raise ValueError("spin_send_packet: destination QP outside 0 .. 2^24-1")
    if bad == 2:
        raise ValueError("spin_send_packet: the command names bytes the handler did not stage")
    psn = take_psns(st, dev, dst_node, dest_qp, 1)
    return _staged_frame(st, dev, dst_node, dest_qp, psn, stage_off, nbytes, remote_addr)


@njit(cache=True, _nrt=False)
def build_timer_packet(st, dev, delay_ps, dest_qp, stage_off, nbytes, remote_addr):
    """Build the packet of a ``spin_set_timer`` command: an RDMA WRITE ONLY from the device to
    itself with the staged payload, PSN 0 (it belongs to no connection: the receive path takes
    it without transport sequencing). Returns its slot."""
    if delay_ps < 1 or delay_ps > S.MAX_TIMER_DELAY_PS:
        raise ValueError("spin_set_timer: delay_ps outside 1 .. 10**12 (1 ps .. 1 s)")
    bad = _check_staged(st, dest_qp, stage_off, nbytes)
    if bad == 1:
        raise ValueError("spin_set_timer: QP outside 0 .. 2^24-1")
    if bad == 2:
        raise ValueError("spin_set_timer: the command names bytes the handler did not stage")
    return _staged_frame(st, dev, st.dev[dev, S.D_NODE], dest_qp, 0, stage_off, nbytes,
                         remote_addr)


@njit(cache=True, _nrt=False)
def schedule_timer(st, dev, p):
    """Apply a ``spin_set_timer`` command (row ``p`` of ``st.pend``), on a NIC or a switch: its
    packet reaches the device's own receive path ``delay_ps`` after the handler started (an
    event in the scheduler, crossing no link)."""
    delay = p[S.PA_TIMER_DELAY_PS]
    slot = build_timer_packet(st, dev, delay, p[S.PA_TIMER_QP], p[S.PA_TIMER_STAGED_OFFSET],
                              p[S.PA_TIMER_NBYTES], p[S.PA_TIMER_REMOTE_VA])
    push_event(st, st.cur[S.CUR_TIME] + delay, dev, S.EV_ARRIVE, dev, S.ARRIVE_TIMER, slot)


def sample_context(st) -> HandlerContext:
    """A context with the types the engine passes (for compiling a handler alone)."""
    i64 = np.int64(0)
    return HandlerContext(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64,
                          i64, st.pend[S.MAX_PENDING_ACTIONS], st.pend[:S.MAX_PENDING_ACTIONS],
                          st.host_mem[:1], st.host_mem[:1], st.msg_state[0], st.pool[0][:1])
