"""Layout of the engine state: one namedtuple of preallocated numpy arrays.

Numba types a namedtuple of arrays as a plain struct, so every jitted function takes the whole
state as one argument (``st``) and mutates arrays in place. Python builds it once per run
(``allocate_state``) and reads the counters back when the run ends. Scalars live in ``st.sc``
(an int64 array indexed by the ``SC_*`` constants) because namedtuple fields are immutable.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from ..drops import NUM_DROP_REASONS

INF_PS = np.int64(2**62)

# --- scalar slots in st.sc --------------------------------------------------------------------
SC_NOW = 0
SC_HEAP_N = 1
SC_EV_FREE_TOP = 2
SC_SLOT_FREE_TOP = 3
SC_EVENTS = 4
SC_STATUS = 5
SC_OUT_N = 6
SC_CAP_N = 7
SC_MSG_FREE_TOP = 9
SC_TXM_FREE_TOP = 10
SC_MSGLOG_N = 11
SC_TXLOG_N = 12
SC_MTU = 14
SC_CHECK_ICRC = 15
SC_N_NODES = 16
SC_MAX_QP = 17
SC_CALL_DEV = 18
SC_CALL_ID = 19
SC_PKT_EVENTS = 20
SC_SLOTS_IN_USE_MAX = 21
SC_ROUTE_EPOCH = 22     # index of the routing tables in force (faults switch it)
SC_N_DEVS = 23
SC_TRIM_DSCP = 24       # DSCP of trimmed frames (a NIC counts them instead of delivering them)
SC_FLOW_KEY_MAX_QP = 25 # QP range of switch flow keys (see spin.engine.messages)
SC_HANDLER_CALLS = 26   # handler invocations so far (the watchdog tells them apart)
SC_TRACE_LOST = 29      # trace records that found st.trace full (spin.engine.tracing)
SC_TRACE = 30           # what the run traces: TRACE_ON | TRACE_LINKS bits (0: nothing)
SC_TRACE_N = 31         # rows of st.trace written since the last drain
SC_MSG_TIMEOUT_PS = 33  # an incomplete message idle this long may be evicted for a new one
SC_SAMPLE_PS = 34       # queue-occupancy sampling interval (0: off)
SC_SAMPLE_PENDING = 35  # a sampling event is scheduled
SC_QS_N = 36            # rows used in st.qsamples
SC_CONN_N = 37          # rows used in st.conn (reliable-transport connections)
SC_TRP = 48             # transport parameters: SC_TRP + TRP_* (from TransportConfig)
NUM_SC = 64

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

# --- "current handler" slots in st.cur (read by the handler API and by error reports) --------
CUR_DEV = 0
CUR_EC = 1
CUR_MSG = 2
CUR_KIND = 3
CUR_SLOT = 4
CUR_TIME = 5
CUR_PAYLOAD_OFF = 6
CUR_PAYLOAD_LEN = 7
CUR_MSG_OFFSET = 8
CUR_SRC = 9
CUR_HPU = 10
CUR_PSN = 12
CUR_QP = 13
CUR_EXTRA_PS = 14
CUR_FRAME_LEN = 15
CUR_ACTIVE = 16
CUR_CALL = 32      # the call block of the running handler (spin.engine.handler_abi, 32 words)
NUM_CUR = 64

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

# EV_ARRIVE of a frame a device sent itself, crossing no link (no port, so no loss, fault or
# switch on the way): a NIC's loopback, or the expiry of a handler's timer (spin_set_timer)
ARRIVE_LOOPBACK = -1
ARRIVE_TIMER = -2

# --- device kinds -----------------------------------------------------------------------------
DEV_NIC = 0
DEV_SWITCH = 1

# --- pending handler actions (finalised at handler end) ---------------------------------------
ACT_DMA_TO_HOST = 1      # a=nbytes, b=generate_event
ACT_SEND_PACKET = 2      # a=dst node, b=dest QP, c=staged offset, d=nbytes, e=remote VA
ACT_HOST_EVENT = 3       # a=value
ACT_PUT_FROM_HOST = 4    # a=dst, b=qp, c=host_addr, d=nbytes, e=remote_va
ACT_HOST_WRITE = 5       # a=nbytes (8)
ACT_DMA_FROM_HOST = 6    # a=nbytes (blocking read: lengthens the handler)
ACT_FORWARD = 7          # a=local port (-1: the routed next hop): a copy of the packet leaves
ACT_MULTICAST = 8        # a=multicast group: a copy of the packet leaves on each of its ports
ACT_TIMER = 9            # a=delay ps, b=dest QP, c=staged offset, d=nbytes, e=remote VA
MAX_PENDING_ACTIONS = 256
MAX_TIMER_DELAY_PS = 10**12   # 1 s: spin_set_timer refuses longer delays (likely a unit slip)

# --- host program opcodes ---------------------------------------------------------------------
OP_SEND = 1          # dst_node, qp, nbytes, local_addr, remote_addr, rkey
OP_WAIT_RECV = 2     # qp, cumulative_count
OP_WAIT_EVENT = 3    # cumulative_count
OP_COMPUTE = 4       # duration_ps
OP_REDUCE = 5        # dst_addr, src_addr, n_elems, dtype_code
OP_MARK = 6          # mark index
OP_CALL = 7          # callback id
HOST_OP_WIDTH = 8

HOST_RUNNING = 0
HOST_WAIT_RECV = 1
HOST_WAIT_EVENT = 2
HOST_DONE = 3

DTYPE_CODES = {"int32": 0, "int64": 1, "float32": 2, "float64": 3}

MSG_STATE_WORDS = 16
MSGLOG_WIDTH = 9   # dev, src, qp, bytes, t_first_ps, t_done_ps, ec, handled, first psn
TXLOG_WIDTH = 6    # src, dst, qp, bytes, t_post_ps, first psn

MSG_FLAG_PROCEED_ALL = 1
MSG_FLAG_DROP_ALL = 2
MSG_FLAG_DELIVERED = 4   # at least one packet took the default path to host memory

# --- table columns (one int64 2-D table per entity keeps the state tuple narrow, which
#     keeps Numba compile time and call overhead low) -------------------------------------
# columns of st.dev
D_KIND = 0
D_SEQ = 1
D_PORT0 = 2
D_NPORTS = 3
D_LOCAL = 4
D_NODE = 5
D_SW = 6
D_HPUS = 7
D_CYCLE_PS = 8
D_MATCH_HDR_CYCLES = 9
D_MATCH_PKT_CYCLES = 10
D_PCIE_LAT_PS = 11
D_PCIE_MPS_PER_BYTE = 12
D_PCIE_W_BUSY = 13
D_PCIE_R_BUSY = 14
D_HPU_BUSY_PS = 15
D_NIC_DMA_W_BYTES = 16
D_NIC_DMA_R_BYTES = 17
D_MAX_MSGS = 18
D_MSGS_ACTIVE = 19
D_NIC_TX_WINDOW = 20
D_NIC_TX_SCHED = 21
D_HOST_MEM_OFF = 22
D_HOST_MEM_SIZE = 23
D_HOST_O_SEND_PS = 24
D_HOST_O_RECV_PS = 25
D_HOST_REDUCE_MPS_PER_BYTE = 26
D_HOST_OP_FIRST = 27
D_HOST_OP_COUNT = 28
D_HOST_PC = 29
D_HOST_STATE = 30
D_HOST_EVENT_COUNT = 31
D_HOST_BUSY_PS = 32
D_SW_LAT_PS = 33
D_EC_FIRST = 34
D_EC_COUNT = 35
D_TXQ_HEAD = 36
D_TXQ_N = 37
D_WAIT0 = 38
D_WAIT1 = 39
D_HC = 40  # handler calls: D_HC + kind (3 columns)
D_SW_LB = 43            # switch port-selection scheme (code: switch_emulator.lb.registry)
D_SW_SEED = 44          # per-switch hash seed (avoids ECMP polarisation across tiers)
D_SW_TRIM = 45          # 1: trim frames that overflow a queue instead of dropping them
D_SW_PFC_XOFF = 46      # ingress bytes above which a PFC pause is sent (0: PFC off)
D_SW_PFC_XON = 47       # ingress bytes below which the pause is lifted
D_SW_PFC_QUANTA = 48    # pause time sent in a PFC frame, in 512-bit quanta
D_SW_TRIM_DSCP = 49     # DSCP code point that marks a trimmed frame
D_MSGS_ABANDONED = 50   # messages replaced by a new one on their connection before completing
D_MSGS_EXPIRED = 51     # incomplete messages evicted after EngineConfig.message_timeout_ns
D_TRANSPORT = 52        # NIC transport: TR_NONE, TR_RC, TR_UE (nic_emulator.transport)
D_ENTROPY = 53          # NIC entropy policy: ENT_PER_FLOW, ENT_SPRAY, ENT_REPS
D_TX_NOWORK = 54        # 1: the reliable transmit engine waits for an ACK or a timer
D_RTX_PENDING = 55      # UE: packets marked for retransmission over all the NIC's connections
D_LOOPBACK_PS = 56      # NIC: latency of a frame to its own node (NicConfig.loopback_latency_ns)
D_LOOPBACK_FRAMES = 57  # NIC: frames sent to its own node through the loopback
D_TIMERS = 58           # handler timers that expired on the device (spin_set_timer)
D_SW_RNG = 60           # load balancing: the switch's PRNG state (xorshift64, never 0)
D_SW_FLOWLET_GAP_PS = 61  # load balancing: idle gap after which a flow may change path
D_SW_FLOWLETS = 62      # load balancing: flowlets started (a path chosen for a flow afresh)
D_NTR = 72              # NIC transport counters: D_NTR + NT_* (NicStats)
DEV_COLS = 84

# columns of st.port
PT_DEV = 0
PT_PEER = 1
PT_RATE_GBPS = 2
PT_LAT_PS = 3
PT_REMOTE = 4
PT_CAPTURE = 5
PT_Q_HEAD = 6
PT_Q_N = 7
PT_Q_BYTES = 8
PT_Q_LIMIT_BYTES = 9
PT_BUSY = 10
PT_TX_FRAMES = 11
PT_TX_BYTES = 12
PT_DROPS = 13
PT_MAX_Q_BYTES = 14
PT_BUSY_PS = 15
PT_UP = 16              # 0: the link is down (frames to it are dropped)
PT_ECN_THRESH = 17      # queue bytes above which ECN-capable frames are marked CE (0: never)
PT_ECN_MARKS = 18
PT_TRIMS = 19
PT_PQ_HEAD = 20         # priority queue (trimmed headers, PFC frames): ring in st.port_pq
PT_PQ_N = 21
PT_PQ_BYTES = 22
PT_PAUSED_UNTIL = 23    # PFC: no data frame starts before this time
PT_PAUSES_TX = 24       # PFC frames sent from this port
PT_PAUSES_RX = 25       # PFC frames received on this port
PT_Q_AREA = 26          # integral of queue bytes over time, in byte*ns (mean occupancy)
PT_Q_LAST_T = 27        # when PT_Q_AREA was last brought up to date
PT_IN_BYTES = 28        # PFC: bytes that entered on this port and still wait in the switch
PT_XOFF = 29            # PFC: 1 while this port has paused its peer
PT_LOCAL_IDX = 30       # index of the port on its device
PT_RESUME_SCHED = 31    # a resume event is pending
PT_GEN = 32             # bumped when the link goes down: stale tx-done events are ignored
PT_SAMPLED_BUSY_PS = 33  # PT_BUSY_PS at the last queue sample (utilisation over time)
PT_LOSS_THRESHOLD = 34  # random loss: a draw below this (of 2^32) loses the frame (0: off)
PT_LOSS_STATE = 35      # random loss: the port's xorshift32 state
PORT_COLS = 40

# columns of st.msg
M_DEV = 0
M_SRC = 1
M_QP = 2
M_EC = 3
M_FIRST_PSN = 4
M_NPKTS = 5
M_SEEN = 6
M_VA = 7
M_RKEY = 8
M_LEN = 9
M_HDR_END = 10
M_PL_END = 11
M_DMA_END = 12
M_LAST_READY = 13
M_FLAGS = 14
M_T_FIRST = 15
M_KEY = 16          # connection key in the receive hash map (-1: not in it)
M_LAST_T = 17       # time of the message's latest packet (stale messages expire)
M_ACTIVE = 18       # 1 while the row holds a message
M_CONN = 19         # reliable transports: the receiving connection's row in st.conn
MSG_COLS = 28

# columns of st.txm
T_DEV = 0
T_DST = 1
T_QP = 2
T_LEN = 3
T_SENT = 4
T_HOST_ADDR = 5
T_REMOTE_VA = 6
T_RKEY = 7
T_EV = 8
T_T_POST = 9
T_PSN = 10
T_NPKTS = 11        # reliable transports: packets of the message
T_NEXT = 12         # next packet index to send (go-back-N rewinds it)
T_CONN = 13         # the sending connection's row in st.conn
TXM_COLS = 24

# --- transports (nic_emulator.transport) ------------------------------------------------------
TR_NONE = 0
TR_RC = 1
TR_UE = 2
TRANSPORT_KINDS = ("none", "rc", "ue")
ENT_PER_FLOW = 0
ENT_SPRAY = 1
ENT_REPS = 2
ENTROPY_POLICIES = ("per_flow", "spray", "reps")
WIN_PKTS = 1024          # PSNs a connection tracks beyond its cumulative point (bitmaps)
WIN_WORDS = WIN_PKTS // 64
REPS_SLOTS = 8           # REPS' circular EV buffer (the paper's and htsim's size)

# columns of st.conn: one row per (NIC, peer, QP) connection, as sender or receiver
C_DEV = 0
C_PEER = 1
C_QP = 2
C_EV = 3             # per-flow entropy value (also the EV of the ACKs it sends)
C_SND_PSN = 4        # sender: next PSN to assign to a posted message (not wrapped)
C_UNA = 5            # sender: oldest unacknowledged PSN
C_HIGH = 6           # sender: highest PSN sent + 1
C_INFLIGHT = 7       # UE sender: packets sent and neither acknowledged nor known lost
C_RTX_N = 8          # UE sender: packets marked for retransmission
C_CWND = 9           # UE sender: congestion window, bytes
C_ACKED_WIN = 10     # UE sender: bytes acknowledged in the current window
C_MARKED_WIN = 11    # UE sender: of those, bytes acknowledged with ECN (or trimmed)
C_ALPHA = 12         # fraction of marks, fixed point (ALPHA_ONE = 1.0)
C_RATE = 13          # RC sender (DCQCN): current rate R_C, Mb/s
C_TARGET = 14        # RC sender (DCQCN): target rate R_T, Mb/s
C_T_ALPHA = 15       # RC sender: last alpha update
C_T_INC = 16         # RC sender: last rate-increase timer expiry
C_STAGE = 17         # RC sender: rate-increase timer expiries since the last cut
C_NEXT_SEND = 18     # RC sender: pacing, earliest start of the next packet
C_RTO_AT = 19        # sender: retransmission deadline (lazy: the event re-arms itself)
C_RTO_PENDING = 20   # sender: a timer event is scheduled
C_PRNG = 21          # entropy PRNG state (spray and REPS exploration)
C_REPS_HEAD = 22
C_REPS_N = 23
C_FREEZE_UNTIL = 24  # REPS: only cached EVs before this time
C_LAST_GOOD = 25     # REPS: latest EV an unmarked ACK echoed (0: none)
C_RCV = 26           # receiver: RC expected PSN; UE cumulative PSN (every earlier one arrived)
C_NAK_SENT = 27      # RC receiver: a NAK for the current gap went out
C_UNACKED = 28       # receiver: accepted packets not acknowledged yet
C_ACK_ECN = 29       # receiver: one of those arrived ECN-marked
C_LAST_CNP = 30      # RC receiver: time of the latest CNP (-1: none)
C_MAX_PSN = 31       # receiver: highest PSN seen + 1 (reorder degree)
C_MSN = 32           # RC receiver: messages completed (AETH MSN)
C_REPS0 = 33         # REPS_SLOTS columns: the EV buffer
CONN_COLS = 41
ALPHA_ONE = 1 << 20

# transport parameters, one vector for the fabric (from TransportConfig), at st.sc[SC_TRP + TRP_*]
TRP_ACK_EVERY = 0
TRP_RTO_PS = 1
TRP_CNP_INTERVAL_PS = 2
TRP_G_SHIFT = 3
TRP_TIMER_PS = 4
TRP_FR_STAGES = 5
TRP_AI_MBPS = 6
TRP_HAI_MBPS = 7
TRP_MIN_RATE_MBPS = 8
TRP_CWND_INIT = 9
TRP_CWND_MAX = 10
TRP_FREEZE_PS = 11
TRP_N = 16

# per-NIC transport counters (NicStats), at st.dev[dev, D_NTR + NT_*]
NT_RETX = 0          # packets sent again
NT_TIMEOUTS = 1
NT_ACKS_TX = 2
NT_NAKS_TX = 3       # RC NAKs and UE NACKs sent
NT_CNPS_TX = 4
NT_ACKS_RX = 5
NT_NAKS_RX = 6
NT_CNPS_RX = 7
NT_OOO = 8           # data packets that arrived after a higher PSN of their connection
NT_REORDER = 9       # largest such PSN distance
NT_DUPS = 10
NT_MIN_RATE = 11     # RC: lowest DCQCN rate any connection fell to, Mb/s (0: never cut)
NTR_COLS = 12

# columns of st.ec
EC_PROG = 0
EC_INST = 1
EC_MATCH_QP = 2
EC_MATCH_RKEY = 3
EC_MATCH_SRC = 4
EC_MATCH_DST = 5
EC_MATCH_UDP_DPORT = 6
EC_MATCH_HDR_TYPE = 7
EC_MEM_OFF = 8        # byte offset of the context's handler memory in the handler-memory arena
EC_MEM_BYTES = 9      # its size in bytes
EC_MEM_DIMS = 10      # + axis (4 columns): its shape, as the program declared it for the context
EC_COLS = 14

# columns of st.ctl (fabric-wide control actions, applied by EV_CONTROL events)
CTL_KIND = 0
CTL_A = 1
CTL_B = 2
CTL_C = 3
CTL_T = 4
CTL_COLS = 5
CTL_LINK_DOWN = 1       # a=port, b=peer port: both ends go down, queued frames are dropped
CTL_LINK_UP = 2         # a=port, b=peer port
CTL_SET_RATE = 3        # a=port, b=peer port, c=rate in Gb/s
CTL_SET_PEER = 4        # a=port, b=new peer port (one direction of an optical re-shape)
CTL_ROUTE_EPOCH = 5     # a=epoch: routing converged on the new topology

# columns of st.ev
E_TIME = 0
E_KEY = 1
E_KIND = 2
E_DEV = 3
E_A = 4
E_B = 5
EV_COLS = 6

# words per entry of st.lb_table (their meaning is the scheme's: see switch_emulator.lb)
LB_WORDS = 4

# columns of st.cap
C_TIME = 0
C_PORT = 1
C_LEN = 2
CAP_COLS = 3

# columns of st.trace (written by spin.engine.tracing, read by spin.trace)
TR_KIND = 0
TR_DEV = 1
TR_T0 = 2
TR_T1 = 3
TR_A = 4    # + i: the record kind's arguments A..G
TRACE_COLS = 11

# columns of st.out
O_TIME = 0
O_PORT = 1
O_KEY = 2
O_LEN = 3
OUT_COLS = 4

# columns of st.prog
PR_HAS = 0      # + kind
PR_CYCLES = 3   # + kind
PR_MCPB = 6     # + kind: milli-cycles per payload byte
PR_ENTRY = 9    # + kind: address of the handler's compiled entry (spin.engine.handler_abi)
PROG_COLS = 12

FIELDS = (
    "sc", "cur", "drops", "parsed",
    "ev", "ev_free", "heap",                      # events: table + free list + heap of ids
    "dev", "hpu_free", "host_recv_count", "marks", "txq", "host_ops", "host_mem",
    "port", "port_q",                             # ports: table + FIFO rings of slot ids
    "pool", "slot_len", "slot_free", "slot_trusted",  # frame buffer pool
    "msg", "msg_state", "msg_free", "rx_keys", "rx_vals",
    "txm", "txm_free", "tx_keys", "tx_vals",
    "ec", "prog", "route", "rgroup", "rport", "mgroup", "mport", "ctl", "slot_in_port",
    "port_pq", "qsamples", "lb_table",
    "conn", "conn_bits", "conn_keys", "conn_vals",
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
    n_route_groups: int = 1
    n_route_ports: int = 1
    n_mcast_groups: int = 1
    n_mcast_ports: int = 1
    n_control: int = 1
    trace_records: int = 1
    n_qsamples: int = 16
    n_conns: int = 1
    lb_rows: int = 1        # switches (rows of lb_table) when a scheme keeps per-switch memory
    lb_entries: int = 1


def _hash_cap(n: int) -> int:
    cap = 1024
    while cap < 4 * n:
        cap *= 2
    return cap


def allocate_state(z: StateSizes) -> EngineState:
    """Allocate every array of the engine state, zeroed or marked empty."""
    i8, i32, i64, u8 = np.int8, np.int32, np.int64, np.uint8
    d, p = z.n_devs, z.n_ports
    arrays = dict(
        sc=np.zeros(NUM_SC, i64), cur=np.zeros(NUM_CUR, i64),
        drops=np.zeros((d, NUM_DROP_REASONS), i64), parsed=np.zeros(32, i64),
        ev=np.zeros((z.max_events, EV_COLS), i64),
        ev_free=np.arange(z.max_events, dtype=i32)[::-1].copy(),
        heap=np.zeros(z.max_events, i32),
        dev=np.zeros((d, DEV_COLS), i64),
        hpu_free=np.zeros((d, max(z.max_hpus, 1)), i64),
        host_recv_count=np.zeros((d, z.max_qp), i64),
        marks=np.full((d, max(z.n_marks, 1)), -1, i64),
        txq=np.zeros((d, z.txq_cap), i32),
        host_ops=np.zeros((max(z.n_host_ops, 1), HOST_OP_WIDTH), i64),
        # every host's memory, then the bytes a handler invocation sends (handler_context)
        host_mem=np.zeros(max(z.host_mem_total, 8) + MAX_PENDING_ACTIONS * z.slot_bytes, u8),
        port=np.zeros((p, PORT_COLS), i64),
        port_q=np.zeros((p, z.queue_frames), i32),
        pool=np.zeros((z.n_slots, z.slot_bytes), u8), slot_len=np.zeros(z.n_slots, i32),
        slot_free=np.arange(z.n_slots, dtype=i32)[::-1].copy(),
        slot_trusted=np.zeros(z.n_slots, i8),
        msg=np.zeros((z.max_rx_messages, MSG_COLS), i64),
        msg_state=np.zeros((z.max_rx_messages, MSG_STATE_WORDS), i64),
        msg_free=np.arange(z.max_rx_messages, dtype=i32)[::-1].copy(),
        rx_keys=np.full(_hash_cap(z.max_rx_messages), -1, i64),
        rx_vals=np.zeros(_hash_cap(z.max_rx_messages), i64),
        txm=np.zeros((z.max_tx_messages, TXM_COLS), i64),
        txm_free=np.arange(z.max_tx_messages, dtype=i32)[::-1].copy(),
        tx_keys=np.full(_hash_cap(z.n_nodes * 4 + 64), -1, i64),
        tx_vals=np.zeros(_hash_cap(z.n_nodes * 4 + 64), i64),
        ec=np.zeros((max(z.n_ecs, 1), EC_COLS), i64),
        prog=np.zeros((max(z.n_progs, 1), PROG_COLS), i64),
        route=np.full((max(z.n_route_epochs, 1), max(z.n_switches, 1), max(z.n_nodes, 1)), -1,
                      i32),
        rgroup=np.zeros((max(z.n_route_groups, 1), 2), i32),
        rport=np.zeros(max(z.n_route_ports, 1), i32),
        mgroup=np.zeros((max(z.n_mcast_groups, 1), 2), i32),
        mport=np.zeros(max(z.n_mcast_ports, 1), i32),
        ctl=np.zeros((max(z.n_control, 1), CTL_COLS), i64),
        slot_in_port=np.full(z.n_slots, -1, i32),
        port_pq=np.zeros((p, z.queue_frames), i32),
        conn=np.zeros((max(z.n_conns, 1), CONN_COLS), i64),
        conn_bits=np.zeros((max(z.n_conns, 1), 2 * WIN_WORDS), i64),
        conn_keys=np.full(_hash_cap(max(z.n_conns, 1)), -1, i64),
        conn_vals=np.zeros(_hash_cap(max(z.n_conns, 1)), i64),
        # time, global port, queued bytes, busy ps since the previous sample
        qsamples=np.zeros((z.n_qsamples, 4), i64),
        # per-switch memory of the port-selection scheme (switch_emulator.lb), LB_WORDS words
        # per entry: flowlet tables, DRILL's last best port per group
        lb_table=np.zeros((max(z.lb_rows, 1), max(z.lb_entries, 1), LB_WORDS), i64),
        msglog=np.zeros((z.msglog_cap, MSGLOG_WIDTH), i64),
        txlog=np.zeros((z.txlog_cap, TXLOG_WIDTH), i64),
        # MAX_PENDING_ACTIONS command rows, then the invoking handler's counters (one row)
        pend=np.zeros((MAX_PENDING_ACTIONS + 1, 8), i64),
        cap=np.zeros((z.capture_frames, CAP_COLS), i64),
        cap_frames=np.zeros((z.capture_frames, z.slot_bytes), u8),
        out=np.zeros((z.outbox_frames, OUT_COLS), i64),
        out_frames=np.zeros((z.outbox_frames, z.slot_bytes), u8),
        trace=np.zeros((max(z.trace_records, 1), TRACE_COLS), i64),
    )
    st = EngineState(**arrays)
    st.sc[SC_EV_FREE_TOP] = z.max_events
    st.sc[SC_SLOT_FREE_TOP] = z.n_slots
    st.sc[SC_MSG_FREE_TOP] = z.max_rx_messages
    st.sc[SC_TXM_FREE_TOP] = z.max_tx_messages
    st.sc[SC_MAX_QP] = z.max_qp
    st.sc[SC_N_NODES] = z.n_nodes
    st.dev[:, D_LOCAL] = 1
    st.dev[:, D_NODE] = -1
    st.dev[:, D_SW] = -1
    st.dev[:, D_HOST_STATE] = HOST_DONE
    st.port[:, PT_PEER] = -1
    st.port[:, PT_UP] = 1
    st.sc[SC_N_DEVS] = d
    st.ec[:, EC_MATCH_QP] = -1
    st.ec[:, EC_MATCH_RKEY] = -1
    st.ec[:, EC_MATCH_SRC] = -1
    st.ec[:, EC_MATCH_DST] = -1
    st.ec[:, EC_MATCH_UDP_DPORT] = -1
    st.ec[:, EC_MATCH_HDR_TYPE] = -1
    return st
