"""The engine programs of the testing-kit, host-reduce and data-check tests: the docs'
max-reduce example handler, so all of them (and the docs tests) share one compiled engine."""
from examples.max_reduce import max_reduce_program

KIT_PROGRAMS = [max_reduce_program(n_elems=4, n_contributors=1)]
