"""Read MLCommons Chakra execution traces: one file per rank, ``<prefix>.<rank>.et``, each a
stream of varint-length-prefixed protobuf messages (a ``GlobalMetadata``, then ``Node``s),
optionally gzip-compressed.

Field numbers and enum values follow Chakra's ``schema/protobuf/et_def.proto`` (Node: id 1,
name 2, type 3, ctrl_deps 4, data_deps 5, duration_micros 7, attr 10; AttributeProto: name 1,
then one typed value in fields 3..32). Collective size, type, peers and tags are attributes,
as ASTRA-sim's feeder reads them: ``comm_type``, ``comm_size``, ``comm_src``, ``comm_dst``,
``comm_tag``, ``pg_name``, ``involved_dim``, ``is_cpu_op``, ``num_ops``, ``tensor_size``.

Process groups: a ``pg_name`` attribute names a group whose ranks come from the trace's
``## process_group:init ##`` node (converted PyTorch traces) or a JSON file
``{"name": [ranks...]}`` (ASTRA-sim's comm-group file, which wins), by default
``<prefix>.groups.json`` when it exists; collectives without ``pg_name`` run on every rank.

Converted PyTorch traces name collectives by op instead of ``comm_type`` (``pytorch_ops``):
GPU-side NCCL kernels are the collectives, CPU-side c10d ops their launches. Their sends and
receives have no ``comm_dst``/``comm_src``: ``c10d::send``/``recv_`` record the peer among
their arguments, and a GPU ``ncclDevKernel_SendRecv`` takes it from the op that launched it."""
from __future__ import annotations

import json
import re
import struct
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import protowire as pw
from . import pytorch_ops as torch_ops
from .model import (
    COLLECTIVE,
    COMPUTE,
    count_limit,
    RECV,
    SEND,
    WORLD,
    MAX_COMPUTE_NS,
    MAX_RANKS,
    MAX_TRANSFER_BYTES,
    RankTrace,
    StepTrace,
    TraceOp,
    fail,
    real_number,
    validate,
    whole_number,
)

NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE",
              4: "COMP_NODE", 5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE",
              8: "STORAGE_NODE", 9: "BATCH_NODE", 10: "CHECKPOINT_NODE"}
REPLAYED_TYPES = ("METADATA_NODE", "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE",
                  "COMM_COLL_NODE")
COMM_TYPES = {0: "all_reduce", 1: "reduce", 2: "all_gather", 3: "gather", 4: "scatter",
              5: "broadcast", 6: "all_to_all", 7: "reduce_scatter", 8: "reduce_scatter_block",
              9: "barrier"}
REPLAYED_COMM = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                 "barrier")
GZIP_MAGIC = b"\x1f\x8b"
# The most bytes one rank file may hold once gunzipped (a gzip bomb stops here, before it fills
# memory); SPIN_TRACE_MAX_BYTES raises it for real traces larger than that.
MAX_RANK_FILE_BYTES = 4 << 30
MAX_BYTES_ENV = "SPIN_TRACE_MAX_BYTES"
# The most nodes one rank file may hold: reading one costs a few microseconds of Python and
# replaying it tens, so a million is minutes of work (a 256 MiB file of small valid nodes held
# 27 million, read for minutes without a word); SPIN_TRACE_MAX_NODES raises it.
MAX_RANK_NODES = 1_000_000
MAX_NODES_ENV = "SPIN_TRACE_MAX_NODES"


def read_chakra(prefix: str | Path, groups_file: str | Path | None = None,
                strict: bool = False) -> StepTrace:
    """The trace set ``<prefix>.<rank>.et`` (ranks 0..n-1, none missing), validated.
    ``strict``: a CPU-side collective that would be skipped is an error."""
    prefix = Path(prefix)
    files = rank_files(prefix)
    groups = _read_groups(Path(groups_file) if groups_file else
                          prefix.with_name(prefix.name + ".groups.json"), groups_file is not None)
    meta: dict[str, tuple[int, ...]] = {}
    launches = [Launches() for _ in files]
    ranks = tuple(read_rank(rank, path, meta, len(files), launches[rank])
                  for rank, path in enumerate(files))
    ranks = tuple(_resolve_kernel_peers(r, found, {**meta, **groups})
                  for r, found in zip(ranks, launches))
    ranks, skipped = torch_ops.settle_cpu_collectives(ranks, strict)
    device = "gpu" if any(not op.cpu_op for r in ranks for op in r.ops) else "cpu"
    return validate(StepTrace(prefix.name, "chakra", ranks, {**meta, **groups}, device,
                              skipped))


