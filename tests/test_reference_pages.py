"""The generated reference pages cover the code they are generated from: every subcommand and
option of the parser, every table and key of the scenario schema, every name of ``import spin``
(tools/reference_pages.py; the docs build adds them to the site)."""
from __future__ import annotations

import argparse
from pathlib import Path

from spin.cli import build_parser
from spin.tools.scenario_schema import OPS, SECTIONS
from spin.topologies import TOPOLOGIES
from spin.workloads import WORKLOADS
from tools.reference_pages import (
    api_index_markdown,
    cli_reference_markdown,
    config_reference_markdown,
    top_level_names,
)

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_has_every_subcommand_and_option():
    page = cli_reference_markdown()
    sub = next(a for a in build_parser(complete=True)._actions
               if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        assert f"## spin {name}" in page
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue                         # -h/--help: the page says so once
            for option in action.option_strings:
                assert f"`{option}`" in page, f"spin {name} {option}"


def test_configuration_reference_has_every_table_and_key():
    page = config_reference_markdown()
    for key, (model, is_array) in SECTIONS.items():
        assert (f"## `[[{key}]]`" if is_array else f"## `[{key}]`") in page
        for field in model.model_fields:
            assert f"| `{field}` |" in page, f"{key}.{field}"
    for op in OPS:
        assert f'#### `op = "{op}"`' in page
    for kind in [*TOPOLOGIES.names(), *WORKLOADS.names()]:
        assert f'#### `kind = "{kind}"`' in page


def test_configuration_reference_cites_the_sources_of_defaults():
    page = config_reference_markdown()
    row = next(line for line in page.splitlines() if line.startswith("| `pcie_rate_gbytes_per_s`"))
    assert "`50.0`" in row and "SIGCOMM'18" in row


def test_api_index_links_every_top_level_name():
    page = api_index_markdown()
    names = top_level_names()
    assert set(names) == set(__import__("spin").__all__)
    for name, path in names.items():
        assert f"[`spin.{name}`][{path}]" in page


def test_nav_has_the_tutorials_and_references():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("tutorials/first-nic-handler.md", "tutorials/first-switch-handler.md",
                 "tutorials/offload-benefit-test.md", "tutorials/allreduce-study.md",
                 "tutorials/load-balancing-study.md", "tutorials/multi-worker.md",
                 "tutorials/cluster.md",
                 "tutorials/external-endpoint.md", "tutorials/htsim-import.md",
                 "reference/cli.md", "reference/configuration.md", "reference/cost-model.md",
                 "reference/api/index.md", "engine.md", "security.md", "benchmarks.md",
                 "guides/plots.md", "guides/extending.md"):
        assert f": {page}" in nav, page
        generated = page in ("reference/cli.md", "reference/configuration.md",
                             "reference/api/index.md")
        assert generated or (ROOT / "docs" / page).is_file(), page
