"""Read PyTorch's own execution traces, as ``torch.profiler.ExecutionTraceObserver`` writes
them (schema ``1.1.x-chakra.0.0.4``): one JSON file per rank, ``<prefix>.<rank>.json`` (gzip
allowed), with no Chakra converter in between.

A file is ``{"schema", "pid", "nodes": [...]}``; each node has an ``id``, a ``name``, its
parent in the call tree as ``ctrl_deps`` (one id), ``inputs`` and ``outputs`` (``values``,
``shapes``, ``types``) and ``attrs`` (``[{"name", "type", "value"}]``, among them ``rf_id``).
The observer numbers nodes as the ops are entered and writes them as they exit, so the node
ids give the order a rank ran its ops in; it records one CPU thread's ops, so they are
replayed as a chain in that order.

What is replayed, per rank, are the outermost ops of interest in the call tree (their
children are part of them):

- communication: ``c10d::`` ops (kind from ``pytorch_ops``), sized by the
  ``record_param_comms`` node below them when the trace has one (``collective_name``,
  ``in_msg_nelems``/``out_msg_nelems`` x ``dtype``, ``pg_name``), else by their tensor
  arguments; the backend's own record of the same call (``gloo:all_reduce``,
  ``nccl:all_reduce``) is not a second collective;
- compute: ``aten::`` ops, timed by the Kineto trace when given (the profiler's event with
  the node's ``rf_id`` as its "Record function id": the GPU kernels it and its children
  launched when the trace has kernels, else its own CPU time), else a roofline of their
  FLOPs (matrix products, 2·M·N·K) and the bytes of their tensors (views move none);
- everything else (autograd and optimizer wrappers, the profiler's own nodes) is skipped.

Process groups come from the ``## process_group:init ##`` node; its default group's
``group_size`` says how many rank files there must be."""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import pytorch_ops as torch_ops
from .chakra import file_bytes, rank_files
from .model import (
    COLLECTIVE,
    COMPUTE,
    MAX_COMPUTE_NS,
    MAX_RANKS,
    MAX_TRANSFER_BYTES,
    SEND,
    WORLD,
    RankTrace,
    StepTrace,
    TraceOp,
    fail,
    real_number,
    validate,
    whole_number,
)

PARAM_COMMS = "record_param_comms"
BACKEND_PREFIXES = ("gloo:", "nccl:", "ucc:", "mpi:")   # a backend's record of a c10d call
# ops that move no data: views, aliases and allocations
NO_DATA_OPS = frozenset(
    "aten::" + op for op in ("t", "transpose", "view", "_unsafe_view", "reshape", "expand",
                             "as_strided", "detach", "alias", "permute", "squeeze",
                             "unsqueeze", "slice", "select", "resolve_conj", "resolve_neg",
                             "split", "chunk", "narrow", "unflatten", "flatten", "empty",
                             "empty_like", "empty_strided", "lift_fresh"))
GPU_EVENTS = ("kernel", "gpu_memcpy", "gpu_memset")
# record_param_comms' dtype (a c10::ScalarType name) -> bytes
SCALAR_TYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4,
                     "Short": 2, "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8,
                     "ComplexDouble": 16, "Float8_e4m3fn": 1, "Float8_e5m2": 1}
MAX_FLOPS = 1e30


def read_pytorch_et(prefix: str | Path, kineto: str | Path | None = None) -> StepTrace:
    """The trace set ``<prefix>.<rank>.json`` (ranks 0..n-1, none missing), validated.
    ``kineto``: the prefix of the profiler's traces, ``<kineto>.<rank>.json``; by default
    ``<prefix>.<rank>.kineto.json`` when rank 0's exists."""
    prefix = Path(prefix)
    files = rank_files(prefix, "json")
    timings = _kineto_files(prefix, kineto, len(files))
    docs = [_load(path) for path in files]
    groups, group_size, backend = _process_groups(docs[0], str(files[0]), len(files))
    if group_size is not None and group_size != len(files):
        missing = prefix.with_name(f"{prefix.name}.{len(files)}.json")
        raise fail(str(missing) if group_size > len(files) else str(files[0]), None,
                   f"the default process group has {group_size} ranks but there are "
                   f"{len(files)} rank files ({prefix.name}.0.json .. "
                   f"{prefix.name}.{len(files) - 1}.json)")
    kernels = False
    ranks = []
    for rank, (path, doc) in enumerate(zip(files, docs)):
        timing = _read_kineto(timings[rank], rank) if timings else None
        kernels |= bool(timing and timing.gpu_us)
        ranks.append(_read_rank(rank, str(path), doc, groups, timing, len(files)))
    device = "gpu" if kernels or "nccl" in backend else "cpu"
    return validate(StepTrace(prefix.name, "pytorch-et", tuple(ranks), groups, device))


