"""``spin.registry.Registry``, and every registry's names agreeing with what reads them: config
validation, the CLI's choices and help, the scenario schema's text and the engine's codes."""
from __future__ import annotations

import dataclasses
from typing import get_args

import pydantic
import pytest

from spin.errors import ConfigError, TopologyError
from spin.registry import Option, Registry

ABC = Registry("letter", (Option("b", "bee"), Option("c", "sea"), Option("a", "ay")),
               aliases={"bb": "b"})


# --- the generic type ------------------------------------------------------------------------
def test_entries_keep_their_declaration_order():
    assert ABC.names() == ("b", "c", "a")
    assert [o.summary for o in ABC] == ["bee", "sea", "ay"] and len(ABC) == 3
    assert "a" in ABC and "bb" in ABC and "z" not in ABC and 3 not in ABC


def test_unknown_name_names_where_value_and_choices_in_order():
    with pytest.raises(ConfigError) as e:
        ABC.get("z", "thing.kind")
    assert str(e.value) == ("thing.kind = 'z': unknown letter; valid choices: b, c, a "
                            "(aliases: bb=b)")
    with pytest.raises(ConfigError, match=r"x = \['a'\]: unknown letter"):
        ABC.get(["a"], "x")     # unhashable values are unknown names too, not TypeErrors


def test_aliases_resolve_and_are_not_listed():
    assert ABC.get("bb", "x") is ABC.get("b", "x")
    assert "bb" not in ABC.names()


def test_a_name_declared_twice_is_refused():
    with pytest.raises(ConfigError, match="letter 'a' is declared twice"):
        Registry("letter", [Option("a", ""), Option("b", ""), Option("a", "")])
    with pytest.raises(ConfigError, match="alias 'a' is also the name"):
        Registry("letter", [Option("a", "")], aliases={"a": "a"})
    with pytest.raises(ConfigError, match="alias 'x' -> 'q': no such letter; valid choices: a"):
        Registry("letter", [Option("a", "")], aliases={"x": "q"})


def test_a_registry_cannot_change():
    with pytest.raises(dataclasses.FrozenInstanceError):
        ABC.entries = ()        # type: ignore[misc]
    with pytest.raises(TypeError):
        ABC.aliases["zz"] = "a"     # type: ignore[index]
    assert isinstance(ABC.entries, tuple)


def test_error_class_and_pydantic_check():
    r = Registry("shape", [Option("square", "")], error=TopologyError)
    with pytest.raises(TopologyError):
        r.get("circle", "shape")

    class Model(pydantic.BaseModel):
        shape: str

        @pydantic.field_validator("shape")
        @classmethod
        def _known(cls, v: str) -> str:
            return r.check(v)

    assert Model(shape="square").shape == "square"
    with pytest.raises(pydantic.ValidationError) as e:
        Model(shape="circle")
    err = e.value.errors()[0]
    assert err["loc"] == ("shape",) and err["input"] == "circle"
    assert err["msg"] == "unknown shape; valid choices: square"


# --- every registry against what reads it ------------------------------------------------------
def _option(parser, command: str, flag: str):
    sub = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    cmd = sub.choices[command]
    return next(a for a in cmd._actions if flag in a.option_strings or a.dest == flag)


def test_every_registry_agrees_with_config_cli_schema_and_engine():
    import switch_emulator.lb.registry as lb
    import spin.tools.scenario_schema as schema
    from spin.cli import build_parser
    from spin.collectives import ALGORITHMS
    from spin.config import (ENTROPIES, TRANSPORTS, EngineConfig, SwitchConfig, TransportConfig,
                             port_schemes)
    from spin.engine import state as S
    from spin.loadbalancing import SENDER_SCHEMES, get_scheme, schemes
    from spin.topologies import TOPOLOGIES
    from spin.workloads import WORKLOADS

    parser = build_parser(complete=True)
    doc = schema.__doc__
    assert "$" not in doc.split("The ``")[0], "a placeholder of the schema text was not filled"

    def choices(command, flag):
        return tuple(_option(parser, command, flag).choices)

    def help_of(command, flag):
        return _option(parser, command, flag).help

    # (registry, a check per name that the reader accepts it, CLI (command, flag, how), schema)
    cases = [
        (TOPOLOGIES, None, ("topo", "specs", "help"), True),
        (WORKLOADS, None, ("lb", "--workload", "choices"), True),
        (ALGORITHMS, None, ("allreduce", "--algo", "help"), False),
        (TRANSPORTS, lambda n: TransportConfig(kind=n).kind, ("lb", "--transport", "help"),
         True),
        (ENTROPIES, lambda n: TransportConfig(kind="rc", entropy=n).entropy, None, True),
        (port_schemes(), lambda n: SwitchConfig(load_balancing=n).load_balancing, None, False),
        (schemes(), lambda n: get_scheme(n, "scheme").name, None, False),
    ]
    for reg, accept, cli, in_schema in cases:
        names = reg.names()
        assert names and len(set(names)) == len(names), reg.name
        bad = f"no-such-{reg.name.replace(' ', '-')}"
        with pytest.raises(ConfigError) as e:
            reg.get(bad, "where")
        assert f"where = {bad!r}: unknown {reg.name}; valid choices: {', '.join(names)}" \
            in str(e.value)
        if accept is not None:
            assert [accept(n) for n in names] == list(names), reg.name
        if cli is not None:
            command, flag, how = cli
            if how == "choices":
                assert choices(command, flag) == names, (reg.name, command, flag)
            else:
                assert ", ".join(names) in help_of(command, flag), (reg.name, command, flag)
        if in_schema:
            quoted = " | ".join(f'"{n}"' for n in names)
            assert ", ".join(names) in doc or quoted in doc, reg.name

    # config fields that take registry names say so with the registry's own text
    with pytest.raises(ConfigError, match="TransportConfig.kind = 'tcp': unknown transport; "
                                          "valid choices: none, rc, ue"):
        TransportConfig.make(kind="tcp")
    # the engine's codes are the registries' order
    assert TRANSPORTS.names()[S.TR_OPEN_LOOP] == "none"
    assert ENTROPIES.names() == S.ENTROPY_POLICIES
    assert port_schemes().names() == lb.scheme_names()
    assert schemes().names() == (*lb.scheme_names(), *(s.name for s in SENDER_SCHEMES))
    # names that stay Literal types for typing: the CLI and the schema use the same values
    mtus = get_args(EngineConfig.model_fields["mtu_bytes"].annotation)
    assert choices("lb", "--mtu") == mtus
    assert "|".join(map(str, mtus)) in doc
    from spin.endpoint.spec import MODES
    assert get_args(schema.EndpointTableSpec.model_fields["mode"].annotation) == MODES
    assert choices("run", "--endpoint-mode") == MODES
