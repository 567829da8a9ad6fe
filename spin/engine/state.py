"""Layout of the engine state: one namedtuple of preallocated numpy arrays.

Numba types a namedtuple of arrays as a plain struct, so every jitted function takes the whole
state as one argument (``st``) and mutates arrays in place. Python builds it once per run
(``allocate_state``) and reads the counters back when the run ends. Scalars live in ``st.sc``
(an int64 array indexed by the ``SC_*`` constants) because namedtuple fields are immutable.

The column constants of the tables (``D_*`` of ``st.dev``, ``PT_*`` of ``st.port``, ``SC_*``, ...)
and their widths (``DEV_COLS``...) are not numbered here: their owners declare the columns in
``spin.engine.layout`` and this module defines one plain int per column from those declarations
(Numba reads module globals as compile-time constants). ``state_view(st)`` reads rows by name.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from ..transports import TR_APART  # noqa: F401  (the code of a transport compiled apart)
from ..wire.drops import NUM_DROP_REASONS
from . import layout as L
from .columns import RowView, Table, export
from .device_kinds import DEVICE_KINDS
from .layout import RECORDS, REPS_SLOTS, TABLES  # noqa: F401  (REPS_SLOTS: part of this module's names)

INF_PS = np.int64(2**62)

# --- table columns (one int64 2-D table per entity keeps the state tuple narrow, which keeps
#     Numba compile time and call overhead low): D_KIND, ..., DEV_COLS, PT_DEV, ... ------------
COLUMNS = export(TABLES + RECORDS, globals())

# event keys of fabric-wide control events (faults): a creator id no device has, so they never
# shift a device's own sequence numbers and sort identically in every worker
CONTROL_CREATOR = (1 << 22) - 1
SAMPLE_CREATOR = (1 << 22) - 2    # likewise for queue-sampling events (sequence = sample index)

# --- run status (why run_until returned) ------------------------------------------------------
STATUS_DONE = 0          # reached t_end or ran out of events
STATUS_CAPTURE_FULL = 1  # capture (or trace) buffer needs draining
STATUS_OUTBOX_FULL = 2   # cross-worker outbox needs shipping
STATUS_HOST_CALL = 3     # a host program asked for a Python callback
STATUS_EVENT_LIMIT = 4   # max_events reached (progress reporting)

KIND_HEADER = 0
KIND_PAYLOAD = 1
KIND_COMPLETION = 2
HANDLER_KIND_NAMES = ("header", "payload", "completion")

# --- event kinds ------------------------------------------------------------------------------
EV_TX_DONE = 1      # dev, a=global port: head frame finished serialising
EV_ARRIVE = 2       # dev, a=global port (ingress) or ARRIVE_LOOPBACK / ARRIVE_TIMER, b=slot
EV_ENQUEUE = 3      # dev, a=global port (egress), b=slot
EV_HOST = 4         # dev: host program continues
EV_HOST_RECV = 5    # dev, a=qp: a message was delivered to host memory
EV_HOST_EVENT = 6   # dev, a=value: a handler raised a host event
EV_COMPLETION = 7   # dev, a=message slot: run the completion handler
EV_TXM = 8          # dev: NIC transmit engine emits the next packet
EV_CONTROL = 9      # a=control row: a fault or re-shape takes effect (see CTL_*)
EV_PORT_RESUME = 10 # dev, a=global port: a PFC pause expired; try to transmit again
EV_SAMPLE = 11      # record the occupancy of every non-empty local output queue
EV_RTO = 12         # dev, a=connection row: retransmission timer of a sending connection
EV_PFC_REFRESH = 13 # dev, a=global port: renew the pause of a port still above XOFF

# EV_ARRIVE of a frame a device sent itself, crossing no link (no port, so no loss, fault or
# switch on the way): a NIC's loopback, or the expiry of a handler's timer (spin_set_timer)
ARRIVE_LOOPBACK = -1
ARRIVE_TIMER = -2

HEAP_SPARE = 4   # sentinel entries past a 4-ary heap's last one (spin.engine.heap)
CAL_BUCKETS = 1 << 16   # buckets of the event calendar (spin.engine.heap); a power of two
CAL_WORDS = CAL_BUCKETS // 64   # its bitmap of non-empty buckets, after the bucket heads
# a calendar bucket is a list of blocks of st.calb, each four cache lines of events; its
# head block's fill count is kept with the bucket's head in st.cal (spin.engine.heap), the
# blocks behind it are full
CALB_WORDS = 32
CALB_NEXT = 0        # word of a block: the bucket's next block (-1: last), or the next free one
CALB_ENTRIES = 1     # the events, from this word on, each (time_ps, key, event id)
CALB_ENTRY = 3       # words of an entry
CALB_CAPACITY = (CALB_WORDS - CALB_ENTRIES) // CALB_ENTRY

# --- device kinds (codes: the order of spin.engine.device_kinds.DEVICE_KINDS) -----------------
DEV_NIC = DEVICE_KINDS.names().index("nic")
DEV_SWITCH = DEVICE_KINDS.names().index("switch")
DEV_BUMP = DEVICE_KINDS.names().index("bump")

# --- pending handler actions (finalised at handler end) ---------------------------------------
# ACT_* codes and PA_* fields: spin.engine.layout.COMMANDS
MAX_PENDING_ACTIONS = 256
MAX_TIMER_DELAY_PS = 10**12   # 1 s: spin_set_timer refuses longer delays (likely a unit slip)

# --- host program operations: OP_* codes and HO_* fields, spin.engine.layout.HOST_OPS ---------
HOST_OP_WIDTH = L.HOST_OPS.width

HOST_RUNNING = 0
HOST_WAIT_RECV = 1
HOST_WAIT_EVENT = 2
HOST_DONE = 3

DTYPE_CODES = {"int32": 0, "int64": 1, "float32": 2, "float64": 3}

MSG_STATE_WORDS = 16

MSG_FLAG_PROCEED_ALL = 1
MSG_FLAG_DROP_ALL = 2
MSG_FLAG_DELIVERED = 4   # at least one packet took the default path to host memory

# --- transports (nic_emulator.transports) -----------------------------------------------------
# D_TRANSPORT is the index of the NIC's transport in spin.transports.SHIPPED, or TR_APART for a
# transport compiled apart; the open-loop transport, which keeps no connections, is the first.
TR_OPEN_LOOP = 0
ENT_PER_FLOW = 0
ENT_SPRAY = 1
ENT_REPS = 2
ENTROPY_POLICIES = ("per_flow", "spray", "reps")
WIN_PKTS = 1024          # PSNs a connection tracks beyond its cumulative point (bitmaps)
WIN_WORDS = WIN_PKTS // 64
ALPHA_ONE = 1 << 20      # C_ALPHA's fixed point

# kinds of fabric-wide control actions (st.ctl rows, applied by EV_CONTROL events)
CTL_LINK_DOWN = 1       # a=port, b=peer port: both ends go down, queued frames are dropped
CTL_LINK_UP = 2         # a=port, b=peer port
CTL_SET_RATE = 3        # a=port, b=peer port, c=rate in Gb/s
CTL_SET_PEER = 4        # a=port, b=new peer port (one direction of an optical re-shape)
CTL_ROUTE_EPOCH = 5     # a=epoch: routing converged on the new topology

# routing tables: st.route[epoch, switch, node >> ROUTE_BLOCK_SHIFT] is a block of
# st.rblock, whose entry node & (ROUTE_BLOCK - 1) is the group (switch_emulator.route_tables)
ROUTE_BLOCK_SHIFT = 6
ROUTE_BLOCK = 1 << ROUTE_BLOCK_SHIFT

# st.slot_meta: one 16-byte row per frame slot, so that a hop reads a frame's length, ingress
# port and ICRC state from one cache line instead of three arrays
SM_LEN = 0       # frame length, bytes
SM_IN_PORT = 1   # 1 + the ingress port holding PFC bytes for the frame, 0: none (engine.ports)
SM_ICRC = 2      # ICRC_EXTERNAL / ICRC_VALID / ICRC_PENDING (spin.engine.pool)
SLOT_META_WORDS = 4


# words per entry of st.lb_table (their meaning is the scheme's: see switch_emulator.lb)
LB_WORDS = 4

FIELDS = (
    "sc", "cur", "drops", "parsed",
    "ev", "ev_free", "heap", "cal", "calb", "far",   # events: table + free list + queue
    "dev", "hpu_free", "host_recv_count", "marks", "txq", "host_ops", "host_mem",
    "port", "port_q",                             # ports: table + FIFO rings of slot ids
    "pool", "slot_meta", "slot_free",             # frame buffer pool
    "msg", "msg_state", "msg_free", "rx_keys", "rx_vals",
    "txm", "txm_free", "tx_keys", "tx_vals",
    "ec", "prog", "route", "rblock", "rgroup", "rport", "mgroup", "mport", "ctl",
    "port_pq", "qsamples", "lb_table",
    "conn", "conn_bits", "conn_keys", "conn_vals",
    "apart_conn", "apart_dev", "apart_params",   # a transport compiled apart: its own columns
    "msglog", "txlog", "pend",   # a handler's commands (+ its counters row)
    "cap", "cap_frames", "out", "out_frames",
    "trace",
)

# Width of the state tuple. Numba passes a namedtuple of arrays as one scalar argument per array
# field (7 to 11 words an array), so while engine functions took ``st`` by value every call LLVM
# kept out of line (tx_done, enqueue_frame, nic_receive, ...: 51 call sites) copied ~450 words
# onto the stack: the 64 B star ran at 3.6-3.9 M packet events/s instead of 11-13 M. When that
# argument area neared 4 KiB, each copied word was loaded 4096 + 8k bytes above a store just
# made, and the CPU's false dependency on equal address bits 11:0 (4K aliasing) serialised the
# copy: the abrupt cliff (fat tree of bench/bench_fattree.py: 0.32 s per run with 55 arrays,
# 1.02 s with 57). bench/bench_state_width.py shows both on a synthetic loop. run_until (and
# inject_frames) now pass a StateRef, one pointer (spin.engine.state_ref), so a call costs the
# same whatever the width (57 arrays measured: no change). Width still costs unboxing every
# array on each Python -> engine call and compile time: new values still go into table columns.
MAX_STATE_ARRAYS = 64
EngineState = namedtuple("EngineState", FIELDS)


@dataclass(frozen=True)
class StateSizes:
    """Capacities of the preallocated engine arrays (exhaustion is a clear error, not a drop)."""

    n_devs: int
    n_ports: int
    n_nodes: int
    n_switches: int
    n_ecs: int
    n_progs: int
    n_host_ops: int
    host_mem_total: int
    max_hpus: int
    max_qp: int
    n_marks: int
    slot_bytes: int
    n_slots: int
    queue_frames: int
    max_events: int
    max_rx_messages: int
    max_tx_messages: int
    txq_cap: int
    msglog_cap: int
    txlog_cap: int
    capture_frames: int
    outbox_frames: int
    n_route_epochs: int = 1
    n_route_blocks: int = 1
    n_route_groups: int = 1
    n_route_ports: int = 1
    n_mcast_groups: int = 1
    n_mcast_ports: int = 1
    n_control: int = 1
    trace_records: int = 1
    n_qsamples: int = 16
    n_conns: int = 1
    n_send_flows: int = 0    # open loop: (source, destination, QP) PSN counters (st.tx_keys)
    lb_rows: int = 1        # switches (rows of lb_table) when a scheme keeps per-switch memory
    lb_entries: int = 1
    calendar_shift: int = 10   # log2 of the event calendar's bucket width, ps (heap.py)
    # a transport compiled apart (spin.transport_api): widths of its own tables
    apart_conn_cols: int = 1
    apart_dev_cols: int = 1
    apart_params: int = 1


def _hash_cap(n: int) -> int:
    cap = 1024
    while cap < 4 * n:
        cap *= 2
    return cap


def aligned_zeros(shape, dtype) -> np.ndarray:
    """Zeros whose first element starts a 64-byte cache line (numpy's own buffers start 16
    bytes into one): a table whose rows are whole lines then reads one row from one line, or
    from as few as its width allows."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes].view(dtype).reshape(shape)