def _kineto_files(prefix: Path, kineto, n_ranks: int) -> list[Path] | None:
    if kineto is None:
        paths = [prefix.with_name(f"{prefix.name}.{r}.kineto.json") for r in range(n_ranks)]
        paths = [p if p.exists() else p.with_name(p.name + ".gz") for p in paths]
        if not paths[0].exists():
            return None
    else:
        kprefix = Path(kineto)
        paths = [kprefix.with_name(f"{kprefix.name}.{r}.json") for r in range(n_ranks)]
        paths = [p if p.exists() else p.with_name(p.name + ".gz") for p in paths]
    for p in paths:
        if not p.exists():
            raise fail(str(p).removesuffix(".gz"), None, f"Kineto trace missing (one per "
                       f"rank, {n_ranks} ranks)")
    return paths


def _load(path: Path):
    """A file's JSON, gunzipped and size-capped as the Chakra reader's rank files."""
    data = file_bytes(path)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        if "integer string conversion" in str(exc):   # Python's cap on a number's digits
            raise fail(str(path), None, "holds a number of more than "
                       f"{sys.get_int_max_str_digits():,} digits; no trace value is that "
                       "long") from None
        raise fail(str(path), None, f"not valid JSON ({type(exc).__name__}: "
                   f"{str(exc)[:200]})") from None


def _nodes(doc, source: str) -> list[dict]:
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list):
        raise fail(source, None, "not a PyTorch execution trace: no \"nodes\" list "
                   "(ExecutionTraceObserver writes {\"schema\", \"pid\", \"nodes\"})")
    for index, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise fail(source, f"#{index}", f"a node must be a JSON object, not "
                       f"{type(node).__name__}")
        whole_number(node.get("id"), "id", source, f"#{index}", 2**63 - 1)
        if not isinstance(node.get("name"), str):
            raise fail(source, node["id"], f"name = {node.get('name')!r}: expected a string")
        whole_number(node.get("ctrl_deps", 0), "ctrl_deps", source, node["id"], 2**63 - 1)
    return nodes


def _process_groups(doc, source: str, n_ranks: int
                    ) -> tuple[dict[str, tuple[int, ...]], int | None, str]:
    """Groups of the ``## process_group:init ##`` node, the default group's size and every
    group's backend_config (for the device)."""
    for node in _nodes(doc, source):
        if node["name"] != torch_ops.PG_INIT:
            continue
        values = _io(node, "inputs", source).get("values")
        try:
            groups = torch_ops.process_groups(values, n_ranks)
            items = json.loads(values[0])
        except (ValueError, TypeError, IndexError) as exc:
            raise fail(source, node["id"], str(exc)) from None
        sizes = [item.get("group_size") for item in items
                 if isinstance(item, dict) and not item.get("ranks")]
        size = whole_number(sizes[0], "group_size", source, node["id"], MAX_RANKS) \
            if sizes and sizes[0] is not None else None
        backend = " ".join(str(item.get("backend_config", "")) for item in items
                           if isinstance(item, dict))
        return groups, size, backend
    return {}, None, ""


@dataclass
class _Kineto:
    """What one rank's profiler trace says: per record function id its CPU time (µs) and
    correlation (External id), per External id the time of the GPU work it launched."""

    source: str
    cpu_us: dict[int, float] = field(default_factory=dict)
    external: dict[int, int] = field(default_factory=dict)
    gpu_us: dict[int, float] = field(default_factory=dict)


