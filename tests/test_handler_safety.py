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
    assert "IndexError" in msg and "qp 3" in msg and "src host 'h0' (node 0)" in msg
    assert msg.index("IndexError") < msg.index("; packet:") < msg.index("frame (")


def test_a_compiled_failure_names_its_line_and_values_by_replay() -> None:
    msg = _run("oob_memory")
    line = "`mem[mem.shape[0] + 1000] = 1        # far past the handler memory`"
    assert "IndexError: index is out of bounds at " in msg and line in msg
    assert "(found by replaying the run as plain Python)" in msg
    assert msg.index(line) < msg.index("; packet:")


def test_return_value_that_is_no_return_code_is_named() -> None:
    msg = _run("bad_return")
    assert "'bad_return_payload'" in msg and "returned 42, which is not a sPIN return code" in msg


def test_non_byte_buffer_to_send_is_refused() -> None:
    msg = _run("wide_buffer")
    assert "'wide_buffer_payload'" in msg and "uint8" in msg


# --- the handler's context holds only its own invocation (restricted context) -----------------
def test_other_nodes_host_memory_is_out_of_reach() -> None:
    """ctx.host_mem is the handler's own host only: an index past it is an IndexError, not a
    write into the next node's memory."""
    msg = _run("other_host")
    assert "'other_host_payload'" in msg and "IndexError" in msg
    msg = _run("other_host_dma")
    assert "'other_host_dma_payload'" in msg and "host memory access out of bounds" in msg


def test_own_host_memory_is_written() -> None:
    sc = Scenario(Topology.star(3), engine_programs=PROGRAMS)
    program = next(p for p in PROGRAMS if p.name == "own_host")
    ec = ExecutionContext(1, program, match_qp=3)
    sc.install(ec)
    sc.host_program(0).send(1, 600, qp=3)
    sim = Simulation(sc)
    sim.run()
    host1 = sim.host_memory(1)
    assert int(host1[:8].view("<i8")[0]) == 0x0102030405060708
    assert not sim.host_memory(2)[:8].any()            # the neighbour is untouched
    assert sim.handler_memory(ec)[0] == host1.shape[0]  # its view spans exactly its own host


@pytest.mark.parametrize("name,words", [
    ("forged_multicast", "a NIC handler issued a command NICs do not know"),
    ("forged_count", "command count was overwritten"),
    ("forged_send", "did not stage"),
])
def test_commands_written_by_hand_are_checked(name, words) -> None:
    """The pending-command table is the handler's own: entries it forges are refused when the
    handler ends, with its name, instead of reaching engine tables."""
    msg = _run(name)
    assert f"'{name}_payload'" in msg and words in msg, msg
