"""A wall-clock watchdog for handlers (and port-selection schemes compiled apart) that never
return, and for Ctrl-C while one runs.

A handler is native code inside the engine call: Python cannot interrupt it, and a signal
handler only runs once the call returns, so an endless loop in a handler would hang the run (and
ignore Ctrl-C) forever. The engine releases the GIL while it runs; one watchdog thread per
process watches the engine's current-handler slots of the simulation that is inside the engine.
When one handler invocation has run for longer than ``EngineConfig.handler_timeout_s`` of wall
clock, or Ctrl-C arrived and the engine did not return within a second, it prints an error
naming the handler and the packet and ends the process: the only way to stop native code. In a
multi-worker run the worker ends, and the coordinator stops the run naming it.

The thread and the signal wake-up socket are process resources (like signal handlers), created
once, on the first engine call that runs with a timeout.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading
import time

from ..engine import state as S

EXIT_HANDLER_TIMEOUT = 3
EXIT_INTERRUPTED = 130
POLL_S = 0.05
SIGNAL_GRACE_S = 1.0


class _Watchdog:
    def __init__(self) -> None:
        self.sim = None              # the Simulation inside the engine, or None
        self.timeout_s = 0.0
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        if threading.current_thread() is threading.main_thread():
            self._own_wakeup_fd()
        threading.Thread(target=self._watch, name="spin-handler-watchdog", daemon=True).start()

    def _own_wakeup_fd(self) -> None:
        """Learn of SIGINT even while the main thread is in native code."""
        r, w = socket.socketpair()
        r.setblocking(False)
        w.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        except ValueError:
            previous = None
        if previous == -1:
            self._wake_r, self._wake_w = r, w
            return
        if previous is not None:   # someone else (asyncio) owns it: give it back
            signal.set_wakeup_fd(previous)
        r.close()
        w.close()

    def _signalled(self) -> bool:
        if self._wake_r is None:
            time.sleep(POLL_S)
            return False
        ready, _, _ = select.select([self._wake_r], [], [], POLL_S)
        if not ready:
            return False
        try:
            data = self._wake_r.recv(64)
        except BlockingIOError:
            return False
        return signal.SIGINT in data

    def _watch(self) -> None:
        seen, since, interrupted_at = None, 0.0, None
        while True:
            signalled = self._signalled()
            sim = self.sim
            now = time.monotonic()
            if sim is None:
                seen, interrupted_at = None, None
                continue
            if signalled and interrupted_at is None:
                interrupted_at = now
            cur, sc = sim.st.cur, sim.st.sc
            if not cur[S.CUR_ACTIVE] and not cur[S.CUR_LB_RUNNING] \
                    and not cur[S.CUR_TR_RUNNING]:
                seen = None
                continue
            # a handler invocation, a port-selection scheme's call or a transport's compiled
            # apart (no event completes while it runs)
            key = (id(sim), int(sc[S.SC_HANDLER_CALLS]), int(sc[S.SC_EVENTS]))
            if key != seen:
                seen, since = key, now
            elif self.timeout_s > 0 and now - since > self.timeout_s:
                self._die(sim, f"did not return within EngineConfig.handler_timeout_s = "
                               f"{self.timeout_s:g} s of wall-clock time (an endless loop?)",
                          EXIT_HANDLER_TIMEOUT)
            if interrupted_at is not None and now - interrupted_at > SIGNAL_GRACE_S:
                self._die(sim, "was running when the run was interrupted (Ctrl-C)",
                          EXIT_INTERRUPTED)

    @staticmethod
    def _die(sim, why: str, code: int) -> None:
        try:
            if sim.st.cur[S.CUR_LB_RUNNING]:
                what = sim.describe_running_scheme(why)
            elif sim.st.cur[S.CUR_TR_RUNNING] and not sim.st.cur[S.CUR_ACTIVE]:
                what = sim.describe_running_transport(why)
            else:
                what = sim.describe_running_handler(why)     # the reason before the frame dump
        except Exception as exc:  # noqa: BLE001 - the process ends anyway: say what we can
            what = f"a handler or scheme (details unavailable: {exc}) {why}"
        sys.stderr.write(f"spin: HandlerError: {what}; stopping the process\n")
        sys.stderr.flush()
        os._exit(code)


_WATCHDOG: list[_Watchdog] = []   # the process's watchdog, created on first use


class EngineCall:
    """``with EngineCall(sim, timeout_s):`` around a call into the engine."""

    def __init__(self, sim, timeout_s: float):
        self.sim, self.timeout_s = sim, timeout_s

    def __enter__(self) -> None:
        if self.timeout_s <= 0:
            return
        if not _WATCHDOG:
            _WATCHDOG.append(_Watchdog())
        dog = _WATCHDOG[0]
        dog.timeout_s = self.timeout_s
        dog.sim = self.sim

    def __exit__(self, *exc) -> None:
        if _WATCHDOG:
            _WATCHDOG[0].sim = None
