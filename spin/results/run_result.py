"""Structured, JSON-serialisable results of a run. Everything is virtual time or counts, except
the ``wall`` section, which holds wall-clock figures and is never compared between runs.

Classes: ``RunResult`` (one run, merged over workers) made of ``MessageRecord`` (one delivered
or NIC-handled message), ``LinkStats`` (one direction of a link), ``NicStats`` with its
``HandlerCalls``, ``HostStats``, ``SwitchStats``, ``EndpointStats`` (a host served by an
external program); ``Totals`` sums them over the fabric. The records live in
``spin.results.records`` and are re-exported here.

Every per-device record is owned by exactly one worker, so merging workers is concatenation; a
record converts to and from a plain dict (``to_dict``/``from_dict``) so worker results travel as
JSON and ``RunResult.from_dict(r.to_dict()) == r``.

Shape (read attributes; dict-style ``r.hosts[0]["finished"]`` still works for now, with a
``DeprecationWarning`` naming the attribute)::

    RunResult
      end_time_ps, events, packet_events       ints (virtual time in ps)
      messages   [MessageRecord]               src, dst (node ids), qp, bytes, t_*_ps, ...
      links      [LinkStats]                   one per link direction: from_device, to_device
      nics       [NicStats]                    node, name, DMA bytes, HPU time, handler calls
      hosts      [HostStats]                   node, name, cpu_busy_ps, finished, waiting_for
      switches   [SwitchStats]                 name, drops by reason, handler calls
      endpoints  [EndpointStats]               hosts served by an external program
      drops      {reason: frames}              fabric-wide
      marks      {label: {node: t_ps}}         HostProgram.mark times
      totals()   Totals                        fabric-wide sums (link, PCIe, CPU, HPU, drops)
      tier_loads() [TierLoad]                  load per tier of links

``to_dict``/``to_json`` write the same fields plus ``schema_version`` (``SCHEMA_VERSION``),
``totals`` and ``tiers``; the version goes up whenever a field is renamed or removed or its
meaning changes (adding a field does not: readers ignore fields they do not know).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, RunIncompleteError
from .records import (  # noqa: F401 (re-export)
    EndpointStats,
    HandlerCalls,
    HostStats,
    LinkStats,
    MessageRecord,
    NicStats,
    SwitchStats,
    TierLoad,
    Totals,
    _record,
    host_label,
    tier_loads,
)
from ..suggest import did_you_mean
from .tables import RunTables, run_tables

if TYPE_CHECKING:
    import numpy as np

    from ..handler import ExecutionContext
    from .timeline import Trace


# Version of the JSON form of a RunResult (``to_dict``): 1 is the first versioned form, with
# host and NIC names (HostStats.name, NicStats.name).
SCHEMA_VERSION = 1


@dataclass
class RunResult:
    """Result of one run (merged over workers). Lists are ordered by content (``canonicalize``),
    so two runs compare equal whatever the worker count."""

    end_time_ps: int
    events: int
    packet_events: int
    messages: list[MessageRecord]
    links: list[LinkStats]
    nics: list[NicStats]
    hosts: list[HostStats]
    switches: list[SwitchStats]
    drops: dict[str, int]                    # frames dropped, by reason, fabric-wide
    marks: dict[str, dict[int, int]]         # label -> node -> virtual time (ps)
    host_memory_sha256: dict[int, str] = field(default_factory=dict)
    # [src, dst, qp, bytes, t_post_ps, first_psn, t_acked_ps (-1: not acknowledged/open loop)]
    posts: list[list[int]] = field(default_factory=list)
    # [t_ps, link, direction (0: link.a -> link.b, 1: back), queued bytes] for every non-empty
    # output queue at each EngineConfig.queue_sample_ns instant (empty when sampling is off)
    queue_samples: list[list[int]] = field(default_factory=list)
    # [t_ps, link, direction, busy_ps] on the same grid: time the direction spent transmitting
    # frames it started since the previous sample (busy_ps / interval is its utilisation)
    link_samples: list[list[int]] = field(default_factory=list)
    # host-memory regions asked for by (node, addr, nbytes); bytes, so kept out of to_dict()
    memory_regions: dict[tuple[int, int, int], bytes] = field(default_factory=dict, repr=False)
    wall: dict[str, float] = field(default_factory=dict)
    # the run's timeline, when the scenario was traced (Scenario.trace); not part of to_dict()
    # or of equality, like the wall-clock figures it is too large to compare
    trace: Trace | None = field(default=None, repr=False, compare=False)
    endpoints: list[EndpointStats] = field(default_factory=list)
    # delivered messages and posts left out of ``messages`` and ``posts``: the message log
    # (EngineConfig.log_messages) was full
    unlogged: dict[str, int] = field(default_factory=dict)
    # handler memory of every execution context after the run, by its index in
    # scenario.contexts (read with handler_memory()); arrays, so not part of to_dict()
    handler_memories: dict[int, np.ndarray] = field(default_factory=dict, repr=False,
                                                    compare=False)
    handler_contexts: tuple = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:
        """One line of what the run did: a field-by-field repr of a large run prints pages."""
        stuck = len(self.unfinished_hosts())
        return (f"RunResult(end_time_ps={self.end_time_ps}, {self.events} events, "
                f"{len(self.messages)} messages, {len(self.hosts)} hosts"
                f"{f' ({stuck} unfinished)' if stuck else ''}, {len(self.switches)} "
                f"switch{'' if len(self.switches) == 1 else 'es'}, "
                f"{len(self.links)} link directions, drops={sum(self.drops.values())}, "
                f"marks={sorted(self.marks)})")

    def host_name(self, node: int) -> str:
        """The topology's name of host ``node`` (``h1``); ``node 1`` when the result has no
        names (results of old versions)."""
        for h in self.hosts:
            if h.node == node and h.name:
                return h.name
        return f"node {node}"

    def host_label(self, node: int) -> str:
        """Host ``node`` as messages name it: ``'h1' (node 1)``."""
        name = self.host_name(node)
        return host_label(node, "" if name == f"node {node}" else name)

    def mark(self, label: str, node: int) -> int:
        """Virtual time (ps) at which ``node``'s host program passed ``mark(label)``."""
        if label not in self.marks:
            raise ConfigError(f"mark label={label!r} is not a mark of this run"
                              f"{did_you_mean(label, self.marks)}; marks: "
                              f"{', '.join(map(repr, sorted(self.marks))) or 'none'}")
        if node not in self.marks[label]:
            passed = ", ".join(self.host_label(n) for n in sorted(self.marks[label])) or "none"
            raise ConfigError(f"mark label={label!r}: host {self.host_label(node)} never passed "
                              f"this mark; hosts that did: {passed}")
        return self.marks[label][node]

    def read(self, node: int, addr: int, count: int, dtype: str = "uint8") -> "np.ndarray":
        """``count`` elements of ``dtype`` at ``addr`` of host ``node``'s memory after the run,
        from a region brought back by ``run_scenario(..., regions=...)`` (read-only)."""
        import numpy as np
        nbytes = count * np.dtype(dtype).itemsize
        for (n, a, k), data in self.memory_regions.items():
            if n == node and a <= addr and addr + nbytes <= a + k:
                return np.frombuffer(data, np.uint8, nbytes, addr - a).view(dtype)
        asked = ", ".join(f"(node {n}, addr {a}, {k} B)" for n, a, k in self.memory_regions)
        raise ConfigError(f"host memory node={node} addr={addr} count={count} {dtype} "
                          f"({nbytes} B) was not brought back; regions of this run: "
                          f"{asked or 'none'} (ask with run_scenario(..., regions=((node, "
                          f"addr, nbytes), ...)))")

    def handler_memory(self, ctx: "int | ExecutionContext") -> "np.ndarray":
        """Handler memory of an execution context after the run, for any worker count: ``ctx``
        is the context installed in the run's scenario (``Scenario.install`` returns it) or its
        index in ``scenario.contexts``."""
        i = ctx if isinstance(ctx, int) else next(
            (k for k, c in enumerate(self.handler_contexts) if c is ctx), None)
        if i is None:
            raise ConfigError(f"execution context {ctx!r} is not installed in this run's "
                              f"scenario; pass the object Scenario.install returned, or its index")
        if i not in self.handler_memories:
            raise ConfigError(f"execution context index {i} has no handler memory in this "
                              f"result; contexts with one: {sorted(self.handler_memories)}")
        return self.handler_memories[i]

    def nic(self, node: int | str) -> NicStats:
        """The stats of ``node``'s NIC (node id or host name)."""
        for n in self.nics:
            if n.node == node or (isinstance(node, str) and n.name == node):
                return n
        raise self._no_host(node, "nic")

    def host(self, node: int | str) -> HostStats:
        """The stats of ``node``'s host (node id or host name)."""
        for h in self.hosts:
            if h.node == node or (isinstance(node, str) and h.name == node):
                return h
        raise self._no_host(node, "host")

    def _no_host(self, node: int | str, what: str) -> ConfigError:
        hosts = ", ".join(f"{h.name} (node {h.node})" if h.name else str(h.node)
                          for h in self.hosts[:16])
        more = f", ... ({len(self.hosts)} in all)" if len(self.hosts) > 16 else ""
        return ConfigError(f"RunResult.{what}({node!r}): no such host in this result; hosts: "
                           f"{hosts or 'none'}{more}")

    def unfinished_hosts(self) -> list[HostStats]:
        """Hosts whose program did not run to its end (``waiting_for`` says where it stopped)."""
        return [h for h in self.hosts if not h.finished]

    def require_finished(self) -> "RunResult":
        """Return self, or raise ``RunIncompleteError`` naming each host program that did not
        finish and what it waits for: a run that ended with waiting hosts is not a success."""
        stuck = self.unfinished_hosts()
        if stuck:
            shown = "; ".join(f"host {h.label} {h.waiting_for or 'did not finish'}"
                              for h in stuck[:8])
            more = f"; and {len(stuck) - 8} more" if len(stuck) > 8 else ""
            raise RunIncompleteError(f"{len(stuck)} host program(s) did not finish by "
                                     f"t={self.end_time_ps} ps: {shown}{more}")
        return self

    def tables(self) -> RunTables:
        """Messages, links, NICs, hosts, switches (and the trace's spans, when traced) as
        pandas DataFrames, for notebooks; needs the ``pandas`` extra."""
        return run_tables(self)

    def totals(self) -> Totals:
        """Sums over every link, NIC and host."""
        return Totals(link_bytes=sum(l.tx_bytes for l in self.links),
                      pcie_bytes=sum(n.pcie_bytes for n in self.nics),
                      host_cpu_ps=sum(h.cpu_busy_ps for h in self.hosts),
                      hpu_busy_ps=sum(n.hpu_busy_ps for n in self.nics),
                      drops=sum(self.drops.values()))

    def tier_loads(self) -> list[TierLoad]:
        """Per tier of links (``LinkStats.tier``): mean and busiest utilisation, imbalance
        (max/mean bytes over its link directions) and deepest queue
        (``spin.results.records.TierLoad``)."""
        return tier_loads(self)

    def to_dict(self, include_wall: bool = True) -> dict[str, Any]:
        """Plain JSON-ready dict (int keys as strings), plus derived ``totals`` and ``tiers``."""
        d = {"schema_version": SCHEMA_VERSION,
             **asdict(replace(self, trace=None, handler_memories={}, handler_contexts=()))}
        for key in ("memory_regions", "trace", "handler_memories", "handler_contexts"):
            d.pop(key)
        d["totals"] = asdict(self.totals())
        d["tiers"] = [asdict(t) for t in self.tier_loads()]
        d["marks"] = {k: {str(n): t for n, t in v.items()} for k, v in self.marks.items()}
        d["host_memory_sha256"] = {str(n): h for n, h in self.host_memory_sha256.items()}
        if not include_wall:
            d.pop("wall")
        return d

    def to_json(self, include_wall: bool = True, **kw: Any) -> str:
        """``to_dict`` as JSON text (``kw`` go to ``json.dumps``)."""
        return json.dumps(self.to_dict(include_wall), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunResult":
        """Inverse of to_dict (JSON-decoded dicts have string keys); reads every schema
        version up to ``SCHEMA_VERSION`` and unversioned dicts of earlier releases."""
        d = dict(d)
        version = d.pop("schema_version", 0)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise ConfigError(f"result schema_version = {version!r}: this spin reads versions "
                              f"up to {SCHEMA_VERSION}; upgrade spin to read it")
        d.pop("totals", None)
        d.pop("tiers", None)
        d["messages"] = [_record(MessageRecord, m) for m in d["messages"]]
        d["links"] = [_record(LinkStats, l) for l in d["links"]]
        d["nics"] = [NicStats.from_dict(n) for n in d["nics"]]
        d["hosts"] = [_record(HostStats, h) for h in d["hosts"]]
        d["switches"] = [SwitchStats.from_dict(s) for s in d["switches"]]
        d["endpoints"] = [EndpointStats.from_dict(e) for e in d.get("endpoints", [])]
        d["marks"] = {k: {int(n): t for n, t in v.items()} for k, v in d["marks"].items()}
        d["host_memory_sha256"] = {int(n): h for n, h in d.get("host_memory_sha256", {}).items()}
        d.setdefault("wall", {})
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})   # `spin run --json` adds some

    @classmethod
    def merge(cls, parts: list["RunResult"]) -> "RunResult":
        """Combine the results of workers that each own a disjoint set of devices."""
        drops: dict[str, int] = {}
        marks: dict[str, dict[int, int]] = {}
        digests: dict[int, str] = {}
        posts: list[list[int]] = []
        regions: dict[tuple[int, int, int], bytes] = {}
        memories: dict[int, np.ndarray] = {}
        for p in parts:
            memories.update(p.handler_memories)
            posts += p.posts
            for k, v in p.drops.items():
                drops[k] = drops.get(k, 0) + v
            for label, per_node in p.marks.items():
                marks.setdefault(label, {}).update(per_node)
            digests.update(p.host_memory_sha256)
            regions.update(p.memory_regions)
        merged = cls(
            end_time_ps=max(p.end_time_ps for p in parts),
            events=sum(p.events for p in parts),
            packet_events=sum(p.packet_events for p in parts),
            messages=[m for p in parts for m in p.messages],
            links=[l for p in parts for l in p.links],
            nics=[n for p in parts for n in p.nics],
            hosts=[h for p in parts for h in p.hosts],
            switches=[s for p in parts for s in p.switches],
            drops=dict(sorted(drops.items())),
            marks={k: dict(sorted(v.items())) for k, v in sorted(marks.items())},
            host_memory_sha256=dict(sorted(digests.items())), posts=posts,
            memory_regions=regions,
            queue_samples=[q for p in parts for q in p.queue_samples],
            link_samples=[q for p in parts for q in p.link_samples],
            endpoints=[e for p in parts for e in p.endpoints],
            unlogged={k: sum(p.unlogged.get(k, 0) for p in parts)
                      for k in sorted({k for p in parts for k in p.unlogged})},
            handler_memories=dict(sorted(memories.items())),
            handler_contexts=parts[0].handler_contexts if parts else ())
        merged.pair_posts()
        merged.canonicalize()
        return merged

    def unlogged_note(self) -> str:
        """One line when the message log was full (what ``messages`` and ``posts`` miss), else
        empty: a flow missing from them was then not necessarily lost."""
        if not self.unlogged:
            return ""
        what = " and ".join(f"{n:,} {k}" for k, n in self.unlogged.items())
        return (f"message log full: {what} not logged (engine.log_messages rows each); raise "
                f"[engine] log_messages to see them")

    def pair_posts(self) -> None:
        """Give each received message the post time of its send, matched on (src, dst, qp,
        first PSN): exact even when lost messages leave gaps. Messages sent by handlers have no
        post."""
        from collections import defaultdict, deque
        self.posts.sort(key=lambda p: (p[0], p[1], p[2], p[4]))
        queues: dict[tuple[int, ...], deque] = defaultdict(deque)
        for src, dst, qp, _nbytes, t_post, *rest in self.posts:
            psn = rest[0] if rest else -1
            acked = rest[1] if len(rest) > 1 and rest[1] >= 0 else None
            queues[(src, dst, qp, psn)].append((t_post, acked))
        for m in sorted(self.messages, key=lambda m: (m.src, m.dst, m.qp, m.t_first_arrival_ps)):
            q = queues.get((m.src, m.dst, m.qp, m.first_psn))
            m.t_post_ps, m.t_acked_ps = q.popleft() if q else (None, None)

    def canonicalize(self) -> None:
        """Order every list by content so results compare equal however devices were split."""
        self.messages.sort(key=lambda m: (m.t_done_ps, m.dst, m.src, m.qp, m.t_first_arrival_ps))
        self.links.sort(key=lambda l: (l.link, l.from_device))
        self.nics.sort(key=lambda n: n.node)
        self.hosts.sort(key=lambda h: h.node)
        self.switches.sort(key=lambda s: s.name)
        self.queue_samples.sort()
        self.link_samples.sort()
        self.endpoints.sort(key=lambda e: e.node)

    def deterministic_digest(self) -> str:
        """Hash of everything except wall-clock figures: equal digests mean identical runs."""
        import hashlib
        return hashlib.sha256(self.to_json(include_wall=False, sort_keys=True).encode()).hexdigest()
