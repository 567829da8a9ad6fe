"""The coordinator's view of each worker, and how its reports name one.

A failure report must let someone at a cluster's console find the process: the worker id, its
launcher rank, its pid, its host with the address its peers reach it at, the devices it owns,
and what the run was waiting for when it went wrong. ``ConnectionWatch`` notices a worker whose
connections closed (its process died) from the control socket's monitor events, long before
its heartbeats' silence would.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message


@dataclass
class Member:
    """The coordinator's view of one worker."""

    worker_id: int
    local: bool
    rank: int | None = None  # its rank in a launched job (rank 0 coordinates)
    token: str = ""
    proc: subprocess.Popen | None = None
    stderr_path: str = ""
    identity: bytes = b""
    hb_identity: bytes = b""
    pid: int = 0
    host: str = ""
    data_endpoint: str = ""
    description: str = ""
    state: str = "spawned"  # spawned -> joined -> setup -> ready -> done
    command: tuple[str, ...] = ()  # the launcher's command that starts it elsewhere (host file)
    launched_on: str = ""  # ... on this host
    lost_at: float = 0.0  # when its connections closed (0: open, or reopened since)
    last_beat: float = 0.0
    beat: dict = field(default_factory=dict)
    outcome: Any = None  # its WorkerOutcome, once it sent its result

    def host_label(self) -> str:
        """The host it said it runs on, with the address its peers reach it at."""
        addr = self.data_endpoint.rsplit(":", 1)[0].removeprefix("tcp://").strip("[]")
        host = self.host or self.launched_on
        if addr and addr not in (host, "0.0.0.0", "::"):
            return f"{host} ({addr})" if host else addr
        return host

    def who(self) -> str:
        """'worker 1 (rank 2, pid 77 on node7 (10.0.0.7); devices h4, s1)'."""
        where = (f"rank {self.rank}, " if self.rank is not None else "") + f"pid {self.pid}"
        if not self.local and (host := self.host_label()):
            where += f" on {host}"
        return f"worker {self.worker_id} ({where}; {self.description or 'program not built yet'})"

    def doing(self, started: bool) -> str:
        """What it was doing, and so what the run waits for from it."""
        if self.state in ("spawned", "joined"):
            return "before it had its setup; the run waits for every worker to join"
        if self.state == "setup":
            return "while building its program; the run waits for it to be ready"
        if not started:
            return "after its program was built; the run waits for every worker to be ready"
        return (f"in round {self.beat.get('rounds', 0)} at virtual time "
                f"{self.beat.get('t_ps', 0)} ps; its peers wait for its next round message")


def stopped_text(members: list[Member], why: str, started: bool) -> str:
    """A run stopped from outside (SIGTERM): which worker's connections had closed before (a
    launcher ends the job when one of its tasks dies), else what the run was waiting for."""
    lost = sorted((m for m in members if m.lost_at and m.state != "done"), key=lambda m: m.lost_at)
    if lost:
        m = lost[0]
        return (f"{why} {time.monotonic() - m.lost_at:.1f} s after {m.who()} closed its "
                f"connections ({m.doing(started)}): its process ended (killed or crashed) or its "
                f"host went down")
    missing = [m.worker_id for m in members if m.state in ("spawned", "joined")]
    if missing:
        return f"{why} while waiting for workers {missing} to join"
    if not started:
        return f"{why} while the workers built their programs"
    live = [m for m in members if m.state != "done"]
    if not live:
        return f"{why} after every worker had sent its result"
    slow = min(live, key=lambda m: m.beat.get("rounds", 0))
    return (f"{why} in round {slow.beat.get('rounds', 0)} at virtual time "
            f"{slow.beat.get('t_ps', 0)} ps, while the workers exchanged round messages (the "
            f"slowest: {slow.who()})")


class ConnectionWatch:
    """Which worker's connections to the control socket closed, and when.

    The coordinator tells it the socket (fd) each worker's messages arrive on (zmq's SRCFD);
    the socket's monitor then names the worker whose connection closed. A live worker
    reconnects within zmq's reconnect interval and its next message clears the mark.
    """

    def __init__(self, router: zmq.Socket) -> None:
        self._router = router
        self.socket = router.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._fds: dict[int, int] = {}

    def reset(self) -> None:
        self._fds = {}

    def saw(self, fd: int, m: Member) -> None:
        """A message of ``m`` arrived on ``fd``: its connection is open."""
        if fd >= 0:
            self._fds[fd] = m.worker_id
        m.lost_at = 0.0

    def connected(self, m: Member) -> bool:
        """Whether a connection ``m``'s messages arrived on is still open."""
        return m.worker_id in self._fds.values()

    def read(self, members: list[Member]) -> None:
        """Mark the workers whose connections closed since the last read (never blocks)."""
        while True:
            try:
                event = recv_monitor_message(self.socket, zmq.NOBLOCK)
            except zmq.Again:
                return
            if event["event"] == zmq.EVENT_DISCONNECTED:
                wid = self._fds.pop(int(event["value"]), None)
                if wid is not None and wid < len(members):
                    m = members[wid]
                    if m.state != "done" and not m.lost_at:
                        m.lost_at = time.monotonic()

    def close(self) -> None:
        self._router.disable_monitor()
        self.socket.close(0)
