"""Link failures, repairs, degraded links and optical re-shapes at a virtual time, as plain data.

A fault takes effect physically at its time (frames queued on or sent into a dead link are
lost and counted as ``link_down``); switches route around it ``route_convergence_ns`` later
(detection plus table update), with tables computed for the topology as it is then. A
re-shape (``swap``) re-pairs the far ends of two links, as an optical circuit switch does when it
rewires the fabric around a failure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError

FAULT_KINDS = ("down", "up", "rate", "swap")


@dataclass(frozen=True)
class LinkFault:
    """One change to the fabric: ``kind`` is down, up, rate (new ``rate_gbps``) or swap (link
    ``link``'s far end is exchanged with link ``other``'s)."""

    at_ns: float
    kind: Literal["down", "up", "rate", "swap"]
    link: int
    other: int = -1
    rate_gbps: int = 0

    def check(self, n_links: int) -> None:
        if self.kind not in FAULT_KINDS:
            raise ConfigError(f"fault kind={self.kind!r}; valid kinds: {', '.join(FAULT_KINDS)}")
        if not (self.at_ns >= 0 and self.at_ns < float("inf")):
            raise ConfigError(f"fault at_ns={self.at_ns}; must be a finite time >= 0")
        for name, v in (("link", self.link),) + ((("other", self.other),)
                                                 if self.kind == "swap" else ()):
            if not 0 <= v < n_links:
                raise ConfigError(f"{self.kind} fault {name}={v}; valid links are 0..{n_links - 1}")
        if self.kind == "swap" and self.other == self.link:
            raise ConfigError(f"swap fault: link={self.link} swapped with itself")
        if self.kind == "rate" and not 0 < self.rate_gbps <= 1600:
            raise ConfigError(f"rate fault rate_gbps={self.rate_gbps}; valid range 1..1600")
