"""Virtual-time and size units. Time is integer picoseconds everywhere inside the engine.

A 64 B frame at 400 Gb/s lasts 64 * 8 / 400e9 s = 1.28 ns = 1280 ps, so picoseconds keep every
standard link rate (100/200/400/800 Gb/s) exact in integers.
"""
from __future__ import annotations

import re

PS = 1
NS = 1_000
US = 1_000_000
MS = 1_000_000_000
S = 1_000_000_000_000

# Ethernet wire overhead not present in captured frame bytes: preamble+SFD (8 B),
# inter-frame gap (12 B), FCS (4 B).
ETHERNET_WIRE_OVERHEAD_BYTES = 24


def ns(x: float) -> int:
    return int(round(x * NS))


def us(x: float) -> int:
    return int(round(x * US))


def ms(x: float) -> int:
    return int(round(x * MS))


def serialization_ps(nbytes: int, rate_gbps: int) -> int:
    """Time to put ``nbytes`` on a ``rate_gbps`` link, rounded up to whole picoseconds."""
    return (nbytes * 8000 + rate_gbps - 1) // rate_gbps


def fmt_time_ps(t_ps: int) -> str:
    """Human-readable time with its unit."""
    if t_ps >= S:
        return f"{t_ps / S:.3f} s"
    if t_ps >= MS:
        return f"{t_ps / MS:.3f} ms"
    if t_ps >= US:
        return f"{t_ps / US:.3f} µs"
    if t_ps >= NS:
        return f"{t_ps / NS:.3f} ns"
    return f"{t_ps} ps"


_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
               "gb": 1000**3, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def parse_size(text: str) -> int:
    """'64MiB', '4KiB', '1MB', '4096' -> bytes."""
    from .errors import ConfigError
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else None
    if not m or unit not in _SIZE_UNITS:
        raise ConfigError(f"--size {text!r}: expected a byte count such as 4096, 256KiB, 64MiB "
                          f"or 1MB; units: {', '.join(u for u in _SIZE_UNITS if u)}")
    return int(m.group(1)) * _SIZE_UNITS[unit]
