"""Compiling prints one line saying what is compiled and how long it took; a cache hit and a
quiet run print nothing."""
import io

import numba
import pytest

from spin.assembly.compile_report import compile_progress
from spin.errors import HandlerCompileError

SUBJECT = "the handlers of programs 'shown_name'"


def _fresh_function():
    @numba.njit
    def add(a, b):
        return a + b
    return add


def test_a_compile_is_announced_with_its_duration():
    out, fn = io.StringIO(), _fresh_function()
    with compile_progress(SUBJECT, stream=out):
        assert fn(1, 2) == 3
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("spin: compiling the handlers of programs 'shown_name'")
    assert lines[-1].startswith("spin: compile done in ") and lines[-1].endswith(" s")
    assert len(lines) == 2


def test_nothing_is_printed_without_a_compile_or_when_quiet():
    out, fn = io.StringIO(), _fresh_function()
    fn(1, 2)
    with compile_progress(SUBJECT, stream=out):
        fn(3, 4)  # already compiled for these types
    with compile_progress(SUBJECT, quiet=True, stream=out):
        _fresh_function()(1.0, 2.0)
    assert out.getvalue() == ""


def test_a_failed_compile_says_so():
    out = io.StringIO()
    with pytest.raises(HandlerCompileError), compile_progress(SUBJECT, stream=out):
        _fresh_function()(1, 2)
        raise HandlerCompileError("stand-in for a failed compile")
    assert out.getvalue().splitlines()[-1].startswith("spin: compile failed after ")
