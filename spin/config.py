"""Typed, frozen configuration of links, NICs, hosts, switches and the engine.

Units are in the field names. Every default cites where it comes from; all are overridable.
Validation errors are raised as ``ConfigError`` naming the field, the value and what is allowed.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .bounds import count as count_field, field_range, shown, size_bytes, time_ns, time_us
from .errors import ConfigError
from .registry import Registry
from .suggest import did_you_mean
from .transports import (ENTROPIES, TRANSPORTS, TransportOption,  # noqa: F401  (re-exported)
                         check_kind, find_transport, is_import_path)
from .transports import transport_params

# The largest single delay a config may give (1 s of virtual time): far beyond any cable, switch
# or PCIe figure, and small enough that sums of delays in integer picoseconds stay exact in int64.
MAX_DELAY_NS = 1e9


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def make(cls, **kwargs: Any):
        """Build with validation errors turned into ConfigError with field, value and choices."""
        try:
            return cls(**kwargs)
        except ValidationError as exc:
            raise config_error(cls.__name__, exc) from None


def config_error(where: str, exc: ValidationError) -> ConfigError:
    lines = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        value = err.get("input")
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            fields = _fields_of(where)
            valid = ", ".join(sorted(fields))
            msg = f"unknown field{did_you_mean(err['loc'][-1], fields)}; valid fields: {valid}"
        elif err["type"] == "literal_error":
            msg += did_you_mean(value, re.findall(r"'([^']*)'", err["ctx"]["expected"]))
        lines.append(f"{where}.{field} = {value!r}: {msg}")
    return ConfigError("invalid configuration:\n  " + "\n  ".join(lines))


def _fields_of(name: str) -> list[str]:
    for cls in (LinkConfig, NicConfig, HostConfig, SwitchConfig, EngineConfig, TransportConfig):
        if cls.__name__ == name:
            return list(cls.model_fields)
    return []


class LinkConfig(_Frozen):
    # 400 Gb/s: the line rate PsPIN was designed for (PsPIN, ISCA'21).
    rate_gbps: int = Field(400, gt=0, le=1_600)
    # ~100 ns: a few metres of cable (~5 ns/m) plus PHY and RS-FEC latency (~100 ns at 400G).
    latency_ns: float = Field(100.0, gt=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # Random loss: each frame leaving either end of the link is lost with this probability
    # (counted as the drop reason ``random_loss``), drawn from a deterministic per-port PRNG
    # seeded by ``loss_seed`` and the port, so runs repeat exactly for any worker count.
    loss_rate: float = Field(0.0, ge=0.0, lt=1.0, allow_inf_nan=False)
    loss_seed: int = Field(0, ge=0, lt=2**32)


@functools.lru_cache(maxsize=1)
def port_schemes() -> Registry:
    """The switches' port-selection schemes (``SwitchConfig.load_balancing``), in code order:
    the ``PortScheme`` declarations of ``switch_emulator.lb``, read when a config first names a
    scheme (never when spin is imported). Names of schemes from outside spin (an import path,
    an entry point of group ``spin.schemes``) are accepted too (``spin.port_selection``)."""
    from switch_emulator.lb.registry import scheme_registry
    return scheme_registry()


class TransportConfig(_Frozen):
    """How NICs deliver RDMA WRITE messages (``nic_emulator.transports``), set as
    ``NicConfig.transport`` (``[nic.transport]`` in scenario files).

    ``kind``: ``"none"`` sends open-loop (no acknowledgements; a lost packet loses its message);
    ``"rc"`` is the RoCEv2 reliable connection: cumulative ACK/NAK (AETH) with go-back-N, a
    retransmission timeout and DCQCN rate control from CNPs; ``"ue"`` is an Ultra-Ethernet-style
    transport for sprayed traffic: every packet carries its placement, the receiver writes it to
    host memory in any order and returns selective ACKs, a trimmed packet is NACKed and resent
    at once, and a congestion window reacts to ECN, measured delay and trimming (NSCC).
    ``entropy``: the UDP source port (entropy value, EV) each packet carries, which switches
    hash: ``"per_flow"`` (one EV per connection), ``"spray"`` (a new EV per packet from a
    per-connection PRNG, oblivious spraying), ``"reps"`` (recycle the EVs of unmarked ACKs,
    freeze on trims and timeouts; Bonato et al., arXiv 2407.21625).

    Each transport's own keys may also be given in its table, ``[nic.transport.<kind>]``
    (validated by the transport's ``PARAMS`` model, declared next to it: ``transport_params``);
    the table of the transport in use applies, the others are only checked. The flat keys
    below keep working and keep their meaning. Keys of a transport from outside spin, which
    have no flat field, are kept in ``tables`` and read with ``table(kind)``.
    """

    kind: str = "none"            # a name of TRANSPORTS
    entropy: str = "per_flow"     # a name of ENTROPIES
    # ACK coalescing (Ultra Ethernet allows one ACK for several packets; its SACK bitmap covers
    # the rest): the receiver acknowledges every Nth accepted packet, a message's last packet,
    # a packet the sender flagged with AckReq (UE: its window closed after it, so no ACK timer
    # is needed), and, with ``ack_on_ecn``, an ECN-marked packet at once (htsim's UEC sink).
    ack_every_packets: int = Field(1, ge=1, le=64)
    ack_on_ecn: bool = True
    # Retransmission timeout after the oldest unacknowledged packet stopped moving, until the
    # connection has measured its RTT: well above the queueing delay of a few 1 MiB switch
    # buffers at 100 Gb/s (~85 us each). UE then uses SRTT + 4 RTTVAR (RFC 6298), never less
    # than ``min_rto_us`` (htsim's UEC source: ~100 us).
    rto_us: float = time_us(500.0, positive=True)
    min_rto_us: float = time_us(100.0, positive=True)
    # UE congestion control: "nscc" (Ultra Ethernet's NSCC: ECN and measured queueing delay,
    # fast increase, quick adapt; nic_emulator.nscc) or "window" (DCTCP-like, ECN only:
    # nic_emulator.congestion). NSCC's target queueing delay: 0 is half of ``base_rtt_us``
    # (htsim: 6 us for its 12 us reference RTT).
    congestion: Literal["nscc", "window"] = "nscc"
    target_delay_us: float = time_us(0.0)
    # DCQCN (Zhu et al., SIGCOMM'15): the receiver sends at most one CNP per flow per 50 us
    # (the paper's N); the sender's alpha gain g = 1/256 and the alpha/rate-increase timer
    # 55 us (the paper's g and K); F = 5 fast-recovery stages; additive increase 40 Mb/s (the
    # paper's R_AI) and hyper increase 400 Mb/s; the rate never falls below 100 Mb/s.
    cnp_interval_us: float = time_us(50.0)
    dcqcn_g_shift: int = Field(8, ge=1, le=16)
    dcqcn_timer_us: float = time_us(55.0, positive=True)
    dcqcn_fast_recovery_stages: int = Field(5, ge=1, le=64)
    dcqcn_ai_mbps: int = Field(40, ge=1, le=1_600_000)
    dcqcn_hai_mbps: int = Field(400, ge=1, le=1_600_000)
    dcqcn_min_rate_mbps: int = Field(100, ge=1, le=1_600_000)
    # UE congestion window: starts at ``window_bytes``, or (0) one bandwidth-delay product of
    # the host link over ``base_rtt_us``, never below one MTU nor above ``max_window_factor``
    # times the start; ECN gain 1/16 (DCTCP's g) for the "window" control. ``base_rtt_us`` is
    # also NSCC's base RTT (a queueing delay is an RTT sample minus the least of it and the
    # connection's least sample).
    window_bytes: int = size_bytes(0)
    base_rtt_us: float = time_us(12.0, positive=True)
    max_window_factor: int = Field(2, ge=1, le=64)
    # Spraying and REPS exploration draw EVs from this many per connection, walked in a
    # shuffled round robin (htsim's ``-paths``, default 64 there; a power of two keeps the walk
    # even); 0: any of the 16,384 EVs of the dynamic port range, drawn at random.
    ev_set_size: int = Field(0, ge=0, le=16_384)
    # REPS: after a trim or timeout only cached (known-good) EVs are used for this long
    # (htsim's buffer_reps default: 10 ms).
    reps_freeze_us: float = time_us(10_000.0)
    # keys of per-kind tables that are no flat field (transports from outside spin), by kind
    tables: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _per_kind_tables(cls, data: Any) -> Any:
        """Fold the ``[nic.transport.<kind>]`` tables into the flat keys (their transport's
        table only) and ``tables``, each checked by its transport's ``PARAMS``."""
        if not isinstance(data, dict):
            return data
        kind = data.get("kind", cls.model_fields["kind"].default)
        # a transport named by import path: its table is keyed by its option's name
        own = find_transport(kind, "nic.transport.kind").name if is_import_path(kind) else None
        given = {k: v for k, v in data.items()
                 if (k in TRANSPORTS or k == own) and isinstance(v, dict)}
        given.update({k: v for k, v in (data.get("tables") or {}).items() if k not in given})
        if not given:
            return data
        flat = {k: v for k, v in data.items() if k not in given and k != "tables"}
        kind = own or kind
        kept: dict[str, dict[str, Any]] = {}
        for name, table in given.items():
            values = check_transport_table(name, table)
            if name != kind:
                continue
            for key, value in values.items():
                if key not in cls.model_fields:
                    kept.setdefault(name, {})[key] = value
                elif key in flat and flat[key] != value:
                    raise ConfigError(f"nic.transport.{name}.{key} = {shown(value)}: also given "
                                      f"as nic.transport.{key} = {shown(flat[key])}; give it "
                                      f"once")
                else:
                    flat[key] = value
        return {**flat, "tables": kept}

    def table(self, kind: str) -> Any:
        """Transport ``kind``'s parameters as its ``PARAMS`` model: its table's keys, else the
        flat ones, else their defaults (None: the transport takes none)."""
        model = transport_params(kind)
        if model is None:
            return None
        own = self.tables.get(kind, {})
        flat = {k: getattr(self, k) for k in model.model_fields if k in type(self).model_fields}
        return model(**{**flat, **own})

    @field_validator("kind")
    @classmethod
    def _known_transport(cls, name: str) -> str:
        return check_kind(name)

    @field_validator("entropy")
    @classmethod
    def _known_entropy(cls, name: str) -> str:
        return ENTROPIES.check(name)

    @model_validator(mode="after")
    def _entropy_needs_acks(self) -> "TransportConfig":
        if self.entropy == "reps" and self.kind == "none":
            raise ValueError("entropy='reps' recycles EVs echoed by ACKs: it needs kind='rc' or "
                             "'ue' (kind='none' sends no ACKs); valid pairs with 'none': "
                             "entropy='per_flow' or 'spray'")
        return self


def check_transport_table(kind: str, table: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``[nic.transport.<kind>]``, validated by the transport's ``PARAMS`` (only the
    keys given): a key of another transport's table, an unknown key or a bad value is a
    one-line ConfigError with the valid keys."""
    model = transport_params(kind)
    valid = list(model.model_fields) if model is not None else []
    for key in table:
        if key in valid:
            continue
        owners = [t.name for t in TRANSPORTS if t.name != kind
                  and key in getattr(transport_params(t.name), "model_fields", {})]
        if owners:
            why = (f"a key of [nic.transport.{owners[0]}], not of [nic.transport.{kind}]" +
                   (" (a flat [nic.transport] key too)" if key in TransportConfig.model_fields
                    else ""))
        elif key in TransportConfig.model_fields:
            why = f"a [nic.transport] key, not one of [nic.transport.{kind}]"
        else:
            why = f"unknown key{did_you_mean(key, valid + list(TransportConfig.model_fields))}"
        raise ConfigError(f"nic.transport.{kind}.{key} = {shown(table[key])}: {why}; valid keys of "
                          f"[nic.transport.{kind}]: {', '.join(valid) or 'none'}")
    try:
        model(**table)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        msg = (f"too large for an integer{field_range(model.model_fields.get(key))}"
               if err["type"] == "int_parsing_size" else err["msg"])
        raise ConfigError(f"nic.transport.{kind}.{key} = {shown(err.get('input'))}: "
                          f"{msg}") from None
    return dict(table)


class NicConfig(_Frozen):
    # 32 HPUs at 1 GHz: PsPIN's 4 clusters x 8 RI5CY cores (pspin_cfg_pkg.sv, docs/examples.md).
    hpus: int = Field(32, ge=1, le=1024)
    hpu_clock_mhz: int = Field(1000, ge=1, le=100_000)
    # Matching cost per header packet / per later packet: the sPIN simulator's defaults
    # c=100 and sPIN_c_packet=10 cycles (LogGOPSim2 cmdline.ggo).
    match_header_cycles: int = count_field(100, low=0)
    match_packet_cycles: int = count_field(10, low=0)
    # PCIe Gen5 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s raw per direction; ~50 GB/s after
    # TLP/DLLP overheads with 256 B payloads. One-way latency ~400 ns (Neugebauer et al.,
    # "Understanding PCIe performance for end host networking", SIGCOMM'18).
    pcie_rate_gbytes_per_s: float = Field(50.0, ge=1e-3, le=1e5, allow_inf_nan=False)
    pcie_latency_ns: float = Field(400.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # In-flight receive messages per NIC: PsPIN has 256 message queues (MPQs).
    max_inflight_messages: int = count_field(256)
    # Frames the transmit engine may queue at the egress port before it waits.
    tx_window_frames: int = count_field(8)
    # A frame to the NIC's own node is turned around inside the NIC, as RDMA devices handle
    # loopback messages (no packet on the port: Barak, "Loopback messages in RDMA", rdmamojo,
    # 2018). 50 ns stands for one pass through on-chip transmit and receive logic instead of
    # MAC, PHY and link: an estimate of that order, not a measured figure.
    loopback_latency_ns: float = Field(50.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # Reliability, congestion control and entropy of the NIC's sends (default: open loop).
    transport: TransportConfig = Field(default_factory=TransportConfig)


class HostConfig(_Frozen):
    memory_bytes: int = size_bytes(1 << 20, low=64)
    # Per-message host software overhead o = 1.5 us: the sPIN simulator's LogGOPS default
    # (LogGOPSim2 cmdline.ggo o=1500 ns), applied to posting a send and to consuming a receive.
    send_overhead_ns: float = Field(1500.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    recv_overhead_ns: float = Field(1500.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # Host-side reduction: ~5 GB/s per core for a streaming a[i] += b[i] (two loads and a store
    # per element; STREAM "add" per core on server CPUs), i.e. 200 ps per input byte.
    reduce_ps_per_byte: float = Field(200.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    qps: int = Field(64, ge=1, le=4096)
    # Pipelining of the host ring allreduce: 0 sends each step's block as one message (MPI's
    # ring); > 0 moves it in chunks of this many bytes, each passed on once reduced, so the
    # reduction of one chunk overlaps the transfer of the next (NCCL's ring).
    pipeline_chunk_bytes: int = size_bytes(0)

    @classmethod
    def preset(cls, name: str) -> HostConfig:
        """The host model ``name`` of HOST_PRESETS (``cpu``, ``gpu``, ``network``)."""
        if name not in HOST_PRESETS:
            raise ConfigError(f"host preset {name!r}; valid choices: "
                              f"{', '.join(HOST_PRESETS)}")
        return cls(**HOST_PRESETS[name])


# Host models (HostConfig.preset). ``cpu``: the defaults, an MPI rank on a server core
# (LogGOPS overheads o = 1.5 us, a 5 GB/s streaming add, one message per ring step).
# ``gpu``: a GPU reduces at HBM bandwidth, as NCCL's reduction kernels do: HBM3 at 3.35 TB/s
# (NVIDIA H100 SXM datasheet) moves 3 bytes per reduced input byte (two reads, one write), so
# ~1.1 TB/s of input, 0.9 ps per byte; and NCCL's ring pipelines every step in chunks (its
# Simple protocol splits a 4 MiB channel buffer into NCCL_STEPS = 8 slots of 512 KiB), so a
# chunk's reduction overlaps the next chunk's transfer. Message overheads stay the cpu ones.
# ``network``: the gpu preset with no per-message host overhead, so that only the fabric and the
# algorithm limit a collective: the configuration in which collectives are held to their link
# bounds (docs/reference/collective-bounds.md), not a model of any host.
HOST_PRESETS: dict[str, dict] = {
    "cpu": {},
    "gpu": {"reduce_ps_per_byte": 0.9, "pipeline_chunk_bytes": 512 * 1024},
    "network": {"reduce_ps_per_byte": 0.9, "pipeline_chunk_bytes": 512 * 1024,
                "send_overhead_ns": 0.0, "recv_overhead_ns": 0.0},
}

MAX_SWITCH_HPUS = 4096


class SwitchConfig(_Frozen):
    # Port-to-port latency of a datacentre switch pipeline: ~450 ns (Tofino-class, store and
    # forward of the frame is modelled separately by the link serialisation).
    latency_ns: float = Field(450.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # Per-port output buffer; tail drop (or trimming) beyond it.
    port_buffer_bytes: int = size_bytes(1 << 20, low=2048)
    # Handler processing units. Flare builds its programmable switch from PsPIN units, one per
    # port (De Sensi et al., "Flare: Flexible In-Network Allreduce", SC21): PsPIN's 4 clusters
    # x 8 cores at 1 GHz keep up with one 400 Gb/s port (Di Girolamo et al., ISCA'21), so a
    # switch has ``hpus_per_port`` x its ports HPUs (capped at MAX_SWITCH_HPUS) unless ``hpus``
    # sets the total. Matching costs as the NIC's (sPIN simulator defaults).
    hpus: int | None = Field(None, ge=1, le=4096)
    hpus_per_port: int = Field(32, ge=1, le=1024)
    hpu_clock_mhz: int = Field(1000, ge=1, le=100_000)
    match_header_cycles: int = count_field(100, low=0)
    match_packet_cycles: int = count_field(10, low=0)
    max_inflight_messages: int = count_field(1024)
    # ECN: mark CE on ECN-capable frames when the egress queue holds at least this many bytes
    # (0: never). DCTCP-style step marking; 64 KiB is about DCTCP's K = 65 x 1.5 KB packets
    # (Alizadeh et al., SIGCOMM'10). Real IP ECN bits, checksum updated.
    ecn_threshold_bytes: int = size_bytes(65_536)
    # RED-like marking instead of the step: with an upper threshold above the lower one, a frame
    # is marked with probability (queue - lower) / (upper - lower) between the two and always
    # above the upper (htsim's composite queue; its main_uec uses 20 % and 80 % of a BDP-sized
    # queue). 0: the step at ``ecn_threshold_bytes`` alone.
    ecn_high_bytes: int = size_bytes(0)
    # When the marking is decided: "enqueue" (on the bytes queued ahead of the frame, as DCTCP
    # switches) or "dequeue" (when it starts transmission, on the bytes queued behind it, as
    # htsim and shared-buffer switches that mark on egress do; the signal is fresher by one
    # queueing delay).
    ecn_at: Literal["enqueue", "dequeue"] = "enqueue"
    # Header-only frames (RoCE ACK/NAK and CNP, Ultra Ethernet ACK/NACK, trimmed headers) go in
    # the priority queue of every port, ahead of data and never tail-dropped behind it, as in
    # htsim and Ultra Ethernet 1.0; False queues them with data (a plain single-class switch).
    header_priority: bool = True
    # Trimming (NDP, SIGCOMM'17; Ultra Ethernet 1.0): a frame that overflows the buffer loses its
    # payload and its headers go on in a priority queue, marked with this DSCP code point
    # (operator-chosen in UE; any value 1..63 not used for other traffic).
    trim: bool = False
    trim_dscp: int = Field(1, ge=1, le=63)
    # Priority flow control (IEEE 802.1Qbb), the lossless Ethernet RoCE runs on: pause the
    # upstream port when the bytes that entered on it and still wait exceed xoff; resume below
    # xon. Pause frames are real MAC control frames on the wire. A pause holds the peer for
    # pfc_pause_quanta x 512 bit times (335 us at 100 Gb/s, 21 us at 1.6 Tb/s) and is renewed
    # halfway through while the port stays above xoff. Lossless only while the xoff plus
    # headroom (what arrives until the pause takes effect: link latency and pipeline there and
    # back at line rate, ~33 KB at 400 Gb/s with the defaults) of all the ingress ports that
    # feed one output fit its buffer: 32 KiB suits radix-16 switches with 1 MiB per port.
    pfc: bool = False
    pfc_xoff_bytes: int = size_bytes(32 * 1024, low=1)
    pfc_xon_bytes: int = size_bytes(16 * 1024)
    pfc_pause_quanta: int = Field(0xFFFF, ge=1, le=0xFFFF)
    # PFC watchdog (as switches ship it, e.g. SONiC's pfcwd): a port held by pauses for this
    # long with data waiting is taken to be in a PFC deadlock (a cycle of paused ports, which
    # shortest-path routing can form on meshes such as HammingMesh): it drops its queued data
    # frames (counted as pfc_watchdog) and ignores pauses for as long again, so the run goes
    # on instead of waiting forever. 0: off (a deadlocked run then never ends).
    pfc_watchdog_ns: float = Field(1_000_000.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)
    # Port selection among equal-cost next hops: a scheme of ``switch_emulator.lb`` (one module
    # each, found by its registry; ``spin lb --list``), per-flow hashing (ecmp) by default. The
    # seed also seeds the per-switch random numbers of the schemes that draw them.
    load_balancing: str = "ecmp"
    ecmp_seed: int = Field(0, ge=0, lt=2**32)
    # Idle time after which a flow's next packet starts a new flowlet (may change port).
    # htsim's fat-tree switch uses 10 us (_sticky_delta); CONGA 500 us, LetFlow 150 us were
    # tuned for TCP at 10 Gb/s. Must exceed the delay skew between paths to avoid reordering.
    flowlet_gap_ns: float = time_ns(10_000.0, positive=True)
    # Time from a link failure (or re-shape) until every switch routes around it: detection
    # plus table update. Hardware fast failover reacts within microseconds; BFD-driven
    # control planes take milliseconds.
    route_convergence_ns: float = Field(10_000.0, ge=0, le=MAX_DELAY_NS, allow_inf_nan=False)

    @field_validator("load_balancing")
    @classmethod
    def _known_scheme(cls, name: str) -> str:
        return port_schemes().check(name)

    def hpus_for(self, ports: int) -> int:
        """HPUs of a switch with ``ports`` ports: ``hpus`` if set, else ``hpus_per_port`` per
        port (at most MAX_SWITCH_HPUS)."""
        if self.hpus is not None:
            return self.hpus
        return max(1, min(MAX_SWITCH_HPUS, self.hpus_per_port * ports))

    @model_validator(mode="after")
    def _ecn_band(self) -> "SwitchConfig":
        if self.ecn_high_bytes and self.ecn_high_bytes <= self.ecn_threshold_bytes:
            raise ValueError(f"ecn_high_bytes = {self.ecn_high_bytes} must be above "
                             f"ecn_threshold_bytes = {self.ecn_threshold_bytes} (or 0: step "
                             "marking at ecn_threshold_bytes)")
        return self


# SwitchConfig fields a single port may override (``Scenario.configure_port``): its queue.
PORT_FIELDS = ("port_buffer_bytes", "ecn_threshold_bytes", "ecn_high_bytes", "ecn_at",
               "header_priority")


class EngineConfig(_Frozen):
    # RoCE path MTU; 1 KiB is what PsPIN's figures use.
    mtu_bytes: Literal[256, 512, 1024, 2048, 4096] = 1024
    buffer_slots: int = count_field(1 << 14, low=64)
    queue_frames: int = count_field(1024, low=4)
    max_events_pending: int = count_field(1 << 16, low=64)
    max_rx_messages: int = count_field(1 << 14, low=16)
    max_tx_messages: int = count_field(1 << 14, low=16)
    # Rows of the delivered-message and post logs (each worker's): what results list per
    # message; beyond them messages are counted, not listed (RunResult.unlogged says how many).
    log_messages: int = count_field(1 << 16, low=0)
    # Verify the ICRC of frames entering from outside this engine (other workers, injection);
    # frames built by the engine are correct by construction.
    check_icrc: bool = True
    boundscheck: bool = False
    # Run handlers as plain Python inside the compiled engine: print, pdb and tracebacks with
    # the failing line work, results are the same; each call costs microseconds, not ns.
    debug: bool = False
    capture_frames: int = count_field(1 << 14, low=16)
    # Wall-clock time one handler invocation may run before the run is stopped with an error
    # naming it (an endless loop in a handler cannot be interrupted otherwise); 0 disables.
    handler_timeout_s: float = Field(10.0, ge=0, le=1e6, allow_inf_nan=False)
    # An incomplete message whose last packet is older than this is evicted (and counted as
    # expired) when its device needs a message slot: its missing packets are not coming.
    message_timeout_ns: float = time_ns(1_000_000.0, positive=True)
    # Record every non-empty output queue at this interval (0: off), for occupancy over time
    # (result.queue_samples); the mean and maximum per port are always kept.
    queue_sample_ns: float = time_ns(0.0)
    # SHA-256 of every host's memory in the result (``RunResult.host_memory_sha256``), for
    # checks that two runs left identical memory. Off by default: hashing reads every byte of
    # every host (seconds at 1024 hosts) and most runs never look at it; ``spin run`` says when
    # it was skipped, ``spin run --digests`` and ``spin.runs.run_both`` ask for it.
    host_memory_digests: bool = False
    # Software prefetch of the rows the next event touches while one runs
    # (spin.engine.prefetch): it pays from about 512 hosts, where the rows outgrow the caches
    # (30 % more events/s at 1,024), and costs 3-7 % below, where they stay in cache. "auto":
    # on from PREFETCH_AUTO_HOSTS hosts. Results are the same either way.
    prefetch: Literal["auto", "on", "off"] = "auto"

    @classmethod
    def for_fabric(cls, n_hosts: int, queued_frames: int = 0, **fields) -> "EngineConfig":
        """Tables sized for a congested fabric of ``n_hosts``: every host sending to many at
        once (a permutation, an all-to-all) fills queues across the fabric, so frame slots,
        pending events and messages grow with the host count instead of the small-scenario
        defaults. ``queued_frames``: how many frames the switches' queues hold when all are
        full (an all-to-all over a lossy fabric can fill them all; slots are only touched when
        used). ``fields`` set any other field (``mtu_bytes``, ...)."""
        return cls(**{"buffer_slots": max(1 << 16, 256 * n_hosts, queued_frames + 64 * n_hosts),
                      "max_events_pending": max(1 << 16, 64 * n_hosts),
                      "log_messages": max(1 << 16, 8 * n_hosts),
                      "max_rx_messages": max(1 << 14, 4 * n_hosts),
                      "max_tx_messages": max(1 << 14, 4 * n_hosts), **fields})
