"""The columns of every engine table, declared by their owners (``spin.engine.columns``).

A table one owner fills is one ``Columns`` list. ``st.dev`` (one row per device) is shared: the
engine core, the sPIN handler model, the NIC, its host, its transports, the switch and its
load-balancing schemes each declare their own columns below, and the table is their
concatenation in that fixed order. The rest live here, in the engine package, because
the engine's own functions index these tables and the engine must not import ``nic_emulator`` or
``switch_emulator`` statically (DESIGN.md section 3); each part names the package that owns it.

The NIC transports' parts (their ``st.conn`` columns, counters, ``st.dev`` columns and
parameters) are declared next to their code instead, in declaration modules the transport
registry names (``spin.transports``; ``spin.engine.columns.Declares``): they are assembled here
at import, in registration order, so a transport with state of its own is its module plus its
registration. The shipped port-selection schemes' ``st.dev`` columns (``DEV_LB``) are declared
the same way, in the ``*columns`` modules of ``switch_emulator.lb`` (``spin.scheme_parts``). ``spin.engine.state`` turns these tables into its integer constants (``D_KIND``,
``DEV_COLS``).
"""
from __future__ import annotations

from ..scheme_parts import declarations as scheme_declarations
from ..transports import declaration_module, declarations
from .columns import Columns, Declares, Table, Variants

CALL_WORDS = 32      # words of a handler's call block (spin.engine.handler_abi)
MEMORY_DIMS = 4      # axes of a context's handler memory kept in its st.ec row
N_HANDLER_KINDS = 3  # header, payload, completion
SCHEMES_APART = 8    # port-selection schemes compiled apart that one run may use
SCHEME_CALL_WORDS = 16   # words of such a scheme's call block (switch_emulator.lb.apart)
TRANSPORT_FUNCTIONS = 8  # functions of the transport contract (nic_emulator.transports)
TRANSPORT_CALL_WORDS = 16   # words of a transport-apart call block (nic_emulator.transports.apart)

# --- the transports' parts, declared by their owners (spin.transports.declarations) ----------
TRANSPORT_PARTS: tuple[Declares, ...] = declarations()


def _parts(table: str) -> list[Columns]:
    return [c for c in (d.columns(table) for d in TRANSPORT_PARTS) if c is not None]


# transport parameters, one vector for the fabric (each part's fill(TransportConfig)), at
# st.sc[SC_TRP + TRP_*]
TRP = Table("trp", "TRP_", "TRP_N", _parts("trp"))

