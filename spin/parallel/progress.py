"""Progress over virtual time: a tqdm bar showing simulated time reached and events/s.

The bar's position is virtual time in ns (the only clock that means anything to a run); with no
end time it just counts. quiet=True makes every call a no-op, so library code can always report.
"""

from __future__ import annotations

import time

from spin.parallel.program import INF_PS
from spin.units import NS, fmt_time_ps


class Progress:
    def __init__(self, until_ps: int | None, quiet: bool = True, desc: str = "virtual time") -> None:
        self._bar = None
        self._t0 = time.perf_counter()
        self._last_t_ps = 0
        if quiet:
            return
        from tqdm import tqdm

        total = None if until_ps is None or until_ps >= INF_PS else max(1, until_ps // NS)
        # delay: runs shorter than a couple of seconds never show a bar; disable=None: none
        # either where stderr is no terminal (a batch job's log, a launcher's pipe)
        self._bar = tqdm(total=total, desc=desc, unit="ns", dynamic_ncols=True, leave=False,
                         delay=2.0, disable=None)

    def update(self, t_ps: int, events: int = 0, rounds: int = 0) -> None:
        """Report the global virtual time reached (a lower bound) and the events processed so far."""
        if self._bar is None or t_ps >= INF_PS or t_ps <= self._last_t_ps:
            return
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
