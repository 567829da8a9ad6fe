"""The compiled engine is cached across runs and shared by every handler set; an edited handler
is compiled alone and never served stale code."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HANDLER_MODULE = textwrap.dedent("""
    import numpy as np
    from spin.api import SUCCESS
    from spin.handler import HandlerProgram

    FACTOR = {factor}

    def count_payload(ctx, pkt, mem):
        mem[0] += FACTOR
        return SUCCESS

    def program():
        return HandlerProgram("count", payload=count_payload, memory=np.zeros(1, np.int64))
""")

DRIVER = textwrap.dedent("""
    import sys
    from spin.handler import ExecutionContext
    from spin.simulation import Scenario, Simulation
    from spin.topology import Topology
    import cache_probe_handlers as h

    sc = Scenario(Topology.pair())
    ctx = sc.install(ExecutionContext(1, h.program(), match_qp=1))
    sc.host_program(0).send(1, 3000, qp=1)
    sim = Simulation(sc)
    sim.run()
    print(sim.engine.__name__ + ':' + sim.handlers.modules[0].__name__, int(sim.handler_memory(ctx)[0]))
""")


def _run(tmp: Path) -> tuple[str, int]:
    root = Path(__file__).resolve().parents[1]   # this checkout, whatever spin is installed
    env = dict(os.environ, SPIN_CACHE_DIR=str(tmp / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp), str(root)]))
    out = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True,
                         timeout=300, cwd=tmp)
    assert out.returncode == 0, out.stderr[-3000:]
    name, value = out.stdout.split()
    return name, int(value)


def _cache_files(tmp: Path) -> set[str]:
    return {p.name for p in (tmp / "cache").rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.timeout(1500)  # the first of three fresh processes compiles the engine cold
def test_cached_engine_is_reused_and_never_stale(tmp_path):
    module = tmp_path / "cache_probe_handlers.py"
    module.write_text(HANDLER_MODULE.format(factor=3))
    name1, v1 = _run(tmp_path)
    assert v1 == 3 * 3          # three packets of 1 KiB MTU, FACTOR=3
    files = _cache_files(tmp_path)
    name2, v2 = _run(tmp_path)
    assert (name2, v2) == (name1, v1)
    assert _cache_files(tmp_path) == files  # nothing recompiled: every function came from cache
    module.write_text(HANDLER_MODULE.format(factor=7))
    name3, v3 = _run(tmp_path)
    assert v3 == 3 * 7 and name3 != name1
    engine1, handler1 = name1.split(":")
    engine3, handler3 = name3.split(":")
    assert engine3 == engine1 and handler3 != handler1   # one engine for every handler set
    new = _cache_files(tmp_path) - files
    assert new and all(f.startswith(handler3) for f in new), sorted(new)  # only the handler