def rank_files(prefix: Path, extension: str = "et") -> list[Path]:
    """``<prefix>.0.et`` .. ``<prefix>.<n-1>.et`` (or ``.et.gz``; another ``extension`` for
    other formats); a TraceError names the first one missing."""
    pattern = re.compile(re.escape(prefix.name) + r"\.(\d+)\." + re.escape(extension)
                         + r"(?:\.gz)?$")
    parent = prefix.parent if str(prefix.parent) else Path(".")
    if not parent.is_dir():
        raise fail(str(prefix), None, f"directory {parent} does not exist")
    found = {int(m.group(1)): parent / m.group(0) for p in parent.iterdir()
             if (m := pattern.match(p.name))}
    if not found:
        raise fail(str(prefix), None, f"no rank files {prefix.name}.<rank>.{extension} in "
                   f"{parent}")
    n = max(found) + 1
    if n > MAX_RANKS:   # refused before anything per rank is made
        raise fail(str(found[n - 1]), None, f"rank {n - 1}: a trace has at most {MAX_RANKS:,} "
                   f"ranks, numbered from 0")
    if len(found) < n:
        first = next(r for r in range(len(found) + 1) if r not in found)
        raise fail(str(parent / f"{prefix.name}.{first}.{extension}"), None,
                   f"rank file missing (found {len(found)} of ranks 0..{n - 1})")
    return [found[r] for r in range(n)]


def _read_groups(path: Path, required: bool) -> dict[str, tuple[int, ...]]:
    if not path.exists():
        if required:
            raise fail(str(path), None, "process-group file does not exist")
        return {}
    try:
        raw = json.loads(path.read_text())
        return {str(k): tuple(whole_number(r, f"process group {k!r} rank", str(path), None,
                                           MAX_RANKS - 1) for r in v) for k, v in raw.items()}
    except OSError as exc:
        raise fail(str(path), None, f"cannot read the process-group file: "
                   f"{exc.strerror or exc}") from None
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise fail(str(path), None, f"process groups must be a JSON object "
                   f"{{name: [ranks]}}: {exc}") from None


HEAD_BYTES = 1 << 20   # gunzipped first, and checked, before the rest is inflated


def file_bytes(path: Path, check_head=None) -> bytes:
    """The file's bytes, gunzipped if it starts with the gzip magic; at most
    ``max_rank_file_bytes()`` either way. ``check_head(first bytes)`` runs on the first MiB
    before the rest of a gzip stream is inflated: a bomb whose records are garbage from the
    start is refused at once, not after gigabytes of zeros."""
    limit = max_rank_file_bytes()
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:   # a directory, no permission
        raise fail(str(path), None, f"cannot read the rank file: {exc.strerror or exc}") \
            from None
    if len(data) > limit:
        raise _too_large(path, limit, "")
    if not data.startswith(GZIP_MAGIC):
        return data
    out, rest = bytearray(), data
    try:
        while rest.startswith(GZIP_MAGIC):   # a gzip file may hold several members
            unzip = zlib.decompressobj(wbits=31)
            if check_head is not None and not out:
                out += unzip.decompress(rest, min(HEAD_BYTES, limit + 1))
                check_head(bytes(out))
                check_head = None
                rest = unzip.unconsumed_tail
                if not unzip.eof:
                    out += unzip.decompress(rest, limit + 1 - len(out))
            else:
                out += unzip.decompress(rest, limit + 1 - len(out))
            if len(out) > limit or unzip.unconsumed_tail:
                raise _too_large(path, limit, " once gunzipped")
            if not unzip.eof:
                raise EOFError("the stream ends before its last block")
            rest = unzip.unused_data
    except (EOFError, zlib.error) as exc:
        raise fail(str(path), None, f"gzip stream is corrupt or truncated ({exc})") from None
    return bytes(out)


