"""Load scenario files (TOML) into a ``Scenario`` plus run options, with errors that name the
file, the field path, the bad value and the valid choices. The schema is documented and declared
in ``spin.tools.scenario_schema``."""
from __future__ import annotations

import inspect
import os
import re
import stat
import tomllib
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from ..bounds import field_range, shown
from ..describe.checks import Check, Dump, build_check, evaluate
from ..config import EngineConfig, HostConfig, LinkConfig, NicConfig, SwitchConfig
from ..errors import ConfigError, SpinError
from ..runtime.fabric import run_scenario
from ..describe.faults import LinkFault
from ..scenario_code import FACTORY, resolve
from ..handler import ExecutionContext, HandlerProgram, same_program
from ..describe.host_program import operator_of
from ..describe.scenario import Scenario
from ..runtime.simulation import Simulation
from ..suggest import did_you_mean, misspelt_key
from ..topologies import TOPOLOGIES, build_topology
from ..topology import Topology
from ..engine.state import INF_PS
from ..describe.limits import check_fits_in_memory, check_op_count, check_range
from ..units import US
from .scenario_schema import (MemorySpec, Node, OPS, ProgramSpec, SECTIONS, TOP_KEYS,
                              TopologySpec, WorkersSpec, WorkloadSpec)



@dataclass(frozen=True)
class RunOptions:
    """How to run a loaded scenario: workers, partition, time limit, checks."""

    name: str = ""
    source: Path | None = None
    workers: int = 1
    partition: dict[str, int] | None = None
    until_ps: int | None = None
    checks: tuple[Check, ...] = ()
    device_names: tuple[str, ...] = ()
    workload: Any = None          # the spin.workloads.Workload of a [workload] table
    endpoints: tuple = ()         # spin.endpoint.EndpointSpec of [[endpoint]] (and --endpoint)

    def with_endpoints(self, specs) -> "RunOptions":
        """Add endpoints (``spin run --endpoint``); one for a host already declared replaces it."""
        hosts = {e.host for e in specs}
        return replace(self, endpoints=tuple(e for e in self.endpoints if e.host not in hosts)
                       + tuple(specs))

    def with_workers(self, n: int) -> "RunOptions":
        """Another worker count, refused before anything starts if the topology has fewer
        devices than workers."""
        if n < 1 or (self.device_names and n > len(self.device_names)):
            d = len(self.device_names)
            raise ConfigError(f"--workers = {n}: must be 1..{d or 'N'} (a worker owns at least one "
                              f"of the topology's {d or 'N'} devices)")
        part = self.partition
        if part is not None and any(w >= n for w in part.values()):
            raise ConfigError(f"--workers = {n}: [workers] assign uses worker ids up to "
                              f"{max(part.values())}; valid worker ids are 0..{n - 1}")
        return replace(self, workers=n)

    def with_until_us(self, t_us: float) -> "RunOptions":
        if not 0 < t_us < INF_PS / US:
            raise ConfigError(f"--until-us = {t_us}: must be a time > 0 µs and < "
                              f"{INF_PS / US:.3g} µs")
        return replace(self, until_ps=int(round(t_us * US)))


# --- error reporting ------------------------------------------------------------------------------
_TAGS = {"int", "str", "float", "bool"}  # pydantic's union-member steps in an error location


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _unwrap_model(tp) -> type[BaseModel] | None:
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        return tp
    for arg in typing.get_args(tp):
        m = _unwrap_model(arg)
        if m is not None:
            return m
    return None


def _model_at(model: type[BaseModel], loc) -> type[BaseModel] | None:
    cur: type[BaseModel] | None = model
    for part in loc:
        if cur is None:
            return None
        if isinstance(part, int):
            continue
        f = cur.model_fields.get(part)
        if f is None:
            return None
        cur = _unwrap_model(f.annotation)
    return cur


def _range_of(model: type[BaseModel], loc: list) -> str:
    """``"; valid: LOW..HIGH"`` for the field at ``loc`` ("" if it declares no bounds)."""
    owner = _model_at(model, loc[:-1])
    return field_range(owner.model_fields.get(loc[-1]) if owner is not None and loc else None)

