"""spin.engine.state_ref: the engine state passed to jitted functions as one pointer."""
import re
from collections import namedtuple

import numba as nb
import numpy as np

from spin.engine.state_ref import StateRef, state_ref

Wide = namedtuple("Wide", [f"a{i}" for i in range(60)])


@nb.njit(_nrt=False)
def _bump(st, i, v):
    st.a0[i] += v
    st.a59[i, 1] = st.a0[i] * 2
    return st.a30.shape[0]


@nb.njit(_nrt=False)
def _entry(st, n):
    ref = state_ref(st)
    total = 0
    for i in range(n):
        total += _bump(ref, i % 4, i)
    return total


def _wide():
    return Wide(*[np.zeros(4, np.int64) if i % 2 == 0 else np.zeros((4, 2), np.int32)
                  for i in range(60)])


def test_reads_and_writes_go_to_the_callers_arrays():
    st = _wide()
    assert _entry(st, 8) == 8 * 4
    assert st.a0.tolist() == [0 + 4, 1 + 5, 2 + 6, 3 + 7]
    assert st.a59[:, 1].tolist() == [8, 12, 16, 20]


def test_a_call_passes_one_word_whatever_the_width():
    st = _wide()
    _entry(st, 1)
    (sig,) = [s for s in _bump.signatures if isinstance(s[0], StateRef)]
    ir = _bump.inspect_llvm(sig)
    params = [m.group(2) for m in re.finditer(r"^define [^\n]*@(\w+)\(([^\n]*)", ir, re.MULTILINE)
              if "_bump" in m.group(1) and "cpython" not in m.group(1)]
    # return slot, exception info, the state pointer, i, v (by value, the 60 arrays: 480 words)
    assert [len(re.findall(r"%[\w.]+", p)) for p in params] == [5]
