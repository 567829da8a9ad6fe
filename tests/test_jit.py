"""spin.jit.njit: calls from compiled code compile the callee once per general argument type,
not once per constant (the engine had 75 such duplicates among 263 compilations), with the same
results as numba.njit."""
import numba
import numpy as np
from numba.core import types

from spin.jit import GeneralDispatcher, general_type, njit


@njit(cache=False)
def _scale(x, k):
    return x * k


@njit(cache=False)
def _calls_with_constants(a):
    return _scale(a, 2) + _scale(a, 3) + _scale(a, np.int32(4))


@numba.njit(cache=False)
def _plain_scale(x, k):
    return x * k


@numba.njit(cache=False)
def _plain_calls_with_constants(a):
    return _plain_scale(a, 2) + _plain_scale(a, 3) + _plain_scale(a, np.int32(4))


def test_constants_and_narrow_ints_share_one_compilation():
    assert isinstance(_scale, GeneralDispatcher)
    assert _calls_with_constants(5) == 5 * 2 + 5 * 3 + 5 * 4
    assert len(_scale.signatures) == 1
    assert _scale.signatures[0] == (types.int64, types.int64)
    # plain numba.njit: a compilation per literal value and per integer width
    assert _plain_calls_with_constants(5) == 45
    assert len(_plain_scale.signatures) == 3


def test_general_type():
    assert general_type(types.IntegerLiteral(7)) == types.int64
    assert general_type(types.BooleanLiteral(True)) == types.boolean
    assert general_type(types.int32) == types.int64
    assert general_type(types.uint32) == types.uint32       # unsigned: kept (no sign change)
    assert general_type(types.float32) == types.float32
    arr = types.Array(types.int32, 1, "C")
    assert general_type(arr) == arr


def test_python_calls_are_unchanged():
    assert _scale(3, 4) == 12
    assert _scale(np.float64(1.5), 2.0) == 3.0
