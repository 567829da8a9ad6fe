"""One handler library for the whole suite, and the cost model the tests derive bounds from.

Every scenario is built with ``engine_programs=LIBRARY`` so all tests share one compiled engine
(compiled once, ~20 s, then cached on disk by source hash). Programs are interchangeable for the
engine when handlers, memory dtype and rank agree, so the instances below only fix those.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import pytest

from handlers.accumulate import accumulate_program
from handlers.aggregate import aggregate_program
from handlers.broadcast import broadcast_program
from handlers.copy_from_host import copy_from_host_program
from handlers.copy_to_host import copy_to_host_program
from handlers.datatypes import datatypes_program
from handlers.echo import echo_program
from handlers.filtering import filtering_program
from handlers.histogram import histogram_program
from handlers.ping_pong import ping_pong_program
from handlers.reduce import reduce_program
from handlers.reorder import reorder_program
from spin.config import HostConfig, NicConfig
from spin.handler import HandlerCost, HandlerProgram
from spin.units import NS

LIBRARY: list[HandlerProgram] = [
    ping_pong_program(reply_qp=2),
    reduce_program(n_elems=4, n_contributors=2),
    copy_to_host_program(host_base=0),
    copy_from_host_program(src_base=0, block_bytes=8, reply_qp=0, reply_base=0, hpus=1),
    aggregate_program(host_addr=0, expected_messages=1),
    histogram_program(host_addr=0, expected_messages=1),
    filtering_program({}, host_base=0, slots=1),
    reorder_program(host_base=0, total_messages=1, slot_bytes=8, window=1),
    broadcast_program(children=[], total_bytes=0),
    accumulate_program("add_int32", mtu_bytes=8, hpus=1),
    datatypes_program(blocklen=8, stride=8),
    echo_program(reply_qp=2),
]


@dataclass(frozen=True)
class CostModel:
    """Virtual-time figures (ps) computed from the configs, as the engine charges them."""

    nic: NicConfig = field(default_factory=NicConfig)
    host: HostConfig = field(default_factory=HostConfig)

    @property
    def cycle_ps(self) -> int:
        return round(1_000_000 / self.nic.hpu_clock_mhz)

    @property
    def o_send_ps(self) -> int:
        return round(self.host.send_overhead_ns * NS)

    @property
    def o_recv_ps(self) -> int:
        return round(self.host.recv_overhead_ns * NS)

    @property
    def pcie_latency_ps(self) -> int:
        return round(self.nic.pcie_latency_ns * NS)

    @property
    def header_match_ps(self) -> int:
        """Matching a message's first packet to its execution context."""
        return self.nic.match_header_cycles * self.cycle_ps

    def pcie_transfer_ps(self, nbytes: int) -> int:
        return math.ceil(nbytes * 1000 / self.nic.pcie_rate_gbytes_per_s)

    def host_stream_ps(self, nbytes: int) -> int:
        """Host CPU time to stream ``nbytes`` through a load/op/store loop (HostConfig)."""
        return math.ceil(nbytes * self.host.reduce_ps_per_byte)

    def handler_ps(self, fn: Callable, nbytes: int = 0, extra_cycles: int = 0) -> int:
        """Declared cost of one invocation of ``fn`` on ``nbytes`` of payload."""
        cost: HandlerCost = fn.__spin_cost__
        cycles = cost.cycles + math.ceil(cost.cycles_per_byte * nbytes) + extra_cycles
        return cycles * self.cycle_ps


@pytest.fixture(scope="session")
def library() -> list[HandlerProgram]:
    return LIBRARY


@pytest.fixture(scope="session")
def model() -> CostModel:
    return CostModel()
