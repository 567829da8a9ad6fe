"""Transports from outside spin are compiled apart from the engine (``spin.transport_api``).

spin's own RC and UE, registered again under other names, run compiled apart: every result is
the same as compiled into the engine, under random loss, spraying and trimming. A transport in
a package of its own (a temporary folder with an entry point of group ``spin.transports``) runs
with its own connection column, per-NIC column, counter and parameter, on 1 and 2 workers, and
leaves the engine's sources (so its cache) as they were: nothing but the transport compiles. A
transport that fails is named with its function, file and NIC; one that does not compile with
its line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import spin.config as config
import spin.transports as transports
from spin.caches import project_source_digest
from spin.engine import state as S
from spin.engine.codegen import engine_module_source
from spin.errors import HandlerCompileError, HandlerError, StateLayoutError
from spin.registry import Registry
from spin.simulation import Simulation
from spin.transports import TR_APART, TransportOption
from tests.test_transports import _assert_exact, _scenario

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def registered():
    """``rc_apart`` and ``ue_apart``: spin's own modules registered as transports from outside,
    and two broken ones, for this module's tests."""
    options = (TransportOption("rc_apart", "RC compiled apart", "nic_emulator.transports.rc"),
               TransportOption("ue_apart", "UE compiled apart", "nic_emulator.transports.ue"),
               TransportOption("zz_bad_index", "writes past its table",
                               "tests.transport_apart_broken"),
               TransportOption("zz_no_compile", "adds a string to an int",
                               "tests.transport_apart_nocompile"),
               TransportOption("zz_recursion", "recurses", "tests.transport_apart_escape"),
               TransportOption("zz_objmode", "runs Python", "tests.transport_apart_objmode"),
               TransportOption("zz_ghost", "its module is missing", "tests.no_such_transport"))
    extended = Registry("transport", (*transports.TRANSPORTS.entries, *options),
                        others=transports.TRANSPORTS.others)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config, "TRANSPORTS", extended)
        mp.setattr(transports, "TRANSPORTS", extended)
        yield extended


def _result(sc):
    sim = Simulation(sc)
    return sim, sim.run()


@pytest.mark.parametrize("kind, options", [
    ("rc", dict(loss=0.01)),
    ("ue", dict(entropy="spray", loss=0.01)),
    ("ue", dict(entropy="reps", trim=True, incast=True)),
])
def test_a_shipped_transport_compiled_apart_gives_the_same_results(registered, kind, options):
    inside, apart = _scenario(kind, **options), _scenario(f"{kind}_apart", **options)
    sim_in, got_in = _result(inside)
    sim_apart, got_apart = _result(apart)
    assert sim_apart.transport is not None and sim_in.transport is None
    assert set(sim_apart.st.dev[:4, S.D_TRANSPORT].tolist()) == {TR_APART}
    _assert_exact(apart, sim_apart, got_apart)
    assert got_apart.to_dict(include_wall=False) == got_in.to_dict(include_wall=False)
    assert sum(n.retransmissions + n.naks_sent for n in got_apart.nics) > 0   # it did resend


def test_a_failing_transport_is_named_with_its_function_file_and_nic(registered):
    with pytest.raises(HandlerError) as info:
        _result(_scenario("zz_bad_index"))
    message = str(info.value)
    assert message.startswith("transport 'zz_bad_index': tests.transport_apart_broken.tx_step ("), \
        message
    assert "transport_apart_broken.py:" in message and "on NIC 'h" in message
    assert "failed with IndexError" in message and "\n" not in message


def test_a_transport_that_does_not_compile_is_named_with_its_line(registered):
    with pytest.raises(HandlerCompileError) as info:
        _result(_scenario("zz_no_compile"))
    message = str(info.value)
    assert message.startswith("transport 'zz_no_compile' (tests.transport_apart_nocompile) does "
                              "not compile at "), message
    line = next(i for i, text in enumerate(
        (ROOT / "tests/transport_apart_nocompile.py").read_text().splitlines(), 1)
        if '"spin" + ' in text)
    assert f"transport_apart_nocompile.py:{line}:" in message


def test_a_transport_whose_module_is_missing_is_one_line(registered):
    from spin.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^transport 'zz_ghost': its module "
                                          r"'tests.no_such_transport' cannot be imported: "
                                          r"ModuleNotFoundError: No module named "
                                          r"'tests.no_such_transport'$"):
        _result(_scenario("zz_ghost"))


