"""Progress over virtual time: a tqdm bar showing simulated time reached and events/s.

The bar's position is virtual time in ns (the only clock that means anything to a run); with no
end time it just counts. quiet=True makes every call a no-op, so library code can always report.
The bar starts once a run has lasted ``BAR_DELAY_S`` on a terminal, and tqdm is imported only
then: a short run, or one whose stderr is no terminal (a batch job's log, a launcher's pipe,
where tqdm would show nothing either), never loads it.
"""

from __future__ import annotations

import sys
import time

from spin.parallel.program import INF_PS
from spin.units import NS, fmt_time_ps

BAR_DELAY_S = 2.0   # runs shorter than this never show a bar


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):   # no such method, or a closed stream
        return False


class Progress:
    def __init__(self, until_ps: int | None, quiet: bool = True, desc: str = "virtual time") -> None:
        self._bar = None
        self._t0 = time.perf_counter()
        self._last_t_ps = 0
        self._total = None if until_ps is None or until_ps >= INF_PS else max(1, until_ps // NS)
        self._desc = desc
        self._wanted = not quiet and _is_terminal(sys.stderr)
        self.setup_s = 0.0   # wall time spent starting the bar: not the run's, for who times it

    def _start_bar(self, now: float) -> None:
        from tqdm import tqdm
        self._bar = tqdm(total=self._total, desc=self._desc, unit="ns", dynamic_ncols=True,
                         leave=False)
        self._bar.start_t -= now - self._t0   # elapsed and rates count from the run's start
        self.setup_s += time.perf_counter() - now

    def update(self, t_ps: int, events: int = 0, rounds: int = 0) -> None:
        """Report the global virtual time reached (a lower bound) and the events processed so far."""
        if not self._wanted or t_ps >= INF_PS or t_ps <= self._last_t_ps:
            return
        if self._bar is None:
            now = time.perf_counter()
            if now - self._t0 < BAR_DELAY_S:
                return
            self._start_bar(now)
        self._bar.update(t_ps // NS - self._last_t_ps // NS)
        self._last_t_ps = t_ps
        wall = max(time.perf_counter() - self._t0, 1e-9)
        self._bar.set_postfix_str(
            f"t={fmt_time_ps(t_ps)} events={events} ({events / wall:,.0f}/s) rounds={rounds}", refresh=False
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
