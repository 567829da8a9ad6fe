"""Per-device records of a run (the parts of a ``RunResult``): ``MessageRecord`` (one delivered
or NIC-handled message), ``LinkStats`` (one direction of a link), ``NicStats`` with its
``HandlerCalls``, ``HostStats``, ``SwitchStats``, ``EndpointStats`` (a host served by an
external program); ``Totals`` sums them over the fabric and ``TierLoad`` (``tier_loads``)
sums the links per tier.

Every record converts to and from a plain dict (``to_dict``/``from_dict``) so worker results
travel as JSON. Records were plain dicts in early releases: ``DictStyleAccess`` keeps
``record["field"]`` working, with a ``DeprecationWarning`` naming the attribute to read. They
depend on nothing else of spin but the way errors name a host (``spin.errors.host_label``), so
whatever reads results (tables, figures, reports) imports them without the run machinery.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, ClassVar, TypeVar

from ..errors import host_label

_R = TypeVar("_R")


class DictStyleAccess:
    """Keeps code written when results were plain dicts working, with a ``DeprecationWarning``
    naming the attribute to use instead: ``totals()["host_cpu_ps"]`` reads
    ``totals().host_cpu_ps``, ``r.hosts[0]["finished"]`` reads ``r.hosts[0].finished``. A key
    that never existed fails with one line naming the valid attributes. ``_RENAMED`` maps old
    dict keys whose attribute has another name (``"from"`` is ``LinkStats.from_device``)."""

    _RENAMED: ClassVar[dict[str, str]] = {}
    # a record is not a sequence: without this, __getitem__ would make iter() try keys 0, 1...
    __iter__ = None

    def _attribute_of(self, key: object) -> str:
        names = [f.name for f in fields(self)]            # type: ignore[arg-type]
        attr = self._RENAMED.get(key, key) if isinstance(key, str) else key
        if attr in names or (isinstance(attr, str) and isinstance(
                getattr(type(self), attr, None), property)):
            return attr                                    # type: ignore[return-value]
        raise KeyError(ResultKeyMessage(
            f"{type(self).__name__} has no field {key!r}; results are dataclasses: read their "
            f"attributes ({', '.join(names)})"))

    def _warn(self, key: str, attr: str, how: str) -> None:
        warnings.warn(f"{type(self).__name__}{how} is deprecated: results are dataclasses, "
                      f"use the attribute .{attr}", DeprecationWarning, stacklevel=3)

    def __getitem__(self, key: str) -> Any:
        attr = self._attribute_of(key)
        self._warn(key, attr, f"[{key!r}]")
        return getattr(self, attr)

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated dict-style read: the attribute, or ``default`` for an unknown key."""
        try:
            attr = self._attribute_of(key)
        except KeyError:
            return default
        self._warn(key, attr, f".get({key!r})")
        return getattr(self, attr)


class ResultKeyMessage(str):
    """A ``KeyError`` argument printed as is (a ``KeyError`` shows its argument's repr)."""

    def __repr__(self) -> str:
        return str(self)


def _record(cls: type[_R], d: dict[str, Any]) -> _R:
    """Build a flat record from its dict form (fields only: a dict written by a newer version
    with extra keys still loads)."""
    return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})  # type: ignore[arg-type]


@dataclass
class MessageRecord(DictStyleAccess):
    """One message that reached its destination: delivered to the host, or handled by the NIC."""

    src: int                   # sending node id
    dst: int                   # receiving node id
    qp: int
    bytes: int
    t_post_ps: int | None      # when the sender's host (or a handler) posted it
    t_first_arrival_ps: int    # first packet at the receiving NIC
    t_done_ps: int             # delivered (host notified) or handled by the NIC
    handled_by_nic: bool
    first_psn: int = -1        # PSN of its first packet: pairs it with its post exactly
    t_acked_ps: int | None = None   # reliable transports: the sender saw its last packet
                                    # acknowledged (None: open loop, or no post)

    @property
    def completion_ps(self) -> int | None:
        """Post to done, or None when the post is unknown (sent by a handler)."""
        return None if self.t_post_ps is None else self.t_done_ps - self.t_post_ps

    @property
    def sender_completion_ps(self) -> int | None:
        """Post to the sender's last ACK (how htsim counts a flow's completion), or None
        without a reliable transport."""
        if self.t_post_ps is None or self.t_acked_ps is None:
            return None
        return self.t_acked_ps - self.t_post_ps