def _read_kineto(path: Path, rank: int) -> _Kineto:
    doc, source = _load(path), str(path)
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise fail(source, None, "not a Kineto trace: no \"traceEvents\" list")
    info = doc.get("distributedInfo")
    if isinstance(info, dict) and "rank" in info and info["rank"] != rank:
        raise fail(source, None, f"Kineto trace of rank {info['rank']!r} given for rank "
                   f"{rank}")
    out = _Kineto(source)
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        what = f"event {str(event.get('name'))[:60]!r}"
        if event.get("cat") in GPU_EVENTS and "External id" in args:
            ext = whole_number(args["External id"], "External id", source, what, 2**63 - 1)
            out.gpu_us[ext] = out.gpu_us.get(ext, 0.0) + real_number(
                event.get("dur"), "dur", source, what, MAX_COMPUTE_NS / 1000)
        elif "Record function id" in args:
            rf = whole_number(args["Record function id"], "Record function id", source, what,
                              2**63 - 1)
            out.cpu_us[rf] = real_number(event.get("dur"), "dur", source, what,
                                         MAX_COMPUTE_NS / 1000)
            if "External id" in args:
                out.external[rf] = whole_number(args["External id"], "External id", source,
                                                what, 2**63 - 1)
    return out


def _read_rank(rank: int, source: str, doc, groups: dict[str, tuple[int, ...]],
               timing: _Kineto | None, n_ranks: int) -> RankTrace:
    nodes = sorted(_nodes(doc, source), key=lambda n: n["id"])
    owner: dict[int, int] = {}          # node -> the outermost replayed op it belongs to
    replayed: list[dict] = []
    comms: dict[int, dict] = {}         # c10d op -> attrs of its record_param_comms
    for node in nodes:
        parent = node.get("ctrl_deps")
        boss = owner.get(parent) if parent != node["id"] else None
        name = node["name"]
        if boss is not None:
            owner[node["id"]] = boss
            if name == PARAM_COMMS:
                comms.setdefault(boss, _attrs(node, source))
            continue
        if name.startswith(("c10d::", "aten::")) or name == PARAM_COMMS:
            owner[node["id"]] = node["id"]
            replayed.append(node)
    gpu = bool(timing and timing.gpu_us)
    gpu_us: dict[int, float] = {}
    if timing:
        for node in nodes:
            boss = owner.get(node["id"])
            ext = timing.external.get(_rf_id(node, source))
            if boss is not None and ext is not None:
                gpu_us[boss] = gpu_us.get(boss, 0.0) + timing.gpu_us.get(ext, 0.0)
        if not any(_rf_id(n, source) in timing.cpu_us for n in replayed):
            raise fail(timing.source, None, f"no event has the record function id (rf_id) "
                       f"of an op of {source}: not the Kineto trace of that run")
    ops: list[TraceOp] = []
    for node in replayed:
        if node["name"].startswith("aten::"):
            op = _compute(node, source, timing, gpu, gpu_us)
        else:
            op = _communication(node, source, comms.get(node["id"]), groups, n_ranks)
        if op is None:
            continue
        deps = (ops[-1].node_id,) if ops else ()
        ops.append(TraceOp(deps=deps, **op))
    return RankTrace(rank, source, tuple(ops))


def _rf_id(node: dict, source: str) -> int | None:
    """The node's record function id (what the Kineto trace knows it by), if it has one."""
    rf = _attrs(node, source).get("rf_id")
    return None if rf is None else whole_number(rf, "rf_id", source, node["id"], 2**63 - 1)


def _attrs(node: dict, source: str) -> dict:
    raw = node.get("attrs", [])
    if not isinstance(raw, list) or not all(isinstance(a, dict) and isinstance(a.get("name"),
                                                                                 str)
                                            for a in raw):
        raise fail(source, node["id"], "attrs must be a list of {\"name\", \"type\", "
                   "\"value\"} objects")
    return {a["name"]: a.get("value") for a in raw}


