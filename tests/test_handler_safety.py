"""A handler's mistakes stop the run with a HandlerError naming the handler, its file and line,
and the packet: never a crash, a corrupted frame or a silently wrong byte (default config)."""
from __future__ import annotations

import pytest

from spin.errors import HandlerError
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from tests.safety_handlers import safety_programs

PROGRAMS = safety_programs()


def _run(name: str) -> str:
    sc = Scenario(Topology.star(2), engine_programs=PROGRAMS)
    program = next(p for p in PROGRAMS if p.name == name)
    sc.install(ExecutionContext(1, program, match_qp=3))
    sc.host_program(0).send(1, 600, qp=3)
    with pytest.raises(HandlerError) as info:
        Simulation(sc).run()
    return str(info.value)


@pytest.mark.parametrize("name,fn", [("oob_memory", "oob_memory_payload"),
                                     ("oob_packet", "oob_packet_payload")])
def test_out_of_bounds_index_is_named(name, fn) -> None:
    msg = _run(name)
    assert f"payload handler '{fn}'" in msg and "safety_handlers.py:" in msg
    assert "IndexError" in msg and "qp 3" in msg and "src node 0" in msg


def test_return_value_that_is_no_return_code_is_named() -> None:
    msg = _run("bad_return")
    assert "'bad_return_payload'" in msg and "not a sPIN return code" in msg


def test_non_byte_buffer_to_send_is_refused() -> None:
    msg = _run("wide_buffer")
    assert "'wide_buffer_payload'" in msg and "uint8" in msg
