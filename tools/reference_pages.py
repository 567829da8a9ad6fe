"""Reference pages generated from the code: the CLI from spin's argparse parser, the scenario
file keys from the pydantic models of ``spin.tools.scenario_schema``.

They are generated when the docs are built (``tools/mkdocs_hooks.py``), never written by hand,
so an option or a key added to the code is documented by the next build.
"""
from __future__ import annotations

import argparse
import inspect
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

DOCS_DIR = Path(__file__).resolve().parents[1] / "docs"
CLI_PAGE = "reference/cli.md"
CONFIG_PAGE = "reference/configuration.md"


# --- CLI ------------------------------------------------------------------------------------------
def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _option_row(action: argparse.Action) -> tuple[str, str, str]:
    names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
    if action.nargs == 0:
        value = ""
    elif action.choices is not None:
        value = " \\| ".join(f"`{c}`" for c in action.choices)
    else:
        value = f"`{action.metavar or action.dest.upper()}`"
    return names, value, _escape((action.help or "").replace("%(default)s", str(action.default)))


def _escape(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def cli_reference_markdown() -> str:
    """Every subcommand of ``spin`` with its description and options, from ``build_parser()``."""
    from spin.cli import build_parser
    parser = build_parser(complete=True)
    intro = ("Generated from `spin.cli.build_parser()` when the docs are built; "
             "`spin COMMAND --help` prints the same.")
    lines = ["# CLI reference", "", intro, "", "```text", parser.format_usage().strip(), "```",
             "", _escape(parser.description or ""), ""]
    helps = _subcommand_help(parser)
    lines += ["| command | what it does |", "|---|---|"]
    lines += [f"| [`spin {name}`](#spin-{name}) | {_escape(helps.get(name, ''))} |"
              for name in _subcommands(parser)]
    lines.append("")
    for name, sub in _subcommands(parser).items():
        lines += [f"## spin {name}", "", _escape(sub.description or helps.get(name, "")), "",
                  "```text", sub.format_usage().strip(), "```", ""]
        rows = [_option_row(a) for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        if rows:
            lines += ["| option | value | meaning |", "|---|---|---|"]
            lines += [f"| {n} | {v} | {h} |" for n, v, h in rows]
            lines.append("")
    return "\n".join(lines)


# --- scenario files -------------------------------------------------------------------------------
def _field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The ``#`` comment lines right above each field in the model's source: the configs cite the
    source of every default there, so the reference shows them."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = re.match(r"\s{4}(\w+)\s*:", line)
        if match and match.group(1) in model.model_fields:
            comments[match.group(1)] = " ".join(pending)
        if stripped:
            pending = []
    return comments


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a!r}`".replace("'", '"') for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type_name(a).strip("`") for a in typing.get_args(annotation))
        return f"`{getattr(origin, '__name__', str(origin))}[{args}]`"
    if annotation is type(None):
        return "`none`"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"table ({annotation.__name__})"
    return f"`{getattr(annotation, '__name__', str(annotation))}`"


def _bounds(info: FieldInfo) -> str:
    parts = []
    for meta in info.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"),
                           ("min_length", "length ≥"), ("pattern", "matches")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{sign} `{value}`")
    return ", ".join(parts)


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
        return "(table)" if isinstance(value, BaseModel) else f"`{value!r}`"
    if info.default is PydanticUndefined:
        return "required"
    return f"`{info.default!r}`".replace("'", '"')


def model_table(model: type[BaseModel]) -> list[str]:
    """One row per field: key, type, default, allowed range and the source's comment."""
    comments = _field_comments(model)
    rows = ["| key | type | default | allowed | notes |", "|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        note = _escape(info.description or comments.get(name, ""))
        rows.append(f"| `{name}` | {_type_name(info.annotation)} | {_default(info)} | "
                    f"{_bounds(info)} | {note} |")
    return rows


def config_reference_markdown() -> str:
    """Every table and key a scenario file accepts, from ``spin.tools.scenario_schema.SECTIONS``."""
    import spin.tools.scenario_schema as schema
    from spin.config import TransportConfig
    lines = ["# Scenario file reference", "",
             "Generated from the pydantic models of `spin.tools.scenario_schema` when the docs are "
             "built. Every table is optional except `[topology]`; a key not listed here is an "
             "error naming the file, the key and the valid keys. Top-level keys: "
             + ", ".join(f"`{k}`" for k in schema.TOP_KEYS) + ".", ""]
    for key, (model, is_array) in schema.SECTIONS.items():
        header = f"[[{key}]]" if is_array else f"[{key}]"
        lines += [f"## `{header}`", "", f"Model: `{model.__module__}.{model.__name__}`"
                  + (" (an array of tables: repeat it)" if is_array else "") + ".", ""]
        doc = inspect.getdoc(model)
        if doc and model.__doc__ and not model.__doc__.startswith(model.__name__ + "("):
            lines += [_escape(doc), ""]
        lines += model_table(model) + [""]
        if key == "nic":
            lines += ["### `[nic.transport]`", "", _escape(inspect.getdoc(TransportConfig)), ""]
            lines += model_table(TransportConfig) + [""]
        if key == "host_program":
            lines += ["### Host program ops", "",
                      "Each entry of `ops` is a table whose `op` names one of these:", ""]
            for op_name, op_model in schema.OPS.items():
                lines += [f"#### `op = \"{op_name}\"`", ""] + model_table(op_model) + [""]
        if key == "topology":
            lines += _registry_section("Topology kinds", "spin.topologies", "TOPOLOGIES")
        if key == "workload":
            lines += _registry_section("Workload kinds", "spin.workloads", "WORKLOADS")
    annotated = inspect.getdoc(schema).split("Schema", 1)[1].split("::", 1)[1].strip("\n")
    intro = ("The schema as `help(spin.tools.scenario_schema)` prints it, with the registered names "
             "filled in:")
    lines += ["## The annotated schema", "", intro, "", "```text", annotated.rstrip(), "```", ""]
    return "\n".join(lines)


def _registry_section(title: str, module: str, attr: str) -> list[str]:
    """One subsection per registered builder: its summary and its parameters' table."""
    import importlib
    registry = getattr(importlib.import_module(module), attr)
    lines = [f"### {title}", ""]
    for entry in registry:
        lines += [f"#### `kind = \"{entry.name}\"`", "", _escape(getattr(entry, "summary", "")), ""]
        params = getattr(entry, "params", None)
        if isinstance(params, type) and issubclass(params, BaseModel) and params.model_fields:
            lines += model_table(params) + [""]
    return lines


# --- the top-level API ----------------------------------------------------------------------------
API_INDEX_PAGE = "reference/api/index.md"


def documented_modules(docs_dir: Path = DOCS_DIR) -> set[str]:
    """The modules the API pages render (their ``::: module`` directives)."""
    return {m.group(1) for page in (docs_dir / "reference" / "api").glob("*.md")
            for m in re.finditer(r"^::: ([\w.]+)\s*$", page.read_text(), re.MULTILINE)}


def top_level_names() -> dict[str, str]:
    """Every name ``import spin`` offers (``spin.__all__``) -> the dotted path of the API entry
    that documents it: the object under its own name in its defining module or in a package
    that re-exports it (``spin.ALLREDUCE_ALGORITHMS`` may be ``spin.collectives.ALGORITHMS``),
    preferring a module an API page renders, where it is defined or in ``__all__``, then the
    same name, then the shortest path."""
    import importlib
    import sys

    import spin
    documented = documented_modules()
    for module in sorted(documented):        # the same candidates whatever was imported before
        importlib.import_module(module)
    where: dict[str, str] = {}
    for name in spin.__all__:
        obj = getattr(spin, name)
        if isinstance(obj, types.ModuleType):  # a submodule of the same name shadows the export
            obj = getattr(obj, name, obj)      # (spin.handler, once imported): its namesake
        holders = [(m, attr) for m, mod in list(sys.modules.items()) if m.startswith("spin.")
                   for attr, value in list(vars(mod).items())
                   if value is obj and not attr.startswith("_")]
        defining = getattr(obj, "__module__", None)
        if any(m == defining for m, _ in holders):   # re-exports only from enclosing packages
            holders = [(m, a) for m, a in holders if m == defining or defining.startswith(m + ".")]
        if not holders:
            raise LookupError(f"spin.{name}: no spin module holds it")
        def exported(h: tuple[str, str]) -> bool:  # rendered by mkdocstrings on its module
            return h[0] == defining or h[1] in getattr(sys.modules[h[0]], "__all__", ())
        module, attr = min(holders, key=lambda h: (h[0] not in documented, not exported(h),
                                                   h[1] != name, h[0].count("."), h))
        where[name] = f"{module}.{attr}"
    return where


def api_index_markdown() -> str:
    """The names of ``import spin``, each linked to its docstring on the module's API page (a
    name documented on no page is a broken reference: the strict build fails)."""
    import importlib
    intro = ("Generated from `spin.__all__` when the docs are built: everything `import spin` "
             "offers, with the first line of its docstring and a link to its full entry.")
    lines = ["# API: top level", "", intro, "", "| name | documented as | what it is |",
             "|---|---|---|"]
    for name, path in top_level_names().items():
        module, attr = path.rsplit(".", 1)
        obj = getattr(importlib.import_module(module), attr)
        own = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
        if not isinstance(obj, (type, types.FunctionType)) and own == type(obj).__doc__:
            own = None                        # an instance: its class's docstring is not its own
        summary = inspect.cleandoc(own or "").split("\n\n")[0]    # not an inherited docstring
        lines.append(f"| [`spin.{name}`][{path}] | `{path}` | {_escape(summary)} |")
    return "\n".join(lines) + "\n"
