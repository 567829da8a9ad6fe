"""Typos are answered with the name the user most likely meant: TOML keys, topology and
workload parameters, registry names and command-line options."""
from __future__ import annotations

import pytest

from spin.cli import build_parser, main
from spin.collectives.allreduce_table import default_algorithms
from spin.errors import ConfigError
from spin.tools.scenario_file import load_scenario_text
from spin.suggest import close_match, did_you_mean, misspelt_key
from spin.topologies import build_topology

STAR = '[topology]\nkind = "star"\nhosts = 2\n'


def test_close_match_offers_only_close_names():
    assert close_match("kidn", ["kind", "hosts"]) == "kind"
    assert close_match("--sizes", ["--size", "--hosts"]) == "--size"
    assert close_match("zzz", ["kind", "hosts"]) is None
    assert close_match(3, ["kind"]) is None
    assert did_you_mean("kidn", ["kind"]) == " (did you mean 'kind'?)"
    assert did_you_mean("zzz", ["kind"]) == ""
    assert misspelt_key("kind", {"kidn": 1, "hosts": 2}, ["kind"]) == "kidn"
    assert misspelt_key("kind", {"hosts": 2}, ["kind"]) is None


@pytest.mark.parametrize("text,expected", [
    # a typo of a required key: the typo is named, not "kind is missing"
    ('[topology]\nkidn = "star"\nhosts = 2\n',
     "topology.kidn = 'star': unknown key 'kidn' (did you mean 'kind'?)"),
    (STAR + "[link]\nrate_gpbs = 100\n",
     "link.rate_gpbs = 100: unknown key 'rate_gpbs' (did you mean 'rate_gbps'?); valid keys:"),
    (STAR + '[[host_program]]\nnode = 0\nops = [{op = "send", dst = 1, nbyte = 4}]\n',
     "host_program[0].ops[0].nbyte = 4: unknown key 'nbyte' (did you mean 'nbytes'?)"),
    ('[topology]\nkind = "star"\nhost = 2\n',
     "topology.host = 2: unknown parameter 'host' of kind = 'star' (did you mean 'hosts'?)"),
    ('[topolgy]\nkind = "star"\n', "unknown key 'topolgy' (did you mean 'topology'?)"),
    (STAR + '[switch]\nload_balancing = "ecpm"\n',
     "switch.load_balancing = 'ecpm': unknown port-selection scheme; valid choices: ecmp, "),
    (STAR + '[switch]\nload_balancing = "ecpm"\n', "(did you mean 'ecmp'?)"),
    (STAR + '[[fault]]\nat_ns = 5\nkind = "dwon"\nlink = 0\n',
     "fault[0].kind = 'dwon': invalid choice (did you mean 'down'?); valid choices: 'down'"),
])
def test_toml_typos_name_the_close_match(text, expected):
    with pytest.raises(ConfigError) as err:
        load_scenario_text(text, "s.toml")
    message = str(err.value)
    assert expected in message
    assert "missing" not in message and "required" not in message   # the typo hid nothing


def test_registry_names_suggest_the_close_match():
    with pytest.raises(ConfigError, match=r"unknown topology; .* \(did you mean 'fat_tree'\?\)"):
        build_topology("fat_tre", k=4)


def test_unknown_cli_option_names_the_close_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["allreduce", "--sizes", "4KiB"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "usage: spin allreduce" in err               # the subcommand's usage, not spin's
    assert "unrecognized arguments: --sizes 4KiB (--sizes: did you mean --size?)" in err


def test_unknown_cli_option_without_a_close_match_still_fails(capsys):
    with pytest.raises(SystemExit):
        main(["topo", "--frobnicate"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --frobnicate" in err and "did you mean" not in err


def test_allreduce_defaults_include_switch_aggregation_where_there_are_switches():
    assert build_parser().parse_args(["allreduce"]).algo is None   # chosen per topology
    assert default_algorithms(build_topology("star", hosts=4), "float32").split(",")[-1] == \
        "switch"
    assert "switch" in default_algorithms(build_topology("fat_tree", k=4), "float32")
    assert "switch" not in default_algorithms(build_topology("pair"), "float32")


def test_spin_allreduce_on_a_star_runs_switch_aggregation_by_default(capsys):
    assert main(["allreduce", "--hosts", "4", "--size", "4KiB"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[1] for line in out.splitlines() if line.startswith("4,096")]
    assert rows == ["ring", "rd", "rabenseifner", "nic", "switch"]


def test_a_mistyped_command_names_the_close_command(capsys):
    with pytest.raises(SystemExit):
        main(["alreduce", "--size", "4KiB"])
    assert "unknown command 'alreduce' (did you mean 'allreduce'?)" in capsys.readouterr().err


def test_config_fields_and_choices_from_python_name_the_close_match():
    from spin.config import SwitchConfig, TransportConfig
    with pytest.raises(ConfigError, match=r"SwitchConfig.pfcc = True: unknown field \(did you "
                                          r"mean 'pfc'\?\); valid fields: "):
        SwitchConfig.make(pfcc=True)
    with pytest.raises(ConfigError, match=r"TransportConfig.congestion = 'nsc': .*'window' "
                                          r"\(did you mean 'nscc'\?\)"):
        TransportConfig.make(congestion="nsc")


def test_topo_options_of_compare_alone_are_refused(capsys, tmp_path):
    """Without --compare nothing is priced or measured: --cost would change nothing."""
    cost = tmp_path / "cost.toml"
    cost.write_text("dac_usd = 1\n")
    assert main(["topo", "fat_tree:k=4", "--cost", str(cost)]) == 2
    err = capsys.readouterr().err
    assert "--cost applies to spin topo --compare; add --compare" in err