def _typo_of_missing(model: type[BaseModel], loc: list, given: Any) -> str | None:
    """The key of the table ``given`` that misspells the missing key at ``loc``, if any."""
    owner = _model_at(model, loc[:-1])
    if owner is None or not isinstance(given, dict) or not loc:
        return None
    return misspelt_key(str(loc[-1]), given, owner.model_fields)


class _Loader:
    def __init__(self, source: str):
        self.source = source

    def error(self, path: str, value: Any, msg: str) -> ConfigError:
        return ConfigError(f"{self.source}: {path} = {shown(value, 200)}: {msg}")

    def validate(self, model: type[BaseModel], data: Any, prefix: list) -> Any:
        if not isinstance(data, dict):
            raise self.error(_path(prefix), data, f"expected a table with keys "
                             f"{', '.join(model.model_fields)}")
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise self._convert(model, exc, prefix) from None
        except ConfigError as exc:   # raised by a model's own check, named without the file
            raise ConfigError(f"{self.source}: {exc}") from None

    def _convert(self, model: type[BaseModel], exc: ValidationError, prefix: list) -> ConfigError:
        lines = []
        for err in exc.errors():
            loc = [p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in _TAGS))]
            path = _path(list(prefix) + loc)
            value = err.get("input")
            ctx = err.get("ctx") or {}
            if err["type"] == "extra_forbidden":
                owner = _model_at(model, loc[:-1])
                names = list(owner.model_fields) if owner else []
                msg = (f"unknown key {loc[-1]!r}{did_you_mean(loc[-1], names)}; valid keys: "
                       f"{', '.join(names) or '?'}")
            elif err["type"] == "literal_error":
                expected = str(ctx.get("expected", "?"))
                hint = did_you_mean(value, re.findall(r"'([^']*)'", expected))
                msg = f"invalid choice{hint}; valid choices: {expected}"
            elif err["type"] == "missing":
                typo = _typo_of_missing(model, loc, value)
                if typo is not None:   # report the typo, not the key it hides
                    path, value = _path(list(prefix) + loc[:-1] + [typo]), value[typo]
                    msg = f"unknown key {typo!r} (did you mean {loc[-1]!r}?)"
                else:
                    msg = "required key is missing"
                    value = None
            elif err["type"] == "int_parsing_size":   # 1e300 for an integer field
                msg = f"too large for an integer{_range_of(model, loc)}"
            else:
                msg = err["msg"]
            lines.append(f"{self.source}: {path} = {shown(value, 200)}: {msg}")
        # one error per union member: one line per path, the members' wants joined by "or"
        kept: dict[str, str] = {}
        for line in lines:
            key, _, rest = line.partition(" = ")
            if key not in kept:
                kept[key] = line
            elif rest.split(": ", 1)[-1].startswith("Input should be "):
                kept[key] += " or " + rest.split(": ", 1)[-1].removeprefix("Input should be ")
        return ConfigError("\n".join(kept.values()))


# --- building -------------------------------------------------------------------------------------
def _topology(ld: _Loader, spec: TopologySpec, link: LinkConfig) -> Topology:
    """Build ``[topology]`` by its kind: unknown kinds and bad parameters are named there."""
    where, params = f"{ld.source}: topology", spec.params()
    if spec.kind in TOPOLOGIES:
        TOPOLOGIES.get(spec.kind, f"{where}.kind").refuse_reserved(params, where)
    return build_topology(spec.kind, link=link, where=where, **params)


def _workload(ld: _Loader, spec: WorkloadSpec, sc: Scenario, base_dir: Path | None):
    """Add ``[workload]`` by its kind; a relative ``file`` is next to the scenario file."""
    from ..workloads import build_workload   # only files with a [workload]
    params = spec.params()
    if isinstance(params.get("file"), str) and base_dir is not None:
        params["file"] = str(base_dir / params["file"])
    return build_workload(sc, spec.kind, where=f"{ld.source}: workload", **params)