@pytest.mark.parametrize("kind, message", [
    ("zz_recursion", r"transport 'zz_recursion' \(tests.transport_apart_escape.tx_step\) is "
     r"refused: .*transport_apart_escape.py:\d+: `_deeper\(st, dev, now, depth - 1\)`: "
     r"recursion \(_deeper -> _deeper\): transports run on a bounded core stack"),
    ("zz_objmode", r"transport 'zz_objmode' \(tests.transport_apart_objmode.tx_step\) is "
     r"refused: .*transport_apart_objmode.py:\d+: .*uses numba.objmode: a transport runs on"),
])
def test_a_transport_leaving_the_nics_sandbox_is_refused_before_it_compiles(registered, kind,
                                                                              message):
    with pytest.raises(HandlerCompileError, match=message):
        _result(_scenario(kind))


# --- a transport from a package of its own ------------------------------------------------------

_DECLARES = '''
"""The toy transport's registration and what it owns."""
from pydantic import BaseModel, ConfigDict, Field

from spin.engine.columns import Declares
from spin.transport_api import own_columns
from spin.transports import TransportOption

TRANSPORT = TransportOption("toy", "open loop that counts its turns", "spin_toy.transport",
                            ("spin_toy.declares",))


class ToyParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    stamp: int = Field(7, ge=0)


PARAMS = ToyParams
DECLARES = Declares(
    owner="spin_toy.transport",
    conn=[("TOY_STAMP", "the stamp parameter plus the sending NIC")],
    dev=[("TOY_LAST_PS", "time of the latest turn")],
    ntr=[("TOY_TURNS", "transmit turns taken")],
    trp=[("TOY_STAMP", "the stamp")],
    fill=lambda tc, env: {"TOY_STAMP": tc.table("toy").stamp},
)
COLUMNS = own_columns(DECLARES)
'''

_TRANSPORT = '''
"""Open loop, plus a connection column, a NIC column, a counter and a parameter of its own."""
from nic_emulator.transports import open_loop as base
from nic_emulator.transports.connections import ROLE_TX, connection
from spin.engine import state as S

from .declares import COLUMNS as C

carries, admit, find_message = base.carries, base.admit, base.find_message
accepted, on_control, on_trimmed, on_timeout = (base.accepted, base.on_control,
                                                base.on_trimmed, base.on_timeout)


def tx_step(st, dev, now):
    if st.dev[dev, S.D_TXQ_N] > 0:
        st.apart_dev[dev, C.ntr.TOY_TURNS] += 1
        st.apart_dev[dev, C.dev.TOY_LAST_PS] = now
        c = connection(st, dev, 1 - dev, 1, ROLE_TX)
        st.apart_conn[c, C.conn.TOY_STAMP] = st.apart_params[C.params.TOY_STAMP] + dev
    base.tx_step(st, dev, now)
'''

_RUN = '''
import json, sys
from spin.caches import project_source_digest
from spin.engine import state as S
from spin.engine import state as S
from spin.engine.codegen import engine_module_source
from spin.fabric import run_scenario
from spin.scenario_file import load_scenario
from spin.simulation import Simulation

sc, _ = load_scenario(sys.argv[1])
sim = Simulation(sc)
result = sim.run()
two = run_scenario(sc, workers=2, timeout_s=600)
print(json.dumps({
    "kinds": [int(sim.st.dev[d, S.D_TRANSPORT]) for d in range(2)],
    "turns": [n.own_counters for n in result.nics],
    "last_ps": sim.st.apart_dev[:2, 0].tolist(),
    "stamps": sorted(int(v) for v in sim.st.apart_conn[:, 0] if v),
    "param": sim.st.apart_params.tolist(),
    "delivered": sorted((m.src, m.dst, m.bytes) for m in result.messages),
    "finished": all(h.finished for h in result.hosts),
    "same_on_two_workers": two.to_dict(include_wall=False) == result.to_dict(include_wall=False),
    "engine": engine_module_source()[0],
    "sources": project_source_digest(),
}))
'''

def pair_scenario(kind: str, table: str, key: str, value: int, back: bool) -> str:
    """A TOML scenario on two hosts with transport ``kind`` and ``[nic.transport.<table>]``
    setting ``key``: h0 writes 4 KiB to h1, and with ``back`` h1 writes 2 KiB back, each
    waiting for the other's."""
    ops = (['{op = "send", dst = 1, nbytes = 4096, qp = 1}, '
            '{op = "wait_recv", qp = 1, count = 1}',
            '{op = "send", dst = 0, nbytes = 2048, qp = 1}, '
            '{op = "wait_recv", qp = 1, count = 1}'] if back else
           ['{op = "send", dst = 1, nbytes = 4096, qp = 1}',
            '{op = "wait_recv", qp = 1, count = 1}'])
    programs = "".join(f"\n[[host_program]]\nnode = {n}\nops = [{o}]\n"
                       for n, o in enumerate(ops))
    return (f'[topology]\nkind = "pair"\n\n[engine]\nmtu_bytes = 1024\n\n[nic.transport]\n'
            f'kind = "{kind}"\n\n[nic.transport.{table}]\n{key} = {value}\n{programs}')