# --- st.sc: scalars (an int64 vector: namedtuple fields are immutable) ------------------------
SC = Table("sc", "SC_", "NUM_SC", [
    Columns("spin.engine", [
        ("NOW", "virtual time, ps"),
        ("HEAP_N", "events in the heap"),
        ("EV_FREE_TOP", "free event rows"),
        ("SLOT_FREE_TOP", "free frame slots"),
        ("EVENTS", "events processed"),
        ("STATUS", "why run_until returned (STATUS_*)"),
        ("OUT_N", "rows used in st.out"),
        ("CAP_N", "rows used in st.cap"),
        ("MSG_FREE_TOP", "free receive-message rows"),
        ("TXM_FREE_TOP", "free transmit-message rows"),
        ("MSGLOG_N", "messages delivered (rows of st.msglog used, up to its size)"),
        ("TXLOG_N", "messages posted (rows of st.txlog used, up to its size)"),
        ("MTU", "bytes of payload per packet"),
        ("CHECK_ICRC", "1: verify the RoCE ICRC of received frames"),
        ("N_NODES", "nodes (NICs) of the fabric"),
        ("MAX_QP", "QPs per node"),
        ("PKT_EVENTS", "packet events processed"),
        ("SLOTS_IN_USE_MAX", "most frame slots in use at once"),
        ("ROUTE_EPOCH", "index of the routing tables in force (faults switch it)"),
        ("N_DEVS", "devices of the fabric"),
        ("TRIM_DSCP", "DSCP of trimmed frames (a NIC counts them instead of delivering them)"),
        ("FLOW_KEY_MAX_QP", "QP range of switch flow keys (see spin.engine.messages)"),
        ("HANDLER_CALLS", "handler invocations so far (the watchdog tells them apart)"),
        ("MSG_TIMEOUT_PS", "an incomplete message idle this long may be evicted for a new one"),
        ("SAMPLE_PS", "queue-occupancy sampling interval (0: off)"),
        ("SAMPLE_PENDING", "a sampling event is scheduled"),
        ("QS_N", "rows used in st.qsamples"),
    ]),
    Columns("spin.engine.heap", [
        ("CAL_SHIFT", "log2 of a calendar bucket's width in ps"),
        ("CAL_BASE", "start time of the current bucket (its events are in the heap)"),
        ("CAL_N", "events in the calendar's later buckets"),
        ("FAR_N", "events beyond the calendar's horizon, in st.far"),
        ("CALB_FREE", "first block of st.calb freed for reuse (-1: none)"),
        ("CALB_FRESH", "first block of st.calb never used: blocks are taken in order, so a "
         "run touches only the memory its busiest moment needed"),
    ]),
    Columns("spin.engine.prefetch", [
        ("PREFETCH", "1: prefetch the next event's rows while one runs (EngineConfig.prefetch)"),
    ]),
    Columns("nic_emulator.payload", [
        ("PATTERN_OFF", "offset in st.host_mem of the generated-payload pattern"),
        ("HEADER_SLOTS", "1: frame slots hold headers only, the generated payload unstored"),
    ]),
    Columns("spin.describe.host_program", [
        ("CALL_DEV", "device whose host program asked for a Python callback"),
        ("CALL_ID", "that callback's id"),
    ]),
    Columns("spin.engine.tracing", [
        ("TRACE_LOST", "trace records that found st.trace full"),
        ("TRACE", "what the run traces: TRACE_ON | TRACE_LINKS bits (0: nothing)"),
        ("TRACE_N", "rows of st.trace written since the last drain"),
    ]),
    Columns("nic_emulator.transports", [
        ("CONN_N", "rows used in st.conn (reliable-transport connections)"),
        ("TRP", TRP.width, "transport parameters: SC_TRP + TRP_* (from TransportConfig)"),
    ]),
    Columns("switch_emulator.lb.apart", [
        ("LB_ENTRY", SCHEMES_APART, "entry addresses of the run's schemes compiled apart"),
    ]),
    Columns("nic_emulator.transports.apart", [
        ("TR_ENTRY", TRANSPORT_FUNCTIONS, "entry addresses of the functions of the run's "
                                          "transport compiled apart, in contract order"),
    ]),
])

# --- st.cur: the running handler (read by the handler API and by error reports) ---------------
CUR = Table("cur", "CUR_", "NUM_CUR", [
    Columns("spin.engine.handler_context", [
        ("DEV", "device"), ("EC", "execution context"), ("MSG", "message row"),
        ("KIND", "handler kind (KIND_*)"), ("SLOT", "frame slot"), ("TIME", "start time, ps"),
        ("PAYLOAD_OFF", "payload offset in the frame"), ("PAYLOAD_LEN", "payload bytes"),
        ("MSG_OFFSET", "payload offset in the message"), ("SRC", "source node"),
        ("HPU", "HPU running it"), ("PSN", "packet sequence number"), ("QP", "queue pair"),
        ("EXTRA_PS", "time the handler added (blocking DMA)"), ("FRAME_LEN", "frame bytes"),
        ("ACTIVE", "1 while a handler runs"),
        ("RETURNED", "what the handler returned, kept when it is not a return code"),
    ]),
    Columns("spin.engine.handler_abi", [
        ("CALL", CALL_WORDS, "the call block of the running handler"),
    ]),
    Columns("switch_emulator.lb.apart", [
        ("LB_RUNNING", "1 + index of the scheme compiled apart being called (0: none)"),
        ("LB_DEV", "the switch calling it"),
        ("LB_SLOT", "the frame it routes"),
        ("LB_ANSWER", "the local port it returned"),
        ("LB_CALL", SCHEME_CALL_WORDS, "its call block"),
    ]),
    Columns("nic_emulator.transports.apart", [
        ("TR_RUNNING", "1 + contract index of the transport function apart being called "
                       "(0: none)"),
        ("TR_DEV", "the NIC calling it"),
        ("TR_CALL", TRANSPORT_CALL_WORDS, "its call block"),
    ]),
])