RING_LINE_SHIFT = 4
RING_LINE = 1 << RING_LINE_SHIFT   # int32 entries of a port ring per 64-byte cache line


def _heap_vector(max_events: int) -> np.ndarray:
    """A 4-ary heap's vector for ``max_events`` entries, empty: its first ``HEAP_SPARE``
    entries hold the sentinel. Only those must: every push and pop keeps the sentinel in the
    spare entries past the last one, and no entry further out is read (spin.engine.heap), so
    the rest stays untouched memory. Filled whole, the near and far heaps were 268 MB written
    at 65,536 hosts (0.4 s of the state's set-up) for the few dozen events they hold."""
    h = np.zeros((max_events + HEAP_SPARE) * COLUMNS["HEAP_COLS"], np.int64)
    h[:HEAP_SPARE * COLUMNS["HEAP_COLS"]] = np.iinfo(np.int64).max
    return h


def _ring_lines(frames: int) -> int:
    """Lines of a port's ring that hold ``frames`` entries (rounded up to whole lines)."""
    return max(-(-frames // RING_LINE), 1)


def calendar_blocks(max_events: int) -> int:
    """Calendar blocks that ``max_events`` pending events can need: every event in a full
    block, plus one partly full block per non-empty bucket."""
    return max_events // CALB_CAPACITY + min(CAL_BUCKETS, max_events) + 1


def allocate_state(z: StateSizes) -> EngineState:
    """Allocate every array of the engine state, zeroed or marked empty."""
    _C = COLUMNS
    i32, i64, u8 = np.int32, np.int64, np.uint8
    d, p = z.n_devs, z.n_ports
    arrays = dict(
        sc=np.zeros(_C["NUM_SC"], i64), cur=np.zeros(_C["NUM_CUR"], i64),
        drops=np.zeros((d, NUM_DROP_REASONS), i64), parsed=np.zeros(32, i64),
        ev=aligned_zeros((z.max_events, _C["EV_COLS"]), i64),
        ev_free=np.arange(z.max_events, dtype=i32)[::-1].copy(),
        heap=_heap_vector(z.max_events),
        # calendar: each bucket's head block and its fill count (-1: empty), then the
        # non-empty bitmap
        cal=np.concatenate([np.full(CAL_BUCKETS, -1, i64), np.zeros(CAL_WORDS, i64)]),
        far=_heap_vector(z.max_events),
        # every pending event in a full block, plus a partly full block per bucket
        calb=aligned_zeros((calendar_blocks(z.max_events), CALB_WORDS), i64),
        dev=aligned_zeros((d, _C["DEV_COLS"]), i64),
        hpu_free=np.zeros((d, max(z.max_hpus, 1)), i64),
        host_recv_count=np.zeros((d, z.max_qp), i64),
        marks=np.full((d, max(z.n_marks, 1)), -1, i64),
        txq=np.zeros((max(z.n_nodes, 1), z.txq_cap), i32),   # NICs only: node = device
        host_ops=np.zeros((max(z.n_host_ops, 1), HOST_OP_WIDTH), i64),
        # every host's memory, then the bytes a handler invocation sends (handler_context)
        host_mem=np.zeros(max(z.host_mem_total, 8) + MAX_PENDING_ACTIONS * z.slot_bytes, u8),
        port=aligned_zeros((p, _C["PORT_COLS"]), i64),
        # rings interleaved by lines of RING_LINE entries: spin.engine.ports.ring_get
        port_q=aligned_zeros((_ring_lines(z.queue_frames), p, RING_LINE), i32),
        pool=aligned_zeros((z.n_slots, z.slot_bytes), u8), slot_meta=np.zeros((z.n_slots, SLOT_META_WORDS), i32),
        slot_free=np.arange(z.n_slots, dtype=i32)[::-1].copy(),
        msg=aligned_zeros((z.max_rx_messages, _C["MSG_COLS"]), i64),
        msg_state=np.zeros((z.max_rx_messages, MSG_STATE_WORDS), i64),
        msg_free=np.arange(z.max_rx_messages, dtype=i32)[::-1].copy(),
        rx_keys=np.full(_hash_cap(z.max_rx_messages), -1, i64),
        rx_vals=np.zeros(_hash_cap(z.max_rx_messages), i64),
        txm=aligned_zeros((z.max_tx_messages, _C["TXM_COLS"]), i64),
        txm_free=np.arange(z.max_tx_messages, dtype=i32)[::-1].copy(),
        tx_keys=np.full(_hash_cap(max(z.n_send_flows, z.n_nodes * 4 + 64)), -1, i64),
        tx_vals=np.zeros(_hash_cap(max(z.n_send_flows, z.n_nodes * 4 + 64)), i64),
        ec=np.zeros((max(z.n_ecs, 1), _C["EC_COLS"]), i64),
        prog=np.zeros((max(z.n_progs, 1), _C["PROG_COLS"]), i64),
        route=np.full((max(z.n_route_epochs, 1), max(z.n_switches, 1),
                       max(-(-z.n_nodes // ROUTE_BLOCK), 1)), -1, i32),
        rblock=np.full((max(z.n_route_blocks, 1), ROUTE_BLOCK), -1, i32),
        rgroup=np.zeros((max(z.n_route_groups, 1), 2), i32),
        rport=np.zeros(max(z.n_route_ports, 1), i32),
        mgroup=np.zeros((max(z.n_mcast_groups, 1), 2), i32),
        mport=np.zeros(max(z.n_mcast_ports, 1), i32),
        ctl=np.zeros((max(z.n_control, 1), _C["CTL_COLS"]), i64),
        port_pq=aligned_zeros((_ring_lines(z.queue_frames), p, RING_LINE), i32),
        conn=aligned_zeros((max(z.n_conns, 1), _C["CONN_COLS"]), i64),
        conn_bits=aligned_zeros((max(z.n_conns, 1), 2 * WIN_WORDS), i64),
        conn_keys=np.full(_hash_cap(max(z.n_conns, 1)), -1, i64),
        conn_vals=np.zeros(_hash_cap(max(z.n_conns, 1)), i64),
        # the columns of a transport compiled apart: per connection (rows of st.conn), per
        # device (its columns, then its counters) and its parameters (spin.transport_api)
        apart_conn=np.zeros((max(z.n_conns, 1), max(z.apart_conn_cols, 1)), i64),
        apart_dev=np.zeros((d, max(z.apart_dev_cols, 1)), i64),
        apart_params=np.zeros(max(z.apart_params, 1), i64),
        # queue samples: QS_* columns
        qsamples=np.zeros((z.n_qsamples, _C["QS_COLS"]), i64),
        # per-switch memory of the port-selection scheme (switch_emulator.lb), LB_WORDS words
        # per entry: flowlet tables, DRILL's last best port per group
        lb_table=np.zeros((max(z.lb_rows, 1), max(z.lb_entries, 1), LB_WORDS), i64),
        msglog=np.zeros((z.msglog_cap, _C["MSGLOG_WIDTH"]), i64),
        txlog=np.zeros((z.txlog_cap, _C["TXLOG_WIDTH"]), i64),
        # MAX_PENDING_ACTIONS command rows, then the invoking handler's counters (one row)
        pend=np.zeros((MAX_PENDING_ACTIONS + 1, 8), i64),
        cap=np.zeros((z.capture_frames, _C["CAP_COLS"]), i64),
        cap_frames=np.zeros((z.capture_frames, z.slot_bytes), u8),
        out=np.zeros((z.outbox_frames, _C["OUT_COLS"]), i64),
        out_frames=np.zeros((z.outbox_frames, z.slot_bytes), u8),
        trace=np.zeros((max(z.trace_records, 1), _C["TRACE_COLS"]), i64),
    )
    st = EngineState(**arrays)
    st.sc[_C["SC_EV_FREE_TOP"]] = z.max_events
    st.sc[_C["SC_CALB_FREE"]] = -1   # none freed yet: blocks are taken from SC_CALB_FRESH on
    st.sc[_C["SC_CAL_SHIFT"]] = z.calendar_shift
    st.sc[_C["SC_SLOT_FREE_TOP"]] = z.n_slots
    st.sc[_C["SC_MSG_FREE_TOP"]] = z.max_rx_messages
    st.sc[_C["SC_TXM_FREE_TOP"]] = z.max_tx_messages
    st.sc[_C["SC_MAX_QP"]] = z.max_qp
    st.sc[_C["SC_N_NODES"]] = z.n_nodes
    st.dev[:, _C["D_LOCAL"]] = 1
    st.dev[:, _C["D_NODE"]] = -1
    st.dev[:, _C["D_SW"]] = -1
    st.dev[:, _C["D_HOST_STATE"]] = HOST_DONE
    st.port[:, _C["PT_PEER"]] = -1
    st.port[:, _C["PT_UP"]] = 1
    st.sc[_C["SC_N_DEVS"]] = d
    st.ec[:, _C["EC_MATCH_QP"]] = -1
    st.ec[:, _C["EC_MATCH_RKEY"]] = -1
    st.ec[:, _C["EC_MATCH_SRC"]] = -1
    st.ec[:, _C["EC_MATCH_DST"]] = -1
    st.ec[:, _C["EC_MATCH_UDP_DPORT"]] = -1
    st.ec[:, _C["EC_MATCH_HDR_TYPE"]] = -1
    return st


class StateView:
    """Named read-only access to an engine state's tables, for results and reports:
    ``state_view(st).dev(d).hpu_busy_ps``, ``.port(gp).tx_bytes``, ``.sc().now``; a field of
    several columns reads as a tuple (``.dev(d).hc``); ``.dev(d).as_dict()`` gives a whole row.
    Values are copied out as Python ints, so a view never writes to the state."""

    def __init__(self, st: EngineState) -> None:
        self._st = st

    def _row(self, table: Table, array: np.ndarray, i: int) -> RowView:
        return table.row(array[i])

    def sc(self) -> RowView:
        return L.SC.row(self._st.sc)

    def cur(self) -> RowView:
        return L.CUR.row(self._st.cur)

    def transport_params(self) -> RowView:
        return L.TRP.row(self._st.sc[L.SC.index("TRP"):][:L.TRP.width])

    def dev(self, d: int) -> RowView:
        return self._row(L.DEV, self._st.dev, d)

    def transport_counters(self, d: int) -> RowView:
        """A NIC's transport counters (``NT_*``, inside its ``st.dev`` row at ``D_NTR``)."""
        start = L.DEV.index("NTR")
        return L.NT.row(self._st.dev[d, start:start + L.NT.width])

    def port(self, gp: int) -> RowView:
        return self._row(L.PORT, self._st.port, gp)

    def msg(self, m: int) -> RowView:
        return self._row(L.MSG, self._st.msg, m)

    def txm(self, m: int) -> RowView:
        return self._row(L.TXM, self._st.txm, m)

    def conn(self, c: int) -> RowView:
        return self._row(L.CONN, self._st.conn, c)

    def ec(self, e: int) -> RowView:
        return self._row(L.EC, self._st.ec, e)

    def msglog(self, k: int) -> RowView:
        return self._row(L.MSGLOG, self._st.msglog, k)

    def txlog(self, k: int) -> RowView:
        return self._row(L.TXLOG, self._st.txlog, k)


def state_view(st: EngineState) -> StateView:
    """Named read-only views of ``st``'s rows (see ``StateView``)."""
    return StateView(st)
