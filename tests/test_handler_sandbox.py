"""Handlers may not leave the sandbox of a NIC core: object mode, ctypes and recursion are
refused when the program is made, naming the handler, file, line and reason."""
from __future__ import annotations

import numpy as np
import pytest

from spin.errors import HandlerCompileError
from spin.handler import HandlerProgram
from tests import sandbox_handlers as H


@pytest.mark.parametrize("fn, line, reason", [
    (H.objmode_payload, "with numba.objmode():", "uses numba.objmode"),
    (H.aliased_objmode_payload, "with quiet_mode():", "uses numba.objmode (as quiet_mode)"),
    (H.ctypes_payload, '_system(b"true")', "calls _system, a C function reached through ctypes"),
    (H.recursive_payload, "return recursive_payload(ctx, pkt, mem)",
     "recursion (recursive_payload -> recursive_payload)"),
    (H.deep_helper_payload, "return 1 + _depth(n - 1)",
     "recursion (_depth -> _depth)"),
    (H.mutual_payload, "return _ping(n - 1)", "recursion (_ping -> _pong -> _ping)"),
    (H.raw_memory_payload, "mem[0] = array_at(8, 1, np.int64)[0]",
     "uses array_at, the engine's raw-memory helper"),
    (H.engine_internal_payload, "mem[0] = handler_abi.array_at(8, 1, np.int64)[0]",
     "uses array_at, the engine's raw-memory helper"),
    (H.engine_function_payload, "push_event(mem, 0, 0, 0, 0, 0, 0)",
     "uses push_event of spin.engine.heap, an internal of the engine"),
])
def test_a_handler_leaving_the_sandbox_is_refused_with_its_line(fn, line, reason) -> None:
    with pytest.raises(HandlerCompileError) as exc:
        HandlerProgram("p", payload=fn, memory=np.zeros(2, np.int64))
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith(f"payload handler '{fn.__name__}' of program 'p' is refused: ")
    assert "sandbox_handlers.py:" in text and f"`{line}`" in text and reason in text


def test_helpers_called_twice_are_not_recursion() -> None:
    program = HandlerProgram("p", payload=H.fine_payload)
    assert program.payload is H.fine_payload


@pytest.mark.parametrize("cycles, per_byte, message", [
    (10**30, 0.0, "cycles must be an integer 0..60,000,000,000"),
    (-5, 0.0, "cycles must be an integer 0..60,000,000,000"),
    (True, 0.0, "cycles must be an integer"),
    (40, float("inf"), "cycles_per_byte must be a number 0..1,000,000"),
    (40, -0.5, "cycles_per_byte must be a number 0..1,000,000"),
])
def test_a_handler_cost_out_of_range_is_refused_at_the_decorator(cycles, per_byte, message):
    """cycles=10**30 once passed here and ended in an OverflowError while the state was built,
    after the handler had compiled."""
    from spin.errors import ConfigError
    from spin.handler import handler
    with pytest.raises(ConfigError, match=message):
        handler(cycles, per_byte)


def test_a_function_of_ones_own_named_like_an_engine_helper_is_not_refused():
    """Only the engine's raw-memory helpers are refused, not a name: a handler's own
    array_at is its own code."""
    from spin.handler_sandbox import find_escape
    namespace: dict = {"__name__": "users_module"}
    exec("def array_at(i):\n    return i\n\n"
         "def payload(ctx, pkt, mem):\n    mem[0] = array_at(1)\n    return 0\n", namespace)
    assert find_escape(namespace["payload"]) is None