# --- st.dev: one row per device; its owners' columns in this order ----------------------------
# transport counters, inside each NIC's st.dev row at D_NTR
NT = Table("ntr", "NT_", "NTR_COLS", _parts("ntr"))

DEV_ENGINE = Columns("spin.engine (every device)", [
    ("KIND", "device kind: DEV_NIC, DEV_SWITCH or DEV_BUMP (spin.engine.device_kinds)"),
    ("SEQ", "sequence number of the device's next event (tie-breaking key)"),
    ("PORT0", "global index of its first port"),
    ("NPORTS", "ports"),
    ("LOCAL", "1: this worker runs the device"),
    ("NODE", "node id of a NIC (-1: switch)"),
    ("SW", "switch index of a switch (-1: NIC)"),
])
# the sPIN handler model, shared by NICs and switches (spin.engine.messages, the loop)
DEV_HANDLERS = Columns("spin.engine (handler model)", [
    ("HPUS", "handler processing units"),
    ("CYCLE_PS", "HPU clock period, ps"),
    ("MATCH_HDR_CYCLES", "cycles to match a message's header packet"),
    ("MATCH_PKT_CYCLES", "cycles to match any other packet"),
    ("HPU_BUSY_PS", "HPU time spent in handlers"),
    ("MAX_MSGS", "receive messages it may track at once"),
    ("MSGS_ACTIVE", "receive messages tracked now"),
    ("MSGS_ABANDONED", "messages replaced by a new one on their connection before completing"),
    ("MSGS_EXPIRED", "incomplete messages evicted after EngineConfig.message_timeout_ns"),
    ("EC_FIRST", "first row of its execution contexts in st.ec"),
    ("EC_COUNT", "its execution contexts"),
    ("HC", N_HANDLER_KINDS, "handler calls: D_HC + kind"),
    ("TIMERS", "handler timers that expired on the device (spin_set_timer)"),
])
DEV_NIC = Columns("nic_emulator", [
    ("PCIE_LAT_PS", "PCIe latency"),
    ("PCIE_MPS_PER_BYTE", "PCIe transfer time, milli-ps per byte"),
    ("PCIE_W_BUSY", "PCIe write direction busy until"),
    ("PCIE_R_BUSY", "PCIe read direction busy until"),
    ("NIC_DMA_W_BYTES", "bytes written to host memory"),
    ("NIC_DMA_R_BYTES", "bytes read from host memory"),
    ("NIC_TX_WINDOW", "transmit engine: packets in flight it allows"),
    ("NIC_TX_SCHED", "transmit engine: an EV_TXM event is scheduled"),
    ("TXQ_HEAD", "send queue (st.txq) head"),
    ("TXQ_N", "send queue length"),
    ("LOOPBACK_PS", "latency of a frame to its own node (NicConfig.loopback_latency_ns)"),
    ("LOOPBACK_FRAMES", "frames sent to its own node through the loopback"),
])
DEV_HOST = Columns("nic_emulator.host", [
    ("HOST_MEM_OFF", "offset of the host's memory in st.host_mem"),
    ("HOST_MEM_SIZE", "bytes of it stored in st.host_mem (0: generated payload)"),
    ("HOST_ADDR_SPACE", "bytes a send or a delivery may address (HostConfig.memory_bytes)"),
    ("PAYLOAD_GEN", "1: sent payload is generated from (node, address) and delivered payload "
     "is not stored (Scenario.payload = 'generated')"),
    ("HOST_O_SEND_PS", "software overhead of a send"),
    ("HOST_O_RECV_PS", "software overhead of a receive"),
    ("HOST_REDUCE_MPS_PER_BYTE", "host reduce time, milli-ps per byte"),
    ("HOST_OP_FIRST", "first row of its program in st.host_ops"),
    ("HOST_OP_COUNT", "ops of its program"),
    ("HOST_PC", "op running or waiting"),
    ("HOST_STATE", "HOST_RUNNING, HOST_WAIT_RECV, HOST_WAIT_EVENT or HOST_DONE"),
    ("HOST_EVENT_COUNT", "host events received"),
    ("HOST_BUSY_PS", "CPU time spent"),
    ("WAIT0", "what it waits for: the QP of a wait_recv"),
    ("WAIT1", "what it waits for: the cumulative count"),
])
DEV_TRANSPORT = (*_parts("dev"), Columns("nic_emulator.transports", [
    ("NTR", NT.width, "transport counters: D_NTR + NT_* (NicStats)"),
]))
DEV_SWITCH = Columns("switch_emulator", [
    ("SW_LAT_PS", "switching latency"),
])
DEV_LB = tuple(c for c in (d.columns("dev") for d in scheme_declarations()) if c is not None)
# the bump-in-the-wire kind's columns, declared next to its code (imported by path, as above)
DEV_BUMP = declaration_module("bump_emulator.columns", "device kind 'bump'").DECLARES.columns("dev")
DEV = Table("dev", "D_", "DEV_COLS",
            [DEV_ENGINE, DEV_HANDLERS, DEV_NIC, DEV_HOST, *DEV_TRANSPORT, DEV_SWITCH, *DEV_LB,
             DEV_BUMP], whole_lines=True)

