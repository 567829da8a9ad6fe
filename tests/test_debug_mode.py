"""Debug mode runs handlers as plain Python inside the compiled engine: print and tracebacks
with the failing line work, and results are the same as compiled."""
import traceback

import numpy as np
import pytest

from spin.config import EngineConfig
from spin.errors import HandlerCompileError, HandlerError
from spin.handler import ExecutionContext, HandlerProgram
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

from . import debug_handlers as h


def _scenario(payload, nbytes=5000, debug=False):
    # host-memory digests on: debug and compiled runs must leave identical memory
    sc = Scenario(Topology.pair(), engine=EngineConfig(host_memory_digests=True))
    ctx = sc.install(ExecutionContext(1, HandlerProgram("dbg", payload=payload,
                                                        memory=h.MEMORY), match_qp=1))
    sc.host_memory.append((0, 0, bytes(range(256)) * 20))
    sc.host_program(0).send(1, nbytes, qp=1)
    return (sc.with_debug_handlers() if debug else sc), ctx


def test_debug_mode_prints_and_gives_the_compiled_results(capsys):
    compiled, ctx_c = _scenario(h.sum_and_print)
    sim_c = Simulation(compiled)
    res_c = sim_c.run()
    compiled_out = capsys.readouterr().out
    debug, ctx_d = _scenario(h.sum_and_print, debug=True)
    sim_d = Simulation(debug)
    res_d = sim_d.run()
    debug_out = capsys.readouterr().out
    expected = int(np.frombuffer(bytes(range(256)) * 20, np.uint8)[:5000].astype(np.int64).sum())
    assert int(sim_d.handler_memory(ctx_d)[0]) == expected
    np.testing.assert_array_equal(sim_d.handler_memory(ctx_d), sim_c.handler_memory(ctx_c))
    assert res_d.deterministic_digest() == res_c.deterministic_digest()
    assert debug_out.count("debug handler saw psn") == 5   # 5 packets of 1 KiB MTU
    assert compiled_out.count("debug handler saw psn") == 5   # Numba's print, same lines


def test_debug_mode_names_the_failing_line():
    sc, _ = _scenario(h.index_past_the_end, debug=True)
    with pytest.raises(HandlerError) as info:
        Simulation(sc).run()
    msg = str(info.value)
    line = next(i for i, text in enumerate(open(h.__file__), 1) if "the failing line" in text)
    assert f"debug_handlers.py:{line}: `mem[i] = 1" in msg, msg
    assert "index_past_the_end" in msg and "IndexError" in msg
    assert msg.index("IndexError") < msg.index("packet:")   # the reason before the hex dump
    cause = "".join(traceback.format_exception(info.value.__cause__))
    assert f'debug_handlers.py", line {line}' in cause


def test_a_compiled_handler_error_names_its_line_by_replaying_in_debug_mode():
    sc, _ = _scenario(h.index_past_the_end)
    with pytest.raises(HandlerError) as info:
        Simulation(sc).run()
    msg = str(info.value)
    assert "debug_handlers.py:" in msg and "`mem[i] = 1" in msg and "(values: i=4)" in msg
    assert "(found by replaying the run as plain Python)" in msg


def test_without_a_replay_a_compiled_handler_error_suggests_debug_mode(monkeypatch):
    from spin.runtime import simulation
    monkeypatch.setattr(simulation, "REPLAY_MAX_EVENTS", 0)   # a failure deep into a long run
    sc, _ = _scenario(h.index_past_the_end)
    with pytest.raises(HandlerError, match="debug=True"):
        Simulation(sc).run()


def test_a_float_return_is_refused_compiled_and_in_debug_mode():
    sc, _ = _scenario(h.returns_a_float)
    with pytest.raises(HandlerCompileError, match="returns float64"):
        Simulation(sc)
    sc, _ = _scenario(h.returns_a_float, debug=True)
    with pytest.raises(HandlerError, match="returned 1.5"):
        Simulation(sc).run()


def test_a_wrap_that_compiled_code_never_does_is_named_in_debug_mode():
    """``total += pkt[i]`` widens to int64 compiled but stays uint8 in numpy: debug mode stops
    at that line instead of returning a different result."""
    compiled, ctx = _scenario(h.sum_without_int)
    sim = Simulation(compiled)
    sim.run()
    expected = int(np.frombuffer(bytes(range(256)) * 20, np.uint8)[:5000].astype(np.int64).sum())
    assert int(sim.handler_memory(ctx)[0]) == expected
    sc, _ = _scenario(h.sum_without_int, debug=True)
    with pytest.raises(HandlerError, match=r"overflow.*debug_handlers.py:\d+: `total \+= pkt\[i\] .*int\(\.\.\.\)"):
        Simulation(sc).run()