def max_rank_file_bytes() -> int:
    """The size cap of one (gunzipped) rank file: ``$SPIN_TRACE_MAX_BYTES`` or 4 GiB."""
    import os
    from ..describe.limits import parse_bytes
    given = os.environ.get(MAX_BYTES_ENV, "").strip()
    return parse_bytes(given, MAX_BYTES_ENV) if given else MAX_RANK_FILE_BYTES


def _too_large(path: Path, limit: int, how: str):
    return fail(str(path), None, f"larger than {limit:,} B{how} (a rank file's limit; set "
                f"{MAX_BYTES_ENV} to raise it)")


@dataclass
class Launches:
    """What a rank's file says about who launched a GPU send/recv kernel: each node's
    caller (its first ``ctrl_deps``, as Chakra's converter records the call stack) and the
    (peer, tag) arguments of its ``c10d::send``/``recv_`` nodes, by node id."""

    caller: dict[int, int] = field(default_factory=dict)
    peer_tag: dict[int, tuple[str, int, int]] = field(default_factory=dict)

    def of(self, node_id: int) -> tuple[str, int, int] | None:
        """(kind, peer, tag) of the nearest ``c10d::send``/``recv_`` among ``node_id``'s
        callers, if any."""
        seen = {node_id}
        while (node_id := self.caller.get(node_id, node_id)) not in seen:
            seen.add(node_id)
            if node_id in self.peer_tag:
                return self.peer_tag[node_id]
        return None


def read_rank(rank: int, path: Path, groups: dict | None = None, n_ranks: int = 0,
              launches: Launches | None = None) -> RankTrace:
    """One rank's nodes (the leading GlobalMetadata is checked for shape and skipped); the
    process groups of a ``## process_group:init ##`` node go to ``groups``, who launched
    what to ``launches``."""
    def check_head(head: bytes) -> None:   # the records whole in ``head``
        try:
            for index, (offset, msg) in enumerate(pw.delimited(head)):
                if index == 0:
                    _metadata(msg, offset)
                else:
                    _node(msg, offset, str(path), None, n_ranks, None)
        except pw.WireFormatError as exc:
            if "cut off" not in str(exc):   # a record longer than the head is no evidence
                raise fail(str(path), None, f"not a valid Chakra ET stream at byte "
                           f"{exc.offset}: {exc}") from None

    data = file_bytes(path, check_head)
    node_limit = count_limit(MAX_NODES_ENV, MAX_RANK_NODES, "nodes")
    ops: list[TraceOp] = []
    last_id = None
    try:
        for index, (offset, msg) in enumerate(pw.delimited(data)):
            if index == 0:
                _metadata(msg, offset)
                continue
            if index > node_limit:
                raise fail(str(path), None, f"more than {node_limit:,} nodes: a rank this long "
                           f"replays for minutes; set {MAX_NODES_ENV} to allow more")
            op = _node(msg, offset, str(path), groups, n_ranks, launches)
            last_id = op.node_id
            ops.append(op)
    except pw.WireFormatError as exc:
        where = (f"after node {last_id}" if last_id is not None else "in the metadata")
        raise fail(str(path), None, f"not a valid Chakra ET stream at byte {exc.offset} "
                   f"({where}): {exc}") from None
    if not data:
        raise fail(str(path), None, "empty file (no GlobalMetadata)")
    return RankTrace(rank, str(path), tuple(ops))


def _metadata(msg: bytes, offset: int) -> None:
    for number, wire, _ in pw.fields(msg, offset):
        if number == 1 and wire != pw.LENGTH:
            raise pw.WireFormatError("GlobalMetadata.version is not a string", offset)