def _io(node: dict, which: str, source: str) -> dict:
    io = node.get(which, {})
    if not isinstance(io, dict):
        raise fail(source, node["id"], f"{which} must be an object with values, shapes and "
                   f"types")
    for key in ("shapes", "types"):
        if not isinstance(io.get(key, []), list):
            raise fail(source, node["id"], f"{which} {key} must be a list")
    return io


def _shapes(node: dict, which: str, source: str) -> list:
    """The node's ``which`` shapes, every dimension checked to be a whole number."""
    shapes = _io(node, which, source).get("shapes", [])

    def check(item, depth: int):
        if depth > 8:
            raise fail(source, node["id"], f"{which} shapes nest deeper than 8 lists")
        if isinstance(item, list):
            for x in item:
                check(x, depth + 1)
        else:
            whole_number(item, f"{which} shape dimension", source, node["id"],
                         MAX_TRANSFER_BYTES)
    check(shapes, 0)
    return shapes


def _tensor_bytes(node: dict, which: str, source: str, argument: int | None = None) -> int:
    """Bytes of the tensors of one argument (None: of all of them)."""
    shapes = _shapes(node, which, source)
    types = [str(t) for t in _io(node, which, source).get("types", [])]
    if argument is None:
        total = sum(torch_ops.argument_bytes(s, t) for s, t in zip(shapes, types))
    else:
        total = torch_ops.tensor_bytes(shapes, types, argument)
    return whole_number(total, f"the size of its {which}", source, node["id"],
                        MAX_TRANSFER_BYTES)


def _compute(node: dict, source: str, timing: _Kineto | None, gpu: bool,
             gpu_us: dict[int, float]) -> dict | None:
    name = node["name"]
    base = {"node_id": node["id"], "kind": COMPUTE, "name": name}
    if timing:
        rf = _rf_id(node, source)
        if gpu:     # an op that launched no kernel ran on the CPU only: not the step's work
            us = gpu_us.get(node["id"], 0.0)
            return {**base, "duration_ns": us * 1000.0} if us > 0 else None
        if rf in timing.cpu_us:
            return {**base, "duration_ns": timing.cpu_us[rf] * 1000.0}
    if name in NO_DATA_OPS:
        return {**base, "duration_ns": 0.0}
    nbytes = _tensor_bytes(node, "inputs", source) + _tensor_bytes(node, "outputs", source)
    flops = real_number(matmul_flops(name, _shapes(node, "inputs", source)), "FLOPs", source,
                        node["id"], MAX_FLOPS)
    return {**base, "flops": flops, "tensor_bytes": nbytes}


def matmul_flops(name: str, shapes: list) -> float:
    """2·M·N·K (times the batch) of a matrix product from its input shapes; 0 for other
    ops and for shapes that are not a product's."""
    dims = [s for s in shapes if isinstance(s, list) and s and
            all(isinstance(d, int) for d in s)]
    op = name.removeprefix("aten::")
    if op in ("addmm", "baddbmm", "addbmm") and len(dims) >= 3:
        dims = dims[1:]
    if op in ("mm", "addmm") and len(dims) >= 2 and len(dims[0]) == len(dims[1]) == 2:
        (m, k), (_, n) = dims[0], dims[1]
        return 2.0 * m * k * n
    if op in ("bmm", "baddbmm") and len(dims) >= 2 and len(dims[0]) == len(dims[1]) == 3:
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return 2.0 * b * m * k * n
    if op == "linear" and len(dims) >= 2 and len(dims[1]) == 2:
        return 2.0 * math.prod(dims[0][:-1]) * dims[0][-1] * dims[1][0]
    if op == "matmul" and len(dims) >= 2:
        a = dims[0] if len(dims[0]) > 1 else [1, *dims[0]]
        b = dims[1] if len(dims[1]) > 1 else [*dims[1], 1]
        batch = max(math.prod(a[:-2]), math.prod(b[:-2]))
        return 2.0 * batch * a[-2] * a[-1] * b[-1]
    return 0.0


