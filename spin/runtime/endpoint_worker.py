"""The engine worker that hosts endpoints: the owner of the device at the far end of each
attached host's link. The host itself is local to no worker (it has no emulated NIC): frames
the engine sends it leave through the outbox addressed to this very worker, and go to the
program instead of a peer."""
from __future__ import annotations

import numpy as np

from ..engine import state as S
from .fabric_workers import EngineWorker
from ..parallel.batch import FrameBatch
from .simulation import CapturedFrames
from .endpoint_bridge import EndpointBridge


class EndpointHostWorker(EngineWorker):
    """``EngineWorker`` plus one ``EndpointBridge`` per endpoint attached next to its devices."""

    def __init__(self, spec, worker_id: int, n_workers: int) -> None:
        mine = [e for e in spec.endpoints if spec.owner[e.node] == worker_id]
        self.bridges: list[EndpointBridge] = []
        try:
            for att in mine:          # listen first: a program may connect while we compile
                self.bridges.append(EndpointBridge(att))
            super().__init__(spec, worker_id, n_workers)
            self._by_node = {b.att.node: b for b in self.bridges}
            for b in self.bridges:
                b.attach(self.sim)
            self._port_dev = self.check.port_dev
        except BaseException as exc:
            self.close(f"the fabric failed to start: {type(exc).__name__}: {exc}")
            raise

    def describe(self) -> str:
        hosts = ", ".join(f"{b.spec.host} ({b.spec.mode}, {b.spec.url})" for b in self.bridges)
        return f"{super().describe()}; endpoints {hosts}"

    def lookahead_ps(self) -> int:
        return min([super().lookahead_ps()] + [b.att.lookahead_ps for b in self.bridges])

    def next_event_ps(self) -> int:
        return min([super().next_event_ps()] + [b.next_bound_ps() for b in self.bridges])

    def run_until(self, t_end_ps: int) -> dict[int, FrameBatch]:
        for b in self.bridges:
            b.before_window(t_end_ps)
        out = super().run_until(t_end_ps)
        mine = out.pop(self.worker_id, None)
        if mine is not None:
            self._hold(mine)
        for b in self.bridges:
            b.after_window(t_end_ps)
        return out

    def _hold(self, batch: FrameBatch) -> None:
        """Hand the engine's frames for attached hosts to their bridges (by device)."""
        for node, b in self._by_node.items():
            sel = np.nonzero(batch.dst_device == node)[0]
            if len(sel):
                b.hold(batch.arrival_ps[sel], batch.order_key[sel], batch.length[sel],
                       batch.frames[sel])

    def result(self) -> dict:
        for b in self.bridges:   # the hosts' direction of captured links, for the pcaps
            part = b.captured_frames()
            if part is not None:
                self.sim.captured = CapturedFrames.concat([self.sim.captured, part])
        d = super().result()
        topo = self.spec.scenario.topology
        d["endpoints"], drops = [], dict(d["drops"])
        for b in self.bridges:
            s = b.stats(topo)
            d["endpoints"].append(s["endpoint"])
            d["links"].append(s["link"])
            for reason, n in s["endpoint"]["dropped"].items():
                drops[f"endpoint_{reason}"] = drops.get(f"endpoint_{reason}", 0) + n
        d["drops"] = dict(sorted(drops.items()))
        d["end_time_ps"] = max([d["end_time_ps"]] + [b.last_arrival_ps for b in self.bridges])
        self.close("the run ended", int(self.sim.st.sc[S.SC_NOW]))
        return d

    def close(self, reason: str, t_ps: int = 0) -> None:
        for b in self.bridges:
            b.close(reason, t_ps)