@dataclass
class LinkStats(DictStyleAccess):
    """One direction of a link, counted at its transmitting port."""

    # the keys of the dict results
    _RENAMED: ClassVar[dict[str, str]] = {"from": "from_device", "to": "to_device"}

    link: int                  # index into Topology.links
    from_device: str           # transmitting device name
    to_device: str             # receiving device name
    tx_frames: int
    tx_bytes: int              # frame bytes (without preamble, gap and FCS)
    drops: int                 # frames dropped at this port (buffer full)
    max_queue_bytes: int       # largest output-queue occupancy seen
    busy_ps: int               # time spent transmitting
    queue_byte_ns: int = 0     # time integral of the output-queue occupancy
    ecn_marks: int = 0         # frames marked Congestion Experienced at this port
    trims: int = 0             # frames trimmed to their headers at this port
    pauses_sent: int = 0       # PFC frames sent from this port (pausing the peer)
    pauses_received: int = 0   # PFC frames received on this port (pausing it)
    tier: str = ""             # the link's tier (Link.kind: host, edge-agg, leaf-spine, ...)

    def utilisation(self, duration_ps: int) -> float:
        """Fraction of ``duration_ps`` this direction spent transmitting."""
        return self.busy_ps / duration_ps if duration_ps > 0 else 0.0

    def mean_queue_bytes(self, duration_ps: int) -> float:
        """Time-averaged output-queue occupancy over ``duration_ps``."""
        return self.queue_byte_ns * 1000 / duration_ps if duration_ps > 0 else 0.0


@dataclass
class HandlerCalls(DictStyleAccess):
    """Handler invocations on one NIC, by kind."""

    header: int = 0
    payload: int = 0
    completion: int = 0


@dataclass
class NicStats(DictStyleAccess):
    """One NIC: PCIe/DMA traffic to and from its host, HPU work, and what its transport
    (``NicConfig.transport``) resent, acknowledged and saw reordered."""

    node: int
    dma_write_bytes: int       # NIC -> host memory (data and completion entries)
    dma_read_bytes: int        # host memory -> NIC
    hpu_busy_ps: int           # summed over the NIC's HPUs
    handler_calls: HandlerCalls = field(default_factory=HandlerCalls)
    messages_abandoned: int = 0   # replaced by a new message on their QP before completing
    messages_expired: int = 0     # incomplete, evicted after EngineConfig.message_timeout_ns
    loopback_frames: int = 0      # frames sent to its own node, turned around in the NIC
    timers: int = 0               # handler timers that expired (spin_set_timer)
    # reliable transports (NicConfig.transport; all 0 with kind "none")
    retransmissions: int = 0      # data packets sent again (go-back-N, NACKed, timed out)
    timeouts: int = 0             # retransmission timer expiries
    acks_sent: int = 0
    naks_sent: int = 0            # RC NAKs (PSN sequence error) and UE NACKs (trimmed packet)
    cnps_sent: int = 0            # DCQCN congestion notifications (RC)
    acks_received: int = 0
    naks_received: int = 0
    cnps_received: int = 0
    out_of_order: int = 0         # data packets that arrived after a higher PSN of their flow
    reorder_degree: int = 0       # the largest such PSN distance
    duplicates: int = 0           # data packets that had arrived already
    min_rate_mbps: int = 0        # lowest DCQCN sending rate of any of its flows (0: never cut)
    # a transport compiled apart (spin.transport_api): its own counters, by name in lower case
    own_counters: dict[str, int] = field(default_factory=dict)
    name: str = ""                # its host's name in the topology ("h1"); "" in old results

    @property
    def pcie_bytes(self) -> int:
        """DMA bytes in both directions."""
        return self.dma_write_bytes + self.dma_read_bytes

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NicStats":
        """Inverse of ``asdict``."""
        nic = _record(cls, d)
        nic.handler_calls = _record(HandlerCalls, d.get("handler_calls", {}))
        return nic


