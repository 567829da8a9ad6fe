"""Transports and device kinds are modules with a fixed contract, each registered once
(``spin.transports.TRANSPORTS``, ``spin.engine.device_kinds.DEVICE_KINDS``); the engine's dispatch
over them is generated from the registrations, so the loop never names a kind or a transport and
adding a transport is one module plus its registration line. A transport from outside spin is
compiled apart and leaves the engine as it is."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import spin.config as config
import spin.transports as spin_transports
from nic_emulator.transports import dispatch as transports
from spin.config import TRANSPORTS, TransportConfig, TransportOption
from spin.engine import device_kinds
from spin.engine import state as S
from spin.engine.codegen import engine_module_source
from spin.errors import ConfigError
from spin.registry import Registry
from spin.transports import SHIPPED

ROOT = Path(__file__).resolve().parent.parent


def test_every_shipped_transport_meets_the_contract():
    modules = transports.transport_modules()
    assert [m.__name__ for m in modules] == [t.module for t in SHIPPED]
    assert TRANSPORTS.names()[S.TR_OPEN_LOOP] == "none"
    assert [t.name for t in SHIPPED] == ["none", "rc", "ue"] and S.TR_APART == 3


def test_the_engine_dispatches_over_the_shipped_transports_then_the_one_apart():
    _, source = engine_module_source()
    names = [t.name for t in SHIPPED]
    for fn, params in transports.CONTRACT.items():
        assert f"def transport_{fn}(tr, {transports.dispatch_params(fn)}):" in source
        for code, name in enumerate(names):
            assert f"    if tr == {code}:\n        return _{name}_{fn}({params})" in source
        assert f"    return _apart_{fn}({transports.dispatch_params(fn)})" in source


def _plugin(tmp_path, monkeypatch, body: str, name: str = "zz_extra") -> Registry:
    """A transport module written to ``tmp_path`` and registered (for this test only)."""
    (tmp_path / f"{name}_transport.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    extended = Registry("transport", (*TRANSPORTS.entries,
                                      TransportOption(name, "a test transport", f"{name}_transport")))
    monkeypatch.setattr(config, "TRANSPORTS", extended)   # the config field checks it
    monkeypatch.setattr(spin_transports, "TRANSPORTS", extended)
    return extended


_OPEN_LOOP_AGAIN = textwrap.dedent("""
    from nic_emulator.transports.open_loop import (accepted, admit, carries, find_message,
                                                   on_control, on_timeout, on_trimmed, tx_step)
    """)


def test_a_transport_from_outside_leaves_the_engine_as_it_is(tmp_path, monkeypatch):
    """A registered transport from outside spin is compiled apart: the engine's source, and so
    its cache, stay the same; its NICs hold the code TR_APART."""
    name, source = engine_module_source()
    _plugin(tmp_path, monkeypatch, _OPEN_LOOP_AGAIN)
    assert transports.dispatch_source() in source
    assert "zz_extra" not in transports.dispatch_source()
    assert TransportConfig.make(kind="zz_extra").kind == "zz_extra"   # config, schema, CLI: the registry
    assert spin_transports.transport_code("zz_extra") == S.TR_APART
    assert spin_transports.transport_code("ue") == 2
    other, _ = engine_module_source.__wrapped__()
    assert other == name


def test_a_transport_missing_a_function_is_named(tmp_path, monkeypatch):
    from spin.assembly.transport_entries import load_transport
    _plugin(tmp_path, monkeypatch, _OPEN_LOOP_AGAIN.replace(" on_trimmed,", ""), "zz_partial")
    with pytest.raises(ConfigError, match=r"transport 'zz_partial' \(zz_partial_transport\) has no "
                                          r"function on_trimmed\(st, dev, out, now\)"):
        load_transport("zz_partial")


def test_a_transport_function_with_other_parameters_is_named(tmp_path, monkeypatch):
    from spin.assembly.transport_entries import load_transport
    body = _OPEN_LOOP_AGAIN.replace(" tx_step)", ")") + textwrap.dedent("""
        def tx_step(st, dev):
            return
        """)
    _plugin(tmp_path, monkeypatch, body, "zz_wrong")
    with pytest.raises(ConfigError, match=r"zz_wrong_transport.tx_step\(st, dev\) must take "
                                          r"\(st, dev, now\)"):
        load_transport("zz_wrong")


def _functions(paths) -> dict[str, list[str]]:
    out = {}
    for rel in paths:
        for node in ast.parse((ROOT / rel).read_text()).body:
            if isinstance(node, ast.FunctionDef):
                out[node.name] = [a.arg for a in node.args.args]
    return out


def test_every_device_kind_template_defines_the_contract():
    assert [k.name for k in device_kinds.DEVICE_KINDS] == ["nic", "switch", "bump"]
    assert (S.DEV_NIC, S.DEV_SWITCH, S.DEV_BUMP) == (0, 1, 2)
    for kind in device_kinds.DEVICE_KINDS:
        defined = _functions(kind.templates)
        for fn, params in device_kinds.CONTRACT.items():
            assert f"{kind.name}_{fn}" in defined, f"{kind.name} lacks {kind.name}_{fn}"
            # called positionally by the generated dispatch: the arity is the contract
            assert len(defined[f"{kind.name}_{fn}"]) == len(params.split(", ")), (kind.name, fn)


def test_the_loop_names_no_device_kind_nor_transport():
    loop = (ROOT / "spin/engine/loop_template.py").read_text()
    for word in ("DEV_NIC", "DEV_SWITCH", "nic_receive", "switch_receive", "nic_complete",
                 "switch_complete", "wake_tx", "TR_OPEN_LOOP", "rto", "nic_finalize_actions"):
        assert word not in loop, word
    _, source = engine_module_source()
    for fn, params in device_kinds.CONTRACT.items():
        assert f"def device_{fn}({params}):" in source
    nic = (ROOT / "nic_emulator/receive_template.py").read_text()
    for word in ("TR_RC", "TR_UE", "OP_UE_WRITE", "admit(", "on_control("):
        assert word not in nic.replace("transport_admit(", "").replace("transport_on_control(", ""), word