def _communication(node: dict, source: str, comms: dict | None,
                   groups: dict[str, tuple[int, ...]], n_ranks: int) -> dict | None:
    """A c10d op (with the attrs of its record_param_comms, if any) or a record_param_comms
    of its own."""
    name, node_id = node["name"], node["id"]
    attrs = _attrs(node, source)
    if name == PARAM_COMMS:
        comms = attrs
    schema = str(attrs.get("op_schema", ""))
    op = name if name != PARAM_COMMS else \
        f"c10d::{str(comms.get('collective_name')).replace('all_to_all', 'alltoall')}"
    base = {"node_id": node_id, "name": name, "op": op}
    transfer = torch_ops.point_to_point_of(op)
    if transfer:
        values = _io(node, "inputs", source).get("values")
        found = torch_ops.peer_and_tag(transfer, values, schema)
        if found is None:
            raise fail(source, node_id, f"{op} records no "
                       f"{'destination' if transfer == SEND else 'source'} rank (argument "
                       f"{torch_ops.PEER_ARGUMENT[transfer][0]} of its inputs)")
        peer, tag = found
        nbytes = _comm_bytes(node, source, comms, "all_reduce")
        return {**base, "kind": transfer, "peer": peer, "tag": tag, "nbytes": nbytes}
    comm = torch_ops.collective_of(op)
    if comm is None:
        raise fail(source, node_id, f"communication op {op!r}: spin cannot name it; known "
                   f"ops: {torch_ops.known_ops()}")
    return {**base, "kind": COLLECTIVE, "collective": comm,
            "nbytes": _comm_bytes(node, source, comms, comm),
            "group": _group(node_id, source, comms, groups, n_ranks)}


def _comm_bytes(node: dict, source: str, comms: dict | None, comm: str) -> int:
    """nccl-tests' S of the call: from record_param_comms' element counts and dtype, else
    from the op's tensor arguments."""
    argument = torch_ops.SIZE_ARGUMENT.get(comm, 0)
    if comms and "in_msg_nelems" in comms and "dtype" in comms:
        key = "out_msg_nelems" if comm == "all_gather" else "in_msg_nelems"
        count = whole_number(comms.get(key), key, source, node["id"], MAX_TRANSFER_BYTES)
        dtype = comms["dtype"]
        width = SCALAR_TYPE_BYTES.get(dtype) or torch_ops.DTYPE_BYTES.get(str(dtype))
        if width is None:
            raise fail(source, node["id"], f"dtype = {dtype!r}: not a dtype spin knows; "
                       f"valid: {', '.join(SCALAR_TYPE_BYTES)}")
        return whole_number(count * width, "the message size", source, node["id"],
                            MAX_TRANSFER_BYTES)
    return _tensor_bytes(node, "inputs", source, argument) if argument is not None else 0


def _group(node_id: int, source: str, comms: dict | None,
           groups: dict[str, tuple[int, ...]], n_ranks: int) -> str:
    """The collective's group: record_param_comms' ``pg_name``, else the trace's only group;
    a group of every rank is the world."""
    name = comms.get("pg_name") if comms else None
    if name is None:
        if len(groups) > 1:
            raise fail(source, node_id, f"records no process group (no record_param_comms "
                       f"with a pg_name) and the trace defines {len(groups)}: "
                       f"{', '.join(sorted(groups))}")
        return WORLD
    if not isinstance(name, str):
        raise fail(source, node_id, f"pg_name = {name!r}: expected a string")
    if name not in groups:
        raise fail(source, node_id, f"process group {name!r} is not defined; defined: "
                   f"{', '.join(sorted(groups)) or 'none'}")
    return WORLD if groups[name] == tuple(range(n_ranks)) else name


def is_pytorch_et_prefix(prefix: Path) -> bool:
    """Whether ``<prefix>.<rank>.json`` files exist (a PyTorch ET set, not a Chakra one)."""
    parent = prefix.parent if str(prefix.parent) else Path(".")
    pattern = re.compile(re.escape(prefix.name) + r"\.\d+\.json(?:\.gz)?$")
    return parent.is_dir() and any(pattern.match(p.name) for p in parent.iterdir())