_SCENARIO = pair_scenario("toy", "toy", "stamp", 1000, back=True)


def toy_package(tmp_path: Path, declares: str = _DECLARES) -> Path:
    """The toy transport's package and its metadata (entry point ``toy``) in ``tmp_path``."""
    pkg = tmp_path / "spin_toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "declares.py").write_text(declares)
    (pkg / "transport.py").write_text(_TRANSPORT)
    dist = tmp_path / "spin_toy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spin-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[spin.transports]\ntoy = spin_toy.declares:TRANSPORT\n")
    return tmp_path


def _python(tmp_path: Path, code: str, *args: str, timeout: int = 300):
    """``code`` in a fresh interpreter that sees the toy package, with the session's caches."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(900)
def test_a_transport_from_a_package_of_its_own_runs_apart_with_its_own_state(tmp_path: Path):
    toy_package(tmp_path)
    (tmp_path / "toy.toml").write_text(_SCENARIO)
    proc = _python(tmp_path, _RUN, str(tmp_path / "toy.toml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["kinds"] == [TR_APART, TR_APART]
    assert got["param"] == [1000]
    assert got["turns"] == [{"toy_turns": 4}, {"toy_turns": 2}]   # one per 1 KiB packet sent
    assert all(t > 0 for t in got["last_ps"])
    assert got["stamps"] == [1000, 1001]     # its parameter plus the NIC, by its own code
    assert got["delivered"] == [[0, 1, 4096], [1, 0, 2048]]
    assert got["finished"] is True and got["same_on_two_workers"] is True
    # installed, it changed nothing the engine is compiled from: no engine compiled for it
    assert got["engine"] == engine_module_source()[0]
    assert got["sources"] == project_source_digest()
    assert "compiling the engine" not in proc.stderr


@pytest.mark.parametrize("change, message", [
    (("spin_toy.declares\",)", "spin_toy.declaration\",)"),
     "transport 'toy': declaration module 'spin_toy.declaration' is missing"),
    (("(\"TOY_LAST_PS\", \"time of the latest turn\")", "(\"TOY_STAMP\", \"again\")"),
     None),
    (("conn=[(\"TOY_STAMP\"", "conn=[(\"TOY_LAST_PS\", \"x\"), (\"TOY_LAST_PS\""),
     "table 'apart_conn': column 'TOY_LAST_PS' declared by spin_toy.transport is already "
     "declared by spin_toy.transport"),
    (("owner=\"spin_toy.transport\"", "owner=\"spin_toy.transprot\""),
     "table 'apart_conn': columns from TOY_STAMP on are declared by 'spin_toy.transprot', "
     "which names no importable module"),
])
def test_a_bad_declaration_is_named_when_its_tables_are_laid_out(tmp_path, change, message):
    toy_package(tmp_path, _DECLARES.replace(*change))
    proc = _python(tmp_path, "from spin.transport_api import own_transport_layout as o; "
                             "print(o('toy').conn.width)")
    if message is None:   # the same name in another of its tables is no clash
        assert proc.returncode == 0 and proc.stdout.split() == ["1"], proc.stderr[-2000:]
        return
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"spin.errors.StateLayoutError: {message}"), proc.stderr[-2000:]


def test_entry_points_are_read_only_where_some_package_names_the_group(tmp_path, monkeypatch):
    """A start skips importlib.metadata when no metadata folder on sys.path names the group;
    a folder that does, or a zip it cannot look into, sends it to importlib.metadata."""
    from spin.caches import TRANSPORT_ENTRY_POINTS, _may_publish
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    assert not _may_publish(TRANSPORT_ENTRY_POINTS)
    assert _may_publish("console_scripts")
    toy_package(tmp_path)
    assert _may_publish(TRANSPORT_ENTRY_POINTS)
    zipped = tmp_path / "bundle.zip"
    zipped.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert _may_publish(TRANSPORT_ENTRY_POINTS)


def test_own_columns_number_each_table_from_zero():
    from spin.engine.columns import Declares
    from spin.transport_api import own_columns
    cols = own_columns(Declares("spin.transport_api", conn=[("A", "a"), ("B", 2, "b")],
                                dev=[("X", "x")], ntr=[("N", "n")],
                                trp=[("P", "p")], fill=lambda tc, env: {"P": 1}))
    assert (cols.conn.A, cols.conn.B, cols.dev.X, cols.ntr.N, cols.params.P) == (0, 1, 0, 1, 0)
    with pytest.raises(StateLayoutError, match="must be an UPPER_CASE identifier"):
        own_columns(Declares("spin.transport_api", conn=[("lower", "x")]))


# --- a transport named by import path -----------------------------------------------------------

_BY_PATH = pair_scenario("tests.transport_apart_path", "counting", "step", 3, back=False)


def test_a_transport_named_by_import_path_runs_apart_with_its_own_table(tmp_path):
    from spin.scenario_file import load_scenario
    path = tmp_path / "by_path.toml"
    path.write_text(_BY_PATH)
    sc, _ = load_scenario(path)
    assert sc.nic.transport.kind == "tests.transport_apart_path"
    assert sc.nic.transport.table("counting").step == 3
    sim, result = _result(sc)
    assert [n.own_counters for n in result.nics] == [{"turns": 12}, {"turns": 0}]   # 4 packets
    assert [(m.src, m.dst, m.bytes) for m in result.messages] == [(0, 1, 4096)]


@pytest.mark.parametrize("kind, message", [
    ("tests.no_such_module:TRANSPORT", "nic.transport.kind = 'tests.no_such_module:TRANSPORT': "
     "importing 'tests.no_such_module' failed: ModuleNotFoundError"),
    ("tests.transport_apart_path:NOT_A_TRANSPORT", "tests.transport_apart_path.NOT_A_TRANSPORT "
     "is a str; a transport by import path names a spin.transports.TransportOption"),
    ("tests.transport_apart_path:MISSING", "tests.transport_apart_path.MISSING is missing"),
    ("reliable", "unknown transport; valid choices: none, rc, ue"),
])
def test_a_bad_transport_kind_is_one_line(kind, message):
    from spin.config import TransportConfig
    from spin.errors import ConfigError
    with pytest.raises((ConfigError, ValueError)) as info:
        TransportConfig(kind=kind)
    text = str(info.value)
    assert message in text, text
    if kind == "reliable":
        assert "or a transport of your own by import path ('package.module:TRANSPORT')" in text


_ENDLESS = '''
from spin.config import EngineConfig, NicConfig
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
sc = Scenario(Topology.pair(),
              nic=NicConfig.make(transport={"kind": "tests.transport_apart_endless"}),
              engine=EngineConfig(handler_timeout_s=1.0))
sc.host_program(0).send(1, 4096, qp=1)
Simulation(sc, quiet=True).run()
'''


def test_a_transport_that_never_returns_stops_the_run_naming_it():
    """The handlers' wall-clock watchdog covers transports compiled apart: the process ends
    with the transport, its function and the NIC named."""
    from spin.runtime.watchdog import EXIT_HANDLER_TIMEOUT
    r = subprocess.run([sys.executable, "-c", _ENDLESS], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == EXIT_HANDLER_TIMEOUT, r.stderr[-2000:]
    assert ("spin: HandlerError: transport 'tests.transport_apart_endless': "
            "tests.transport_apart_endless.tx_step (") in r.stderr, r.stderr[-2000:]
    assert "on NIC 'h0'" in r.stderr
    assert "did not return within EngineConfig.handler_timeout_s = 1 s" in r.stderr


@pytest.mark.parametrize("fill, message", [
    ("lambda tc, env: {'STEP': 1 / 0}", "fill(tc, env) failed: ZeroDivisionError: division by "
     "zero"),
    ("lambda tc, env: {'STEP': 2.5}", "fill returned STEP = 2.5; a parameter is an int64"),
    ("lambda tc, env: {'STEP': 2**70}", "fill returned STEP = 1180591620717411303424; a "
     "parameter is an int64"),
    ("lambda tc, env: None", "fill returned parameters None; it declares ['STEP']"),
])
def test_a_transport_parameter_fill_gone_wrong_is_one_line(tmp_path, fill, message):
    """A transport's own fill runs its author's code: an exception, a float, an int past
    int64 or no dict are named with the declaring module, not a traceback."""
    source = (ROOT / "tests/transport_apart_path.py").read_text().replace(
        'fill=lambda tc, env: {"STEP": tc.table("counting").step}', f"fill={fill}")
    (tmp_path / "fill_case.py").write_text(source.replace('"tests.transport_apart_path"',
                                                          '"fill_case"'))
    proc = subprocess.run([sys.executable, "-c", f'''
import sys
sys.path.insert(0, {str(tmp_path)!r})
from spin.config import NicConfig
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
sc = Scenario(Topology.pair(), nic=NicConfig.make(transport={{"kind": "fill_case:TRANSPORT"}}))
Simulation(sc)
'''], capture_output=True, text=True, timeout=300, cwd=ROOT)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"spin.errors.StateLayoutError: fill_case: {message}"), proc.stderr