def _apply_scheme(ld: _Loader, doc: dict, sections: dict[str, Any]) -> None:
    """``[loadbalancing] scheme`` sets its [switch] and [nic] fields; a field the file sets
    to another value is a contradiction, not an override."""
    from ..loadbalancing.schemes import get_scheme, scheme_configs   # only files that name one
    name = sections["loadbalancing"].scheme
    scheme = get_scheme(name, f"{ld.source}: loadbalancing.scheme")
    for table, fields in (("switch", scheme.switch), ("nic", scheme.nic)):
        _check_no_contradiction(ld, name, table, doc.get(table) or {}, fields)
    sections["switch"], sections["nic"] = scheme_configs(
        name, sections.get("switch") or SwitchConfig(), sections.get("nic") or NicConfig())


def _check_no_contradiction(ld: _Loader, scheme: str, path: str, given: dict,
                            fields: dict) -> None:
    """A field the scheme sets may be absent from the file or equal; nested tables are compared
    field by field (``[nic.transport] kind = "ue"`` agrees with a scheme setting its entropy)."""
    for key, value in fields.items():
        if key not in given:
            continue
        if isinstance(value, dict) and isinstance(given[key], dict):
            _check_no_contradiction(ld, scheme, f"{path}.{key}", given[key], value)
        elif given[key] != value:
            raise ld.error(f"{path}.{key}", given[key], f"contradicts loadbalancing.scheme = "
                           f"{scheme!r}, which sets {key} = {value!r}; remove one of them")


def _node(ld: _Loader, topo: Topology, value: Node, path: str, switches_too: bool = False
          ) -> int | str:
    """Node id of a host given by id or name (or a switch's name, with ``switches_too``); else
    the error Python's ``Topology.host_node`` gives, at ``path``."""
    if switches_too and isinstance(value, str) and value in topo.switches:
        return value
    if isinstance(value, bool):
        pass
    elif isinstance(value, int) and 0 <= value < len(topo.hosts):
        return value
    elif isinstance(value, str) and value in topo.hosts:
        return topo.node_id(value)
    raise ld.error(path, value, topo.not_a_node(value, switches_too))


