"""Structured, JSON-serialisable results of a run. Everything is virtual time or counts, except
the ``wall`` section, which holds wall-clock figures and is never compared between runs."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class MessageRecord:
    src: int
    dst: int
    qp: int
    bytes: int
    t_post_ps: int | None      # when the sender's host (or a handler) posted it
    t_first_arrival_ps: int    # first packet at the receiving NIC
    t_done_ps: int             # delivered (host notified) or handled by the NIC
    handled_by_nic: bool

    @property
    def completion_ps(self) -> int | None:
        return None if self.t_post_ps is None else self.t_done_ps - self.t_post_ps


@dataclass
class RunResult:
    end_time_ps: int
    events: int
    packet_events: int
    messages: list[MessageRecord]
    links: list[dict[str, Any]]
    nics: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    switches: list[dict[str, Any]]
    drops: dict[str, int]
    marks: dict[str, dict[int, int]]
    host_memory_sha256: dict[int, str] = field(default_factory=dict)
    posts: list[list[int]] = field(default_factory=list)   # [src, dst, qp, bytes, t_post_ps]
    # host-memory regions asked for by (node, addr, nbytes); bytes, so kept out of to_dict()
    memory_regions: dict[tuple[int, int, int], bytes] = field(default_factory=dict, repr=False)
    wall: dict[str, float] = field(default_factory=dict)

    def mark(self, label: str, node: int) -> int:
        """Virtual time (ps) at which ``node``'s host program passed ``mark(label)``."""
        return self.marks[label][node]

    def totals(self) -> dict[str, int]:
        return {
            "link_bytes": sum(l["tx_bytes"] for l in self.links),
            "pcie_bytes": sum(n["dma_write_bytes"] + n["dma_read_bytes"] for n in self.nics),
            "host_cpu_ps": sum(h["cpu_busy_ps"] for h in self.hosts),
            "hpu_busy_ps": sum(n["hpu_busy_ps"] for n in self.nics),
            "drops": sum(self.drops.values()),
        }

    def to_dict(self, include_wall: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d.pop("memory_regions")
        d["totals"] = self.totals()
        d["marks"] = {k: {str(n): t for n, t in v.items()} for k, v in self.marks.items()}
        d["host_memory_sha256"] = {str(n): h for n, h in self.host_memory_sha256.items()}
        if not include_wall:
            d.pop("wall")
        return d

    def to_json(self, include_wall: bool = True, **kw: Any) -> str:
        return json.dumps(self.to_dict(include_wall), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunResult":
        """Inverse of to_dict (JSON-decoded dicts have string keys)."""
        d = dict(d)
        d.pop("totals", None)
        d["messages"] = [MessageRecord(**m) for m in d["messages"]]
        d["marks"] = {k: {int(n): t for n, t in v.items()} for k, v in d["marks"].items()}
        d["host_memory_sha256"] = {int(n): h for n, h in d.get("host_memory_sha256", {}).items()}
        d.setdefault("wall", {})
        return cls(**d)

    @classmethod
    def merge(cls, parts: list["RunResult"]) -> "RunResult":
        """Combine the results of workers that each own a disjoint set of devices."""
        drops: dict[str, int] = {}
        marks: dict[str, dict[int, int]] = {}
        digests: dict[int, str] = {}
        posts: list[list[int]] = []
        for p in parts:
            posts += p.posts
            for k, v in p.drops.items():
                drops[k] = drops.get(k, 0) + v
            for label, per_node in p.marks.items():
                marks.setdefault(label, {}).update(per_node)
            digests.update(p.host_memory_sha256)
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
            host_memory_sha256=dict(sorted(digests.items())), posts=posts)
        merged.pair_posts()
        merged.canonicalize()
        return merged

    def pair_posts(self) -> None:
        """Give each received message the post time of its send: per (src, dst, qp), the k-th
        message to arrive is the k-th one posted (a QP delivers in order)."""
        from collections import defaultdict, deque
        self.posts.sort(key=lambda p: (p[0], p[1], p[2], p[4]))
        queues: dict[tuple[int, int, int], deque] = defaultdict(deque)
        for src, dst, qp, _nbytes, t_post in self.posts:
            queues[(src, dst, qp)].append(t_post)
        for m in sorted(self.messages, key=lambda m: (m.src, m.dst, m.qp, m.t_first_arrival_ps)):
            q = queues.get((m.src, m.dst, m.qp))
            m.t_post_ps = q.popleft() if q else None

    def canonicalize(self) -> None:
        """Order every list by content so results compare equal however devices were split."""
        self.messages.sort(key=lambda m: (m.t_done_ps, m.dst, m.src, m.qp, m.t_first_arrival_ps))
        self.links.sort(key=lambda l: (l["link"], l["from"]))
        self.nics.sort(key=lambda n: n["node"])
        self.hosts.sort(key=lambda h: h["node"])
        self.switches.sort(key=lambda s: s["name"])

    def deterministic_digest(self) -> str:
        """Hash of everything except wall-clock figures: equal digests mean identical runs."""
        import hashlib
        return hashlib.sha256(self.to_json(include_wall=False, sort_keys=True).encode()).hexdigest()
