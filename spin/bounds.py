"""The ranges every number of a configuration or scenario file must lie in, in one place.

Virtual time is integer picoseconds in int64 (about 106 days); table sizes and counts index
engine arrays of int32; addresses and sizes are int64 byte offsets. A number outside these
ranges would overflow somewhere deep in a run (an ``OverflowError`` traceback, a wrapped
timestamp, a 931 GiB allocation), so fields are declared with the helpers below and a value
outside is refused when the file is read, naming the field, the value and the valid range.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from .errors import ConfigError

INT64_MAX = 2**63 - 1
# The latest time, and the longest timeout, interval or gap, a scenario may give: 1000 s of
# virtual time (10^15 ps). Sums of a few thousand such times still fit int64 picoseconds.
MAX_TIME_PS = 10**15
MAX_TIME_NS = MAX_TIME_PS / 1_000
MAX_TIME_US = MAX_TIME_PS / 1_000_000
# The largest count or table size (engine tables are indexed with int32).
MAX_COUNT = 2**31 - 1
# The largest byte size, address or window (1 PiB; any real one is far below).
MAX_BYTES = 2**50
# The longest wall-clock wait a run may be given (joins, silences, heartbeats): one day. ZeroMQ
# takes timeouts as int32 milliseconds (24.8 days), where a longer one was an OverflowError.
MAX_WAIT_S = 86_400.0


def time_ns(default: Any = ..., *, positive: bool = False) -> Any:
    """A field of nanoseconds: finite, >= 0 (> 0 with ``positive``), at most MAX_TIME_NS."""
    low = {"gt": 0} if positive else {"ge": 0}
    return Field(default, **low, le=MAX_TIME_NS, allow_inf_nan=False)


def time_us(default: Any = ..., *, positive: bool = False) -> Any:
    """A field of microseconds, bounded as ``time_ns``."""
    low = {"gt": 0} if positive else {"ge": 0}
    return Field(default, **low, le=MAX_TIME_US, allow_inf_nan=False)


def count(default: Any = ..., *, low: int = 1, high: int = MAX_COUNT) -> Any:
    """A field counting things (frames, slots, messages, repeats): ``low..high``."""
    return Field(default, ge=low, le=high)


def size_bytes(default: Any = ..., *, low: int = 0) -> Any:
    """A field of bytes (a size, an address, a buffer, a window): ``low..MAX_BYTES``."""
    return Field(default, ge=low, le=MAX_BYTES)


def check_int(name: str, value: Any, low: int, high: int, unit: str = "") -> int:
    """``value`` as an int in ``low..high``, else a ConfigError naming ``name``, the value and
    the range (for numbers read outside a pydantic model: command-line options, imports)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise ConfigError(f"{name} = {shown(value)}: expected an integer {low}..{high}{unit}")
    if not low <= value <= high:
        raise ConfigError(f"{name} = {shown(value)}: must be {low}..{high}{unit}")
    return int(value)


def check_float(name: str, value: Any, low: float, high: float, unit: str = "",
                low_open: bool = False) -> float:
    """``value`` as a finite float in ``low..high`` (``low`` excluded with ``low_open``)."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name} = {shown(value)}: expected a number") from None
    below = v <= low if low_open else v < low
    if not math.isfinite(v) or below or v > high:
        sign = ">" if low_open else ">="
        raise ConfigError(f"{name} = {shown(value)}: must be finite, {sign} {low:g} and "
                          f"<= {high:g}{unit}")
    return v


def check_wait_s(name: str, value: Any) -> float:
    """A wall-clock wait in seconds: finite, > 0 and at most MAX_WAIT_S."""
    return check_float(name, value, 0.0, MAX_WAIT_S, " s", low_open=True)


def field_range(field: Any) -> str:
    """``"; valid: LOW..HIGH"`` from the bounds a pydantic field declares ("" if not both)."""
    bounds = {name: getattr(m, name) for m in (getattr(field, "metadata", None) or ())
              for name in ("ge", "gt", "le", "lt") if getattr(m, name, None) is not None}
    low = bounds.get("ge", bounds.get("gt"))
    high = bounds.get("le", bounds.get("lt"))
    return f"; valid: {low:,}..{high:,}" if low is not None and high is not None else ""


def shown(value: Any, limit: int = 40) -> str:
    """A value for a message, at most ``limit`` characters (a 5,000-digit integer is not printed:
    Python refuses to convert one to text)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 96:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