# --- st.port: one row per port (both directions of a link are two ports) ----------------------
PORT = Table("port", "PT_", "PORT_COLS", [
    # what every frame's enqueue, transmission and arrival reads comes first, in five 64-byte
    # lines (through TX_EVENT: spin.engine.prefetch fetches those lines one event ahead);
    # rows are whole lines and start on a line (spin.engine.state.aligned_zeros)
    Columns("spin.engine.ports", [
        ("DEV", "device"),
        ("BUSY", "a frame is serialising"),
        ("GEN", "bumped when the link goes down: stale tx-done events are ignored"),
        ("PEER", "global index of the port at the other end (-1: none)"),
        ("PEER_DEV", "device of the port at the other end (-1: none): a copy, so a frame's "
         "arrival is scheduled without reading the peer's row"),
        ("RATE_GBPS", "link rate"),
        ("LAT_PS", "arrival delay: link latency plus the receiving switch's pipeline"),
        ("REMOTE", "1: the peer is on another worker"),
        ("UP", "0: the link is down (frames to it are dropped)"),
        ("Q_HEAD", "output queue: ring head in st.port_q"),
        ("Q_N", "output queue: frames"),
        ("Q_BYTES", "output queue: bytes"),
        ("Q_LIMIT_BYTES", "output queue: capacity"),
        ("HDR_PRIO", "1: header-only frames (ACK/NACK, CNP, trimmed headers) take the priority "
         "queue"),
        ("PQ_N", "priority queue: frames"),
        ("LOSS_THRESHOLD", "random loss: a draw below this (of 2^32) loses the frame (0: off)"),
        ("CAPTURE", "1: frames sent on it are captured"),
        ("ECN_DEQUEUE", "ECN: 1 decides when a frame starts transmission (queue behind it), "
         "0 at enqueue (queue ahead of it)"),
        ("ECN_THRESH", "ECN: lower threshold in queue bytes; step marking at it when ECN_HIGH "
         "is not above it (0: never mark)"),
        ("ECN_HIGH", "ECN: upper threshold in queue bytes (RED-like marking between the two)"),
        ("ECN_RNG", "ECN: the port's xorshift32 state for RED-like marking (never 0)"),
        ("PAUSED_UNTIL", "PFC: no data frame starts before this time"),
        ("BLOCKED_SINCE", "PFC: since when data has waited here behind a pause (-1: not "
         "blocked)"),
        ("Q_AREA", "integral of queue bytes over time, in byte*ns (mean occupancy)"),
        ("Q_LAST_T", "when PT_Q_AREA was last brought up to date"),
        ("MAX_Q_BYTES", "largest queue"),
        ("BUSY_PS", "time spent serialising"),
        ("TX_FRAMES", "frames sent"),
        ("TX_BYTES", "bytes sent"),
        ("PFC_XOFF", "ingress bytes above which a PFC pause is sent upstream (0: PFC off; read "
         "for every frame a switch queues, of the port it entered on)"),
        ("PQ_HEAD", "priority queue (trimmed headers, PFC frames): ring in st.port_pq"),
        ("PQ_BYTES", "priority queue: bytes"),
        # what a port does is set per port by its device kind's build (a switch from its
        # SwitchConfig and the port's overrides), so the queues test ports, not device kinds
        ("TRIM_DSCP", "-1: a frame that finds the queue full is dropped; else it is trimmed "
         "to its header, marked with this DSCP, and a header with it takes the priority queue"),
        ("TX_EVENT", "while a data frame serialises: its EV_TX_DONE's row, where the enqueue of "
         "the frame behind it leaves that frame as a prefetch hint"),
        ("DROPS", "frames dropped at its queue"),
        ("RESUME_SCHED", "a resume event is pending"),
        ("ECN_MARKS", "frames marked CE"),
        ("TRIMS", "frames trimmed"),
        ("PAUSES_TX", "PFC frames sent from this port"),
        ("PAUSES_RX", "PFC frames received on this port"),
        ("XOFF", "PFC: 1 while this port has paused its peer"),
        ("XOFF_SENT_AT", "PFC: when this port last sent a pause (its refresh is due halfway "
         "through)"),
        ("IGNORE_PAUSE_UNTIL", "PFC watchdog: pauses received before this time are ignored"),
        ("LOCAL_IDX", "index of the port on its device"),
        ("SAMPLED_BUSY_PS", "PT_BUSY_PS at the last queue sample (utilisation over time)"),
        ("LOSS_STATE", "random loss: the port's xorshift32 state"),
        ("IN_BYTES", "PFC: bytes that entered on this port and still wait in the switch"),
        ("PFC_XON", "ingress bytes below which the pause is lifted"),
        ("PFC_QUANTA", "pause time sent in a PFC frame, in 512-bit quanta"),
        ("PFC_WATCHDOG_PS", "PFC watchdog: paused this long with data waiting, the port drops "
         "its queue and ignores pauses as long again (0: off)"),
    ]),
], whole_lines=True)