def _load_factory(ld: _Loader, spec: ProgramSpec, path: str, base_dir: Path | None) -> HandlerProgram:
    """Call the declared factory ``spec.factory`` names (see spin.scenario_code), nothing else."""
    try:
        obj = resolve(spec.factory, FACTORY, base_dir)
    except ConfigError as exc:
        raise ld.error(f"{path}.factory", spec.factory, str(exc)) from None
    try:
        program = obj(**spec.args)
    except SpinError as exc:
        raise ld.error(f"{path}.args", spec.args, str(exc)) from None
    except TypeError as exc:
        try:
            params = ", ".join(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            params = "?"
        raise ld.error(f"{path}.args", spec.args, f"{exc}; {spec.factory} takes ({params})") from None
    except Exception as exc:  # noqa: BLE001 - the factory's own failure, named, not a traceback
        raise ld.error(f"{path}.factory", spec.factory, f"the factory raised "
                       f"{type(exc).__name__}: {exc}") from None
    if not isinstance(program, HandlerProgram):
        raise ld.error(f"{path}.factory", spec.factory, f"returned {type(program).__name__}, "
                       f"expected a spin.handler.HandlerProgram")
    return program


def _add_ops(ld: _Loader, sc: Scenario, topo: Topology, hp, ops: list, path: str) -> None:
    for j, raw in enumerate(ops):
        p = f"{path}[{j}]"
        if not isinstance(raw, dict):
            raise ld.error(p, raw, "expected an inline table {op = ..., ...}")
        kind = raw.get("op")
        if kind not in OPS:
            raise ld.error(f"{p}.op", kind, f"unknown op; valid choices: {', '.join(OPS)}"
                           f"{did_you_mean(kind, OPS)}")
        op = ld.validate(OPS[kind], raw, [p])
        try:
            if kind == "send":
                hp.send(_node(ld, topo, op.dst, f"{p}.dst"), op.nbytes, qp=op.qp,
                        local_addr=op.local_addr, remote_addr=op.remote_addr, rkey=op.rkey)
                if op.local_addr + op.nbytes > sc.host.memory_bytes:
                    raise ConfigError(f"send reads [{op.local_addr}, {op.local_addr + op.nbytes}) "
                                      f"beyond host.memory_bytes = {sc.host.memory_bytes}")
                dst = _node(ld, topo, op.dst, f"{p}.dst")
                if not any(c.node == dst for c in sc.contexts):  # else a handler may own it
                    check_range("remote_addr", op.remote_addr, op.nbytes, sc.host.memory_bytes)
            elif kind == "wait_recv":
                hp.wait_recv(qp=op.qp, count=op.count)
            elif kind == "wait_event":
                hp.wait_event(op.count)
            elif kind == "compute":
                hp.compute(op.ns)
            elif kind == "reduce":
                for f in ("dst_addr", "src_addr"):
                    check_range(f, getattr(op, f), op.count * np.dtype(op.dtype).itemsize,
                                sc.host.memory_bytes)
                hp.reduce(op.dst_addr, op.src_addr, op.count, op.dtype, operator_of(op, ld.source),
                          ps_per_byte=op.ps_per_byte)
            elif kind == "mark":
                hp.mark(op.label)
            else:
                for _ in range(op.times):
                    _add_ops(ld, sc, topo, hp, op.ops, f"{p}.ops")
        except ConfigError as exc:
            if str(exc).startswith(ld.source):
                raise
            raise ld.error(p, raw, str(exc)) from None


def _memory_array(ld: _Loader, m: MemorySpec, path: str) -> np.ndarray:
    dt = np.dtype(m.dtype)
    if (m.values is None) == (m.fill is None):
        raise ld.error(path, {k: v for k, v in m.model_dump().items() if v is not None},
                       "give exactly one of 'values' (a list) or 'fill' (arange, random, zeros)")
    if m.values is not None:
        if m.count is not None:
            raise ld.error(f"{path}.count", m.count, "only valid with 'fill'")
        try:
            with np.errstate(over="raise", invalid="raise"):
                arr = np.array(m.values, dtype=dt)
            if dt.kind in "iu" and any(isinstance(v, float) for v in m.values):
                raise ValueError("float value for an integer dtype")
            if dt.kind in "iu" and not np.array_equal(arr.astype(np.float64),
                                                        np.array(m.values, np.float64)):
                raise OverflowError("value out of range")
        except (OverflowError, ValueError, FloatingPointError) as exc:
            raise ld.error(f"{path}.values", m.values, f"not representable as {m.dtype}: {exc}") \
                from None
        return arr
    if m.count is None:
        raise ld.error(f"{path}.count", None, f"required with fill = {m.fill!r}")
    if m.fill == "zeros":
        return np.zeros(m.count, dt)
    if m.fill == "arange":
        return np.arange(m.count, dtype=np.int64).astype(dt)
    rng = np.random.default_rng(m.seed)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, m.count, dtype=dt, endpoint=True)
    return rng.standard_normal(m.count).astype(dt)


def _as_list(ld: _Loader, doc: dict, key: str) -> list:
    val = doc.get(key, [])
    if not isinstance(val, list):
        raise ld.error(key, val, f"expected an array of tables: write [[{key}]]")
    return val


# Arrays and tables inside each other: a scenario needs four or five levels ([[host_program]]
# ops with a repeat of ops); far more is a mistake or an attack on the validators' recursion.
MAX_NESTING = 32


def _check_nesting(ld: _Loader, doc: dict) -> None:
    """Refuse values nested deeper than MAX_NESTING (walked without recursion)."""
    todo: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while todo:
        value, path, depth = todo.pop()
        if depth > MAX_NESTING:
            raise ld.error(path, "...", f"nested {depth} levels deep; at most {MAX_NESTING} "
                           f"levels of arrays and tables are read")
        if isinstance(value, dict):
            todo.extend((v, f"{path}.{k}" if path else str(k), depth + 1)
                        for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))


