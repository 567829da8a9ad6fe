"""One engine for every switch test: the switch handler library (monitor, multicast, SwitchML
aggregation and its worker side) plus the NIC ping-pong and the timer probe, so the suite
compiles once (Numba caches it by source hash)."""
from __future__ import annotations

import numpy as np

from handlers.ping_pong import ping_pong_program
from handlers.switch_monitor import switch_monitor_program
from handlers.switch_multicast import switch_multicast_program
from handlers.switchml import switchml_switch_program
from handlers.switchml_worker import switchml_worker_program
from spin.handler import HandlerProgram
from spin.simulation import Scenario
from spin.wire import roce as W
from tests.timer_handlers import timer_probe_program

SWITCH_LIBRARY: list[HandlerProgram] = [
    switch_monitor_program(n_sources=64),
    switch_multicast_program(),
    ping_pong_program(reply_qp=2),
    switchml_switch_program(),
    switchml_worker_program(),
    timer_probe_program(),
]


def scenario(topology, **configs) -> Scenario:
    return Scenario(topology, engine_programs=SWITCH_LIBRARY, **configs)


def pattern(node: int, nbytes: int) -> np.ndarray:
    """Distinct bytes per sender, so misdelivered data cannot pass for the right data."""
    return ((np.arange(nbytes, dtype=np.int64) * 7 + node * 31 + 1) % 251).astype(np.uint8)


def parse(frame: bytes, check_icrc: bool = True) -> tuple[int, np.ndarray]:
    """(drop code, parsed fields) of a captured frame, ICRC verified."""
    out = np.zeros(W.NUM_PARSED_FIELDS, np.int64)
    buf = np.frombuffer(frame, np.uint8).copy()
    return int(W.parse_frame(buf, len(frame), check_icrc, out)), out