# --- st.msg: receive messages being matched and handled --------------------------------------
MSG = Table("msg", "M_", "MSG_COLS", [
    Columns("spin.engine.messages", [
        ("DEV", "device"), ("SRC", "source node"), ("QP", "queue pair"),
        ("EC", "matched execution context (-1: none)"), ("FIRST_PSN", "PSN of its first packet"),
        ("NPKTS", "packets"), ("SEEN", "packets received"), ("VA", "remote virtual address"),
        ("RKEY", "remote key"), ("LEN", "bytes"), ("HDR_END", "end of its header handler"),
        ("PL_END", "end of its latest payload handler"), ("DMA_END", "end of its latest DMA to the host"),
        ("LAST_READY", "latest time one of its packets was ready"), ("FLAGS", "MSG_FLAG_* bits"),
        ("T_FIRST", "arrival of its first packet"),
        ("KEY", "connection key in the receive hash map (-1: not in it)"),
        ("LAST_T", "time of the message's latest packet (stale messages expire)"),
        ("ACTIVE", "1 while the row holds a message"),
    ]),
    Columns("nic_emulator.transports", [
        ("CONN", "reliable transports: the receiving connection's row in st.conn"),
    ]),
], whole_lines=True)

# --- st.txm: messages a NIC transmits ---------------------------------------------------------
TXM = Table("txm", "T_", "TXM_COLS", [
    Columns("nic_emulator.tx", [
        ("DEV", "device"), ("DST", "destination node"), ("QP", "queue pair"), ("LEN", "bytes"),
        ("SENT", "bytes sent"), ("HOST_ADDR", "source address in host memory"),
        ("REMOTE_VA", "remote virtual address"), ("RKEY", "remote key"),
        ("EV", "entropy value"), ("T_POST", "time posted"), ("PSN", "PSN of its first packet"),
        ("LOG_ROW", "its row of st.txlog (-1: the log was full)"),
    ]),
    Columns("nic_emulator.transports", [
        ("NPKTS", "reliable transports: packets of the message"),
        ("NEXT", "next packet index to send (go-back-N rewinds it)"),
        ("CONN", "the sending connection's row in st.conn"),
    ]),
], whole_lines=True)

# --- st.conn: one row per (NIC, peer, QP) connection, as sender or receiver ------------------
CONN = Table("conn", "C_", "CONN_COLS", _parts("conn"), whole_lines=True)
REPS_SLOTS = CONN.columns["REPS0"].width   # REPS' circular EV buffer (nic_emulator.entropy)