@dataclass
class HostStats(DictStyleAccess):
    """One host: modelled CPU time and what its program consumed."""

    node: int
    cpu_busy_ps: int           # send/receive overheads, compute, reductions
    finished: bool             # the host program ran to its end
    messages_received: int
    events_received: int       # handler-raised host events
    waiting_for: str = ""      # unfinished: the op it is blocked at and its progress
    name: str = ""             # its name in the topology ("h1"); "" in results of old versions

    @property
    def label(self) -> str:
        """How messages name this host: ``'h1' (node 1)``, or ``node 1`` without a name."""
        return host_label(self.node, self.name)


@dataclass
class SwitchStats(DictStyleAccess):
    """One switch: frames it dropped, by reason (``spin.wire.drops``), and its handlers' work."""

    name: str
    drops: dict[str, int] = field(default_factory=dict)
    hpu_busy_ps: int = 0
    handler_calls: HandlerCalls = field(default_factory=HandlerCalls)
    messages_abandoned: int = 0
    messages_expired: int = 0
    flowlets: int = 0          # flows given a path afresh by flowlet switching
    timers: int = 0            # handler timers that expired (spin_set_timer)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SwitchStats":
        """Inverse of ``asdict``."""
        sw = _record(cls, d)
        sw.drops = dict(d.get("drops", {}))
        sw.handler_calls = _record(HandlerCalls, d.get("handler_calls", {}))
        return sw


@dataclass
class EndpointStats(DictStyleAccess):
    """One host served by an external program (``spin.endpoint``): frames each way and the
    program's frames the fabric refused, by reason (``bad_length``, ``not_ipv4``,
    ``bad_source``, ``bad_time``; ``undelivered``: frames for it after it detached)."""

    host: str
    node: int
    mode: str                  # lockstep | realtime
    frames_to_endpoint: int
    bytes_to_endpoint: int
    frames_from_endpoint: int  # accepted into the fabric
    bytes_from_endpoint: int
    dropped: dict[str, int] = field(default_factory=dict)
    messages_rejected: dict[str, int] = field(default_factory=dict)   # protocol junk, by reason

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EndpointStats":
        """Inverse of ``asdict``."""
        ep = _record(cls, d)
        ep.dropped = dict(d.get("dropped", {}))
        ep.messages_rejected = dict(d.get("messages_rejected", {}))
        return ep


@dataclass(frozen=True)
class Totals(DictStyleAccess):
    """Fabric-wide sums: the figures an offload comparison starts from."""

    link_bytes: int            # every link direction's tx_bytes
    pcie_bytes: int            # DMA bytes, both directions, every NIC
    host_cpu_ps: int           # every host's modelled CPU time
    hpu_busy_ps: int           # every NIC's HPU time
    drops: int                 # frames dropped anywhere, any reason


# --- load per tier of links ----------------------------------------------------------------------
@dataclass(frozen=True)
class TierLoad(DictStyleAccess):
    """How one tier of links was loaded over a run."""

    tier: str
    directions: int            # link directions in the tier
    mean_utilisation: float    # busy time / traffic duration, mean over the directions
    max_utilisation: float
    imbalance: float           # max / mean of bytes sent (0 when the tier carried nothing)
    max_queue_bytes: int


def traffic_duration_ps(result) -> int:
    """Time from the start to the last delivery: what utilisation is measured over. The run
    itself may end later, on a timer left pending (a PFC pause expiry). One pass over the
    messages: read it once per result, not once per link."""
    return max(map(attrgetter("t_done_ps"), result.messages), default=result.end_time_ps)


def tier_loads(result) -> list[TierLoad]:
    """Load per tier of links, in order of first appearance."""
    tiers: dict[str, list] = {}
    for link in result.links:
        tiers.setdefault(link.tier or "link", []).append(link)
    duration = traffic_duration_ps(result)
    out = []
    for tier, links in tiers.items():
        util = [l.utilisation(duration) for l in links]
        load = [l.tx_bytes for l in links]
        mean = sum(load) / len(load)
        out.append(TierLoad(tier, len(links), sum(util) / len(util), max(util),
                            max(load) / mean if mean > 0 else 0.0,
                            max(l.max_queue_bytes for l in links)))
    return out