def _node(msg: bytes, offset: int, source: str, groups: dict | None = None,
          n_ranks: int = 0, launches: Launches | None = None) -> TraceOp:
    node_id, name, ntype, deps, duration_us, attrs = 0, "", 0, [], 0, {}
    inputs: dict[int, str] = {}
    callers: list[int] = []
    for number, wire, value in pw.fields(msg, offset):
        if number == 1 and wire == pw.VARINT:
            node_id = value
        elif number == 2 and wire == pw.LENGTH:
            name = value.decode("utf-8", "replace")
        elif number == 3 and wire == pw.VARINT:
            ntype = value
        elif number in (4, 5):
            deps.extend(pw.packed_varints(wire, value))
            if number == 4:
                callers.extend(pw.packed_varints(wire, value))
        elif number == 7 and wire == pw.VARINT:
            duration_us = value
        elif number == 8 and wire == pw.LENGTH:       # IOInfo: values 1, shapes 2, types 3
            inputs = {n: v.decode("utf-8", "replace") for n, w, v in pw.fields(value, offset)
                      if w == pw.LENGTH}
        elif number == 10 and wire == pw.LENGTH:
            key, val = attribute(value, offset)
            attrs[key] = val
    kind = NODE_TYPES.get(ntype, f"code {ntype}")
    if kind not in REPLAYED_TYPES:
        raise fail(source, node_id, f"node type {kind} is not replayable; valid types: "
                   f"{', '.join(REPLAYED_TYPES)}")
    base = {"node_id": node_id, "name": name, "deps": tuple(dict.fromkeys(deps)),
                "cpu_op": bool(attrs.get("is_cpu_op", False))}
    transfer = torch_ops.point_to_point_of(name or str(attrs.get("op_schema", "")))
    if launches is not None:
        if callers:
            launches.caller[node_id] = callers[0]
        if transfer and base["cpu_op"]:
            found = _recorded_peer(transfer, attrs, inputs)
            if found:
                launches.peer_tag[node_id] = (transfer, *found)
    if name == torch_ops.PG_INIT and groups is not None:
        try:
            groups.update(torch_ops.process_groups(torch_ops.literal(inputs.get(1, "")),
                                                   n_ranks))
        except ValueError as exc:
            raise fail(source, node_id, str(exc)) from None
    duration_us = whole_number(duration_us, "duration_micros", source, node_id,
                               int(MAX_COMPUTE_NS // 1000))
    if kind in ("COMP_NODE", "METADATA_NODE"):
        return TraceOp(kind=COMPUTE,
                       duration_ns=duration_us * 1000.0 if duration_us else
                       (0.0 if kind == "METADATA_NODE" else None),
                       flops=real_number(attrs.get("num_ops", 0), "num_ops", source, node_id,
                                         1e30),
                       tensor_bytes=_size_attr(attrs, "tensor_size", source, node_id), **base)
    if kind in ("COMM_SEND_NODE", "COMM_RECV_NODE") or (transfer and "comm_type" not in attrs):
        return _transfer(kind, transfer, attrs, inputs, duration_us, source, base)
    size = _size_attr(attrs, "comm_size", source, node_id)
    dims = attrs.get("involved_dim", [])
    group = attrs.get("pg_name", WORLD)
    if not isinstance(group, str):
        raise fail(source, node_id, f"pg_name = {group!r}: expected a string")
    coll = {"group": group,
            "involved_dim": tuple(bool(d) for d in (dims if isinstance(dims, list)
                                                     else [dims]))}
    if "comm_type" not in attrs:
        return _named_collective(name, attrs, inputs, duration_us, source, base, coll)
    code = _int_attr(attrs, "comm_type", source, node_id)
    comm = COMM_TYPES.get(code, f"code {code}")
    if comm not in REPLAYED_COMM:
        raise fail(source, node_id, f"collective type {comm} is not replayable; valid types: "
                   f"{', '.join(REPLAYED_COMM)}")
    if comm != "barrier" and "comm_size" not in attrs:   # not "a collective of 0 B"
        raise fail(source, node_id, f"attribute comm_size missing ({comm} needs its size)")
    return TraceOp(kind=COLLECTIVE, collective=comm, nbytes=size, **coll, **base)


def _named_collective(name: str, attrs: dict, inputs: dict, duration_us: int, source: str,
                      base: dict, coll: dict) -> TraceOp:
    """A collective without ``comm_type`` (converted PyTorch traces): its type from its op
    (node name, else ``op_schema``), its size from ``comm_size``, else its tensor arguments.
    A GPU-side op spin cannot name is an error here; a CPU-side one is settled later (see
    ``pytorch_ops.settle_cpu_collectives``)."""
    schema = str(attrs.get("op_schema", ""))
    op = name or schema.split("(", 1)[0]
    comm = torch_ops.collective_of(name) or torch_ops.collective_of(schema)
    if comm is None and not base["cpu_op"]:
        raise fail(source, base["node_id"], f"collective op {op!r} has no comm_type and spin "
                   f"cannot name it; known ops: {torch_ops.known_ops()}")
    size = _size_attr(attrs, "comm_size", source, base["node_id"])
    if not size and comm:
        size = torch_ops.tensor_bytes(torch_ops.literal(inputs.get(2, "")) or [],
                                      torch_ops.literal(inputs.get(3, "")) or [],
                                      torch_ops.SIZE_ARGUMENT[comm])
        size = whole_number(size, "the size of its tensor arguments", source,
                            base["node_id"], MAX_TRANSFER_BYTES)
    return TraceOp(kind=COLLECTIVE, collective=comm or "", nbytes=size, op=op,
                   duration_ns=duration_us * 1000.0, **coll, **base)


def _transfer(kind: str, transfer: str | None, attrs: dict, inputs: dict, duration_us: int,
              source: str, base: dict) -> TraceOp:
    """A send or receive: peer and tag from ``comm_dst``/``comm_src`` and ``comm_tag``
    (ASTRA-sim's traces). Converted PyTorch traces record neither: a CPU-side
    ``c10d::send``/``recv_`` has them among its arguments (a CPU-side node without them is
    settled with the other launches, ``pytorch_ops.settle_cpu_collectives``), a GPU-side NCCL
    kernel gets them from the op that launched it (``_resolve_kernel_peers``)."""
    kind = transfer or (SEND if kind == "COMM_SEND_NODE" else RECV)
    key = "comm_dst" if kind == SEND else "comm_src"
    op = base["name"] or str(attrs.get("op_schema", "")).split("(", 1)[0]
    size = _size_attr(attrs, "comm_size", source, base["node_id"])
    from_torch = transfer or torch_ops.is_nccl_kernel(op) or (base["cpu_op"] and op and
                                                             "op_schema" in attrs)
    if key in attrs or not from_torch:
        return TraceOp(kind=kind, nbytes=size, peer=_int_attr(attrs, key, source,
                                                              base["node_id"]),
                       tag=whole_number(attrs.get("comm_tag", 0), "comm_tag", source,
                                        base["node_id"], 2**63 - 1, -2**63), **base)
    if not base["cpu_op"]:
        return TraceOp(kind=kind, nbytes=size, peer=torch_ops.UNRESOLVED_PEER, op=op,
                       group=str(attrs.get("pg_name", WORLD)), **base)
    peer, tag = _recorded_peer(kind, attrs, inputs) or (torch_ops.UNRESOLVED_PEER, 0)
    if not size:
        size = whole_number(torch_ops.tensor_bytes(torch_ops.literal(inputs.get(2, "")) or [],
                                                   torch_ops.literal(inputs.get(3, "")) or [], 0),
                            "the size of its tensor arguments", source, base["node_id"],
                            MAX_TRANSFER_BYTES)
    return TraceOp(kind=kind, nbytes=size, peer=peer, tag=tag, op=op,
                   duration_ns=duration_us * 1000.0, **base)


def _recorded_peer(kind: str, attrs: dict, inputs: dict) -> tuple[int, int] | None:
    """(peer, tag) of a CPU-side ``c10d::send``/``recv_`` node's arguments."""
    return torch_ops.peer_and_tag(kind, torch_ops.literal(inputs.get(1, "")),
                                  str(attrs.get("op_schema", "")))


def _resolve_kernel_peers(rank: RankTrace, launches: Launches,
                          groups: dict[str, tuple[int, ...]]) -> RankTrace:
    """The peers and tags of a rank's GPU send/recv kernels, from the ``c10d::send``/``recv_``
    that launched each (which also says whether it sends: converters before mid-2024 typed
    every ``SendRecv`` kernel a send); the launch's rank is one of the kernel's ``pg_name``
    group."""
    ops = []
    for op in rank.ops:
        if op.peer == torch_ops.UNRESOLVED_PEER and not op.cpu_op:
            found = launches.of(op.node_id)
            if found is None:
                raise fail(rank.source, op.node_id, f"{op.kind} kernel {op.op} has no "
                           f"{'comm_dst' if op.kind == SEND else 'comm_src'} and no "
                           f"c10d::send or c10d::recv_ among its callers (ctrl_deps) "
                           f"records its peer")
            kind, peer, tag = found
            if op.group:
                members = groups.get(op.group)
                if members is None:
                    raise fail(rank.source, op.node_id, f"process group {op.group!r} is not "
                               f"defined; defined: {', '.join(sorted(groups)) or 'none'}")
                if not 0 <= peer < len(members):
                    raise fail(rank.source, op.node_id, f"{op.kind} peer {peer} of process "
                               f"group {op.group!r}, whose ranks are {list(members)}")
                peer = members[peer]
            op = replace(op, kind=kind, peer=peer, tag=tag, group=WORLD)
        ops.append(op)
    return replace(rank, ops=tuple(ops))


def _int_attr(attrs: dict, key: str, source: str, node_id: int) -> int:
    """A rank or a code: an integer 0..MAX_RANKS - 1."""
    if key not in attrs:
        raise fail(source, node_id, f"attribute {key} missing")
    return whole_number(attrs[key], key, source, node_id, MAX_RANKS - 1)


def _size_attr(attrs: dict, key: str, source: str, node_id: int) -> int:
    """A byte count: an integer 0..MAX_TRANSFER_BYTES (0 when absent)."""
    return whole_number(attrs.get(key, 0), key, source, node_id, MAX_TRANSFER_BYTES)


_SCALAR = {3: "d", 5: "f", 19: "I", 21: "Q", 23: "i", 25: "q"}
_LIST_FIXED = {4: "d", 6: "f", 20: "I", 22: "Q", 24: "i", 26: "q"}


def attribute(msg: bytes, offset: int) -> tuple[str, object]:
    """(name, value) of an AttributeProto: ints, floats, bools, strings or lists of them."""
    name, value = "", None
    for number, wire, raw in pw.fields(msg, offset):
        if number == 1:
            name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        elif number == 2:
            continue
        elif number in _SCALAR:
            width = 8 if wire == pw.FIXED64 else 4
            value = struct.unpack("<" + _SCALAR[number], raw.to_bytes(width, "little"))[0]
        elif number in (7, 9):
            value = pw.signed64(raw)
        elif number in (11, 13):
            value = raw
        elif number in (15, 17):
            value = pw.zigzag(raw)
        elif number == 27:
            value = bool(raw)
        elif number in (29, 31):
            value = raw.decode("utf-8", "replace") if number == 29 else raw
        elif number in _LIST_FIXED or number in (8, 10, 12, 14, 16, 18, 28, 30, 32):
            value = _list(number, raw, offset)
    return name, value


def _list(number: int, raw: bytes, offset: int) -> list:
    """A XxxList message: field 1 repeated."""
    out: list = []
    for sub, wire, v in pw.fields(raw, offset):
        if sub != 1:
            continue
        if number in _LIST_FIXED:
            out.extend(pw.packed_fixed(wire, v, _LIST_FIXED[number]))
        elif number in (30, 32):
            out.append(v.decode("utf-8", "replace") if number == 30 else v)
        else:
            vals = pw.packed_varints(wire, v)
            conv = {8: pw.signed64, 10: pw.signed64, 16: pw.zigzag, 18: pw.zigzag,
                    28: bool}.get(number, int)
            out.extend(conv(x) for x in vals)
    return out