# --- st.ec: execution contexts (match rules and handler memory) ------------------------------
EC = Table("ec", "EC_", "EC_COLS", [Columns("spin.engine.messages", [
    ("PROG", "handler program (row of st.prog)"), ("INST", "instance"),
    ("MATCH_QP", "match rule: QP (-1: any)"), ("MATCH_RKEY", "match rule: rkey (-1: any)"),
    ("MATCH_SRC", "match rule: source node (-1: any)"),
    ("MATCH_DST", "match rule: destination node (-1: any)"),
    ("MATCH_UDP_DPORT", "match rule: UDP destination port (-1: any)"),
    ("MATCH_HDR_TYPE", "match rule: header type (-1: any)"),
    ("MEM_OFF", "byte offset of the context's handler memory in the handler-memory arena"),
    ("MEM_BYTES", "its size in bytes"),
    ("MEM_DIMS", MEMORY_DIMS, "+ axis: its shape, as the program declared it for the context"),
])])

# --- st.prog: handler programs ----------------------------------------------------------------
PROG = Table("prog", "PR_", "PROG_COLS", [Columns("spin.engine.handler_abi", [
    ("HAS", N_HANDLER_KINDS, "+ kind: the program has this handler"),
    ("CYCLES", N_HANDLER_KINDS, "+ kind: cycles per call"),
    ("MCPB", N_HANDLER_KINDS, "+ kind: milli-cycles per payload byte"),
    ("ENTRY", N_HANDLER_KINDS, "+ kind: address of the handler's compiled entry"),
])])

# --- st.ctl: fabric-wide control actions, applied by EV_CONTROL events -----------------------
CTL = Table("ctl", "CTL_", "CTL_COLS", [Columns("spin.engine.control", [
    ("KIND", "CTL_LINK_DOWN, ..."), ("A", "argument a"), ("B", "argument b"),
    ("C", "argument c"), ("T", "time it takes effect"),
])])

# --- st.ev: events ----------------------------------------------------------------------------
EV = Table("ev", "E_", "EV_COLS", [Columns("spin.engine.heap", [
    ("TIME", "time, ps"), ("KEY", "deterministic tie-breaking key"), ("KIND", "EV_*"),
    ("DEV", "device"), ("A", "argument a"), ("B", "argument b"),
    ("HINT", "prefetch hint of an EV_TX_DONE: the slot sent, and in the high 32 bits its data "
     "ring position + 1 (0: a priority frame); read by spin.engine.prefetch only"),
    ("HINT_AFTER", "prefetch hint of an EV_TX_DONE: the data frame queued behind the one sent "
     "+ 1 (0: none yet), left by start_tx or by the enqueue that queued it"),
])])

# --- st.heap: pending events as a 4-ary min-heap, each entry its event's order and id ---------
# (a flat int64 vector of HEAP_COLS words per entry; see spin.engine.heap)
HEAP = Table("heap", "HP_", "HEAP_COLS", [Columns("spin.engine.heap", [
    ("TIME", "the event's time, ps (the first order)"),
    ("KEY", "its tie-breaking key (the second)"),
    ("EVENT", "its row in st.ev"),
    ("PAD", "unused: four words keep an entry's index a shift"),
])])

# --- st.cap: captured frames (their bytes in st.cap_frames) ----------------------------------
CAP = Table("cap", "CAP_", "CAP_COLS", [Columns("spin.engine.ports", [
    ("TIME", "time captured"), ("PORT", "global port"),
    ("LEN", "frame bytes"),
])])

# --- st.out: frames leaving for other workers (their bytes in st.out_frames) -----------------
OUT = Table("out", "O_", "OUT_COLS", [Columns("spin.engine.ports", [
    ("TIME", "arrival time at the peer"), ("PORT", "global port of the peer"),
    ("KEY", "event key"), ("LEN", "frame bytes"),
])])

# --- st.trace: trace records (written by spin.engine.tracing, read by spin.results.timeline) -
TRACE = Table("trace", "TRC_", "TRACE_COLS", [Columns("spin.engine.tracing", [
    ("KIND", "record kind"), ("DEV", "device"), ("T0", "start"), ("T1", "end"),
    ("A", 7, "+ i: the record kind's arguments A..G"),
])])