def load_scenario_text(text: str, source: str = "<string>", base_dir: Path | None = None
                       ) -> tuple[Scenario, RunOptions]:
    ld = _Loader(source)
    try:
        doc = tomllib.loads(text)
    except ValueError as exc:   # TOMLDecodeError, or an integer of more than 4,300 digits
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:   # the TOML reader recurses once per nested array or table
        raise ConfigError(f"{source}: arrays or tables nested too deeply to read; a scenario "
                          f"nests at most {MAX_NESTING} levels") from None
    _check_nesting(ld, doc)
    for key in doc:
        if key not in TOP_KEYS:
            raise ld.error(key, doc[key], f"unknown key {key!r}{did_you_mean(key, TOP_KEYS)}; "
                           f"valid keys: {', '.join(TOP_KEYS)}")
    for key in ("name", "description"):
        if key in doc and not isinstance(doc[key], str):
            raise ld.error(key, doc[key], "expected a string")
    sections: dict[str, Any] = {}
    for key, (model, many) in SECTIONS.items():
        if many:
            sections[key] = [ld.validate(model, v, [key, i]) for i, v in enumerate(_as_list(ld, doc, key))]
        elif key in doc:
            sections[key] = ld.validate(model, doc[key], [key])
    if "topology" not in sections:
        raise ld.error("topology", None, "required table [topology] is missing (kind = "
                       f"{' | '.join(repr(k) for k in TOPOLOGIES.names())})")
    if "loadbalancing" in sections:
        _apply_scheme(ld, doc, sections)
    link = sections.get("link") or LinkConfig()
    topo = _topology(ld, sections["topology"], link)
    sc = Scenario(topo, nic=sections.get("nic") or NicConfig(), host=sections.get("host") or HostConfig(),
                  switch=sections.get("switch") or SwitchConfig(),
                  engine=sections.get("engine") or EngineConfig())
    try:  # before anything the file sizes is allocated (memory tables, checks), and once more below
        check_fits_in_memory(sc)
    except ConfigError as exc:
        raise ConfigError(f"{ld.source}: {exc}") from None
    # programs
    programs: dict[str, HandlerProgram] = {}
    for i, p in enumerate(sections["program"]):
        if p.name in programs:
            raise ld.error(f"program[{i}].name", p.name, "declared twice")
        programs[p.name] = _load_factory(ld, p, f"program[{i}]", base_dir)
    engine_programs: list[HandlerProgram] = []
    for prog in programs.values():
        if not any(same_program(prog, q) for q in engine_programs):
            engine_programs.append(prog)
    sc.engine_programs = engine_programs or None
    for i, c in enumerate(sections["context"]):
        path = f"context[{i}]"
        node = _node(ld, topo, c.node, f"{path}.node", switches_too=True)
        if c.program not in programs:
            raise ld.error(f"{path}.program", c.program, "no such [[program]]; declared: "
                           f"{', '.join(programs) or 'none'}")
        src = None if c.match_src is None else _node(ld, topo, c.match_src, f"{path}.match_src")
        if c.match_qp is not None and c.match_qp >= sc.host.qps:
            raise ld.error(f"{path}.match_qp", c.match_qp, f"valid qps are 0..{sc.host.qps - 1} "
                           f"(host.qps)")
        dst = None if c.match_dst is None else _node(ld, topo, c.match_dst, f"{path}.match_dst")
        sc.install(ExecutionContext(node, programs[c.program], match_qp=c.match_qp,
                                    match_rkey=c.match_rkey, match_src=src, match_dst=dst,
                                    match_udp_dport=c.match_udp_dport,
                                    match_header_type=c.match_header_type))
    for i, mc in enumerate(sections["multicast"]):
        try:
            sc.multicast_group(mc.switch, mc.ports)
        except ConfigError as exc:
            raise ld.error(f"multicast[{i}]", {"switch": mc.switch, "ports": mc.ports},
                           str(exc)) from None
    for i, f in enumerate(sections["fault"]):
        path = f"fault[{i}]"
        try:
            sc._fault(LinkFault(f.at_ns, f.kind, f.link, -1 if f.other is None else f.other,
                                f.rate_gbps or 0))
        except ConfigError as exc:
            raise ld.error(path, f.model_dump(exclude_none=True), str(exc)) from None
    # host programs
    owners: dict[int, int] = {}
    for i, h in enumerate(sections["host_program"]):
        path = f"host_program[{i}]"
        node = _node(ld, topo, h.node, f"{path}.node")
        if node in owners:
            raise ld.error(f"{path}.node", h.node, f"node {node} already has a program "
                           f"(host_program[{owners[node]}]); put all its ops in one table")
        owners[node] = i
        check_op_count(h.ops, f"{ld.source}: {path}.ops")
        _add_ops(ld, sc, topo, sc.host_program(node), h.ops, f"{path}.ops")
    workload = (_workload(ld, sections["workload"], sc, base_dir) if "workload" in sections
                else None)
    # memory
    for i, m in enumerate(sections["memory"]):
        path = f"memory[{i}]"
        node = _node(ld, topo, m.node, f"{path}.node")
        if m.count is not None:  # before allocating it
            try:
                check_range("addr", m.addr, m.count * np.dtype(m.dtype).itemsize,
                            sc.host.memory_bytes)
            except ConfigError as exc:
                raise ld.error(f"{path}.count", m.count, str(exc)) from None
        arr = _memory_array(ld, m, path)
        try:
            sc.write_host_memory(node, m.addr, arr)
        except ConfigError as exc:
            raise ld.error(f"{path}.addr", m.addr, str(exc)) from None
    # capture
    cap = sections.get("capture")
    if cap is not None:
        n_links = len(topo.links)
        if cap.links == "all":
            sc.capture()
        else:
            for k, li in enumerate(cap.links):
                if not 0 <= li < n_links:
                    raise ld.error(f"capture.links[{k}]", li, f"valid links are 0..{n_links - 1}")
            sc.capture(*cap.links)
    try:
        check_fits_in_memory(sc)
    except ConfigError as exc:
        raise ConfigError(f"{ld.source}: {exc}") from None
    # workers
    wk = sections.get("workers") or WorkersSpec()
    names = topo.device_names()
    if wk.assign is not None:
        for dev, w in wk.assign.items():
            if dev not in names:
                raise ld.error(f"workers.assign.{dev}", w, f"no such device; devices: "
                               f"{', '.join(names)}")
            if not 0 <= w < wk.count:
                raise ld.error(f"workers.assign.{dev}", w, f"valid worker ids are 0..{wk.count - 1} "
                               f"(workers.count = {wk.count})")
    checks = tuple(build_check(c, f"check[{i}]", sc, lambda v, p: _node(ld, topo, v, p), ld.error,
                               base_dir) for i, c in enumerate(sections["check"]))
    endpoints = _endpoints(ld, sc, sections["endpoint"], base_dir)
    options = RunOptions(name=doc.get("name", ""), source=Path(source) if base_dir else None,
                         workers=wk.count, partition=dict(wk.assign) if wk.assign else None,
                         checks=checks, device_names=tuple(names), workload=workload,
                         endpoints=endpoints)
    return sc, options


