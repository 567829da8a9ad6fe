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
        d["totals"] = self.totals()
        d["marks"] = {k: {str(n): t for n, t in v.items()} for k, v in self.marks.items()}
        if not include_wall:
            d.pop("wall")
        return d

    def to_json(self, include_wall: bool = True, **kw: Any) -> str:
        return json.dumps(self.to_dict(include_wall), **kw)

    def deterministic_digest(self) -> str:
        """Hash of everything except wall-clock figures: equal digests mean identical runs."""
        import hashlib
        return hashlib.sha256(self.to_json(include_wall=False, sort_keys=True).encode()).hexdigest()
