"""A process that is a spin command starts with one OpenBLAS thread unless the user chose a
count, and with the cyclic collector on again, what its imports made frozen (spin.startup)."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, os, sys
import spin.cli
from spin.startup import single_blas_thread
single_blas_thread()
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.parametrize("given, expected", [(None, "1"), ("4", "4")])
def test_one_blas_thread_unless_the_user_set_a_count(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=120, check=True)
    assert out.stdout.strip() == expected


def test_the_blas_thread_count_is_left_alone_once_numpy_is_loaded(monkeypatch):
    import numpy  # noqa: F401  (loaded: OpenBLAS has read its count)
    from spin.startup import single_blas_thread
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    single_blas_thread()
    assert "OPENBLAS_NUM_THREADS" not in os.environ


@pytest.mark.parametrize("was_on", [True, False])
def test_the_collector_is_held_off_then_back_as_it_was_with_the_imports_frozen(was_on):
    from spin.startup import imports_paused
    (gc.enable if was_on else gc.disable)()
    try:
        with imports_paused():
            assert not gc.isenabled()
            made = [[] for _ in range(10)]
        assert gc.isenabled() == was_on
        assert gc.get_freeze_count() >= len(made)
    finally:
        gc.unfreeze()
        gc.enable()


# Commands and modules that compile nothing start without Numba (importing it takes 0.2 s): a
# scenario's description (configs, topologies, workloads, the Scenario) is plain data.
NO_NUMBA = """
import contextlib, io, sys
import spin.wire, spin.wire.headers, spin.wire.drops, spin.topologies
import spin.config, spin.describe.scenario, spin.workloads    # a scenario's description
assert "numba" not in sys.modules, "importing declarations loaded Numba"
from spin.cli import main
for argv in ({commands}):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(argv)
        except SystemExit as exc:    # --help
            status = exc.code
    assert status in (0, None), (argv, status)
    assert "numba" not in sys.modules, f"spin {{' '.join(argv)}} loaded Numba"
print("ok")
"""


def test_commands_that_compile_nothing_do_not_import_numba():
    commands = [["topo", "fat_tree:k=4"], ["topo", "--help"], ["lb", "--help"],
                ["allreduce", "--help"], ["run", "--help"], ["train", "--help"]]
    code = NO_NUMBA.format(commands=", ".join(repr(c) for c in commands))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_the_wire_package_still_offers_its_compiled_half():
    import spin.wire as wire
    from spin.wire import build_frame, parse, roce
    assert wire.parse_frame is roce.parse_frame and build_frame is roce.build_frame
    assert callable(parse) and {"parse_frame", "build_frame", "ETH"} <= set(dir(wire))
    assert all(getattr(wire, name) is not None for name in wire.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        wire.nope  # noqa: B018
