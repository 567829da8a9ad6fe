"""What a traced run records (``Scenario.trace``): part of the scenario's description, read by
the state builder (the engine's trace flags and buffer) and by ``spin.results.timeline``."""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.trace_kinds import TRACE_HEADROOM, TRACE_LINKS, TRACE_ON
from ..errors import ConfigError

MIN_BUFFER_RECORDS = 8 * TRACE_HEADROOM


@dataclass(frozen=True)
class TraceOptions:
    """What ``Scenario.trace`` records: handlers, DMA, host steps and messages always; every
    frame's serialisation on every link only with ``links`` (one record per frame per hop).
    ``buffer_records`` rows are drained to Python whenever they are nearly full."""

    links: bool = False
    buffer_records: int = 1 << 16

    def __post_init__(self) -> None:
        if self.buffer_records < MIN_BUFFER_RECORDS:
            raise ConfigError(f"TraceOptions.buffer_records = {self.buffer_records}: must be >= "
                              f"{MIN_BUFFER_RECORDS} (the engine stops to drain it "
                              f"{TRACE_HEADROOM} records before it is full)")

    @property
    def flags(self) -> int:
        """The engine's ``st.sc[SC_TRACE]`` value."""
        return TRACE_ON | (TRACE_LINKS if self.links else 0)