# --- st.qsamples: queue occupancy over time --------------------------------------------------
QSAMPLES = Table("qsamples", "QS_", "QS_COLS", [Columns("spin.engine.ports", [
    ("TIME", "sample time"), ("PORT", "global port"), ("BYTES", "queued bytes"),
    ("BUSY_PS", "busy ps since the previous sample"),
])])

# --- st.msglog / st.txlog: completed receives and posted sends -------------------------------
MSGLOG = Table("msglog", "ML_", "MSGLOG_WIDTH", [Columns("nic_emulator", [
    ("NODE", "receiving node"), ("SRC", "source node"), ("QP", "queue pair"),
    ("BYTES", "message bytes"), ("T_FIRST_PS", "arrival of its first packet"),
    ("T_DONE_PS", "delivered (or handled)"), ("EC", "execution context (-1: none)"),
    ("HANDLED", "1: handled on the NIC"), ("FIRST_PSN", "PSN of its first packet"),
])])
TXLOG = Table("txlog", "TL_", "TXLOG_WIDTH", [Columns("nic_emulator.tx", [
    ("SRC", "source node"), ("DST", "destination node"), ("QP", "queue pair"),
    ("BYTES", "message bytes"), ("T_POST_PS", "time posted"),
    ("FIRST_PSN", "PSN of its first packet"),
    ("T_ACKED_PS", "reliable transports: the sender saw its last packet acknowledged (-1: not)"),
])])

TABLES = (SC, CUR, DEV, NT, PORT, MSG, TXM, CONN, TRP, EC, PROG, CTL, EV, HEAP, CAP, OUT, TRACE,
          QSAMPLES, MSGLOG, TXLOG)

# --- st.pend: the commands a handler issued, carried out when it ends --------------------------
COMMANDS = Variants("pend", "ACT_", "PA_", 8, "written by the spin_* calls (spin.api), carried out "
                    "by nic_emulator.actions and switch_emulator.actions", [
    ("DMA_TO_HOST", "write the packet's payload to host memory", ("NBYTES", "EVENT")),
    ("SEND_PACKET", "send a packet built in the staging bytes",
     ("DST", "QP", "STAGED_OFFSET", "NBYTES", "REMOTE_VA")),
    ("HOST_EVENT", "raise a host event", ("VALUE",)),
    ("PUT_FROM_HOST", "send host memory as a new message",
     ("DST", "QP", "HOST_ADDR", "NBYTES", "REMOTE_VA")),
    ("HOST_WRITE", "write words to host memory", ("NBYTES",)),
    ("DMA_FROM_HOST", "blocking read of host memory (lengthens the handler)", ("NBYTES",)),
    ("FORWARD", "a copy of the packet leaves on a local port (-1: the routed next hop)",
     ("PORT",)),
    ("MULTICAST", "a copy of the packet leaves on each port of a multicast group", ("GROUP",)),
    ("TIMER", "a packet built in staging comes back to this device after a delay",
     ("DELAY_PS", "QP", "STAGED_OFFSET", "NBYTES", "REMOTE_VA")),
])

# --- st.host_ops: the host programs' operations ------------------------------------------------
HOST_OPS = Variants("host_ops", "OP_", "HO_", 8, "written by spin.describe.host_program, run by "
                    "nic_emulator.host", [
    ("SEND", "post a message", ("DST", "QP", "NBYTES", "LOCAL_ADDR", "REMOTE_ADDR", "RKEY")),
    ("WAIT_RECV", "wait until a QP has received a cumulative count of messages",
     ("QP", "TOTAL", "COUNT")),
    ("WAIT_EVENT", "wait until the host has seen a cumulative count of events",
     ("TOTAL", "COUNT")),
    ("COMPUTE", "keep the host busy", ("DURATION_PS",)),
    ("REDUCE", "reduce one vector into another in host memory",
     ("DST_ADDR", "SRC_ADDR", "COUNT", "DTYPE", "OPERATOR")),
    ("MARK", "record the time under a mark", ("INDEX",)),
    ("CALL", "run a Python callback", ("CALLBACK",)),
])

RECORDS = (COMMANDS, HOST_OPS)