def _endpoints(ld: _Loader, sc: Scenario, tables: list, base_dir: Path | None) -> tuple:
    """``[[endpoint]]`` tables as EndpointSpecs, each checked against the scenario (the host
    exists, has no program, one link); a relative ``key_file`` is next to the scenario file."""
    if not tables:   # most scenarios: no need to import the endpoint code (ZeroMQ)
        return ()
    from ..endpoint.spec import EndpointSpec, attach_endpoints
    specs = []
    for i, t in enumerate(tables):
        fields = t.model_dump()
        if fields["key_file"] is not None and base_dir is not None:
            fields["key_file"] = str(base_dir / fields["key_file"])
        try:
            spec = EndpointSpec(**fields)
            attach_endpoints(sc, specs + [spec])
        except ConfigError as exc:
            raise ld.error(f"endpoint[{i}]", {"host": t.host, "url": t.url}, str(exc)) from None
        specs.append(spec)
    return tuple(specs)


# A scenario is a few kB; a file beyond this is a wrong path (a disk image, a log), and reading it
# whole could exhaust memory before the TOML parser says anything.
MAX_SCENARIO_BYTES = 64 << 20
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _check_regular(path: str | Path, st: os.stat_result) -> None:
    """Refuse what is not a regular file of at most MAX_SCENARIO_BYTES: a FIFO would block the
    read forever, a device (/dev/zero) or a huge file would fill memory."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a file")
        raise ConfigError(f"{path}: cannot read scenario file: {kind}; a scenario is a regular "
                          f"TOML file")
    if st.st_size > MAX_SCENARIO_BYTES:
        raise _too_big(path, st.st_size)


def _too_big(path: str | Path, size: int) -> ConfigError:
    """The error for a file of ``size`` bytes, above the limit."""
    return ConfigError(f"{path}: cannot read scenario file: {size} B is larger than the limit "
                       f"of {MAX_SCENARIO_BYTES} B ({MAX_SCENARIO_BYTES >> 20} MiB) for a scenario")


def _read_scenario_bytes(path: str | Path) -> bytes:
    """The bytes of a scenario file, checked before opening (no device is opened) and again on
    the open file (the path may have been replaced); never more than the limit plus one."""
    if str(path) == "":                 # Path("") is ".", which would read as a directory
        raise ConfigError("scenario file path = '': empty; name a TOML scenario file")
    try:
        _check_regular(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # a FIFO swapped in does not block
        with os.fdopen(fd, "rb") as f:
            _check_regular(path, os.fstat(f.fileno()))
            raw = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read scenario file: {exc.strerror or exc}") from None
    if len(raw) > MAX_SCENARIO_BYTES:   # grew after the checks
        raise _too_big(path, len(raw))
    return raw


def _read_scenario_file(path: str | Path) -> str:
    """The text of a scenario file, newlines translated as a text-mode read does."""
    raw = _read_scenario_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file (TOML is UTF-8): byte "
                          f"{exc.object[exc.start]:#04x} at offset {exc.start}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load_scenario(path: str | Path) -> tuple[Scenario, RunOptions]:
    """Load a TOML scenario file; raise ConfigError naming file, field, value and choices."""
    text = _read_scenario_file(path)
    p = Path(path)
    sc, opts = load_scenario_text(text, str(path), p.resolve().parent)
    if not opts.name:
        opts = replace(opts, name=p.stem)
    return sc, opts


# --- running --------------------------------------------------------------------------------------
@dataclass
class LoadedRun:
    result: Any
    pcaps: list[Path] = field(default_factory=list)
    check_lines: list[str] = field(default_factory=list)
    checks_passed: bool = True
    dumped: list[Path] = field(default_factory=list)     # .npy files written by --dump


def _apply_check(run: LoadedRun, c: Check, region: np.ndarray) -> None:
    """Compare one host-memory region with its expected contents; record the outcome."""
    ok, line = evaluate(c, region)
    run.checks_passed = run.checks_passed and ok
    run.check_lines.append(line)


def run_loaded(scenario: Scenario, options: RunOptions, pcap_dir: str | Path | None = None,
               quiet: bool = True, dumps: tuple[Dump, ...] = (), **transport) -> LoadedRun:
    """Run a loaded scenario, apply its checks and write the memory ``dumps`` (.npy files,
    listed in ``LoadedRun.dumped``); a failed check sets ``checks_passed`` to False."""
    if pcap_dir is not None and not scenario.capture_links:
        scenario.capture()
    if options.workers > 1 or transport.get("remote_workers") or options.endpoints:
        if options.until_ps is not None and options.workers > 1:
            raise ConfigError(f"--until-us with workers = {options.workers}: a time limit is only "
                              f"supported with 1 worker")
        regions = tuple(c.region for c in options.checks) + tuple(d.region for d in dumps)
        result = run_scenario(scenario, options.workers, pcap_dir=pcap_dir, quiet=quiet,
                              partition=options.partition, regions=regions,
                              endpoints=options.endpoints, until_ps=options.until_ps, **transport)
        pcaps = sorted(Path(pcap_dir).glob("*.pcap")) if pcap_dir else []
        run = LoadedRun(result, pcaps)
        for c in options.checks:
            _apply_check(run, c, np.frombuffer(result.memory_regions[c.region], np.uint8))
        run.dumped = [d.write(result.memory_regions[d.region]) for d in dumps]
        return run
    sim = Simulation(scenario, quiet=quiet)
    result = sim.run(quiet=quiet, until_ps=options.until_ps)
    pcaps = sim.write_pcaps(pcap_dir) if pcap_dir is not None else []
    run = LoadedRun(result, pcaps)
    run.dumped = [d.write(sim.host_memory(d.node)[d.addr:d.addr + d.region[2]].tobytes())
                  for d in dumps]
    if options.checks and options.until_ps is not None:
        run.check_lines.append(f"checks: {len(options.checks)} skipped (run stopped at "
                               f"--until-us)")
        return run
    for c in options.checks:
        _apply_check(run, c, sim.host_memory(c.node)[c.addr:c.addr + c.nbytes])
    return run
