"""PyTorch's names for collectives, and the sizes and process groups its traces record.

Traces that come from PyTorch (Chakra-converted, or the execution-trace JSON itself) name a
collective by its op instead of a ``comm_type``: a CPU-side c10d op (``c10d::allreduce_``,
``c10d::_allgather_base_``, ...) or a GPU-side NCCL kernel (``ncclKernel_AllReduce_RING_LL_Sum_float``,
``ncclDevKernel_AllGather_RING_LL``). Their size is the bytes of the tensor arguments (the
shapes and dtypes the trace recorded), and their process groups come from the trace's
``## process_group:init ##`` node: a JSON list of ``{"pg_name", "ranks", ...}`` (empty
ranks: every rank), as ASTRA-sim's ``issue_pytorch_pg_metadata`` reads it.

Point-to-point transfers are ``c10d::send`` and ``c10d::recv_`` on the CPU, whose arguments
name the peer and tag, and ``ncclDevKernel_SendRecv`` on the GPU, which names neither: its
peer is the one of the c10d op that launched it (an ancestor by ``ctrl_deps``)."""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import replace

from .model import COLLECTIVE, COMPUTE, MAX_RANKS, RECV, SEND, RankTrace, TraceOp, fail

# c10d op (without the namespace and the trailing "_") -> collective
C10D_OPS = {"allreduce": "all_reduce", "allreduce_coalesced": "all_reduce",
            "broadcast": "broadcast",
            "allgather": "all_gather", "_allgather_base": "all_gather",
            "allgather_coalesced": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
            "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
            "reduce_scatter_tensor_coalesced": "reduce_scatter",
            "alltoall": "all_to_all", "alltoall_base": "all_to_all",
            "barrier": "barrier", "monitored_barrier": "barrier"}
# c10d point-to-point op (without the namespace and the trailing "_") -> its kind, and the
# names its peer argument has had across PyTorch versions (``dst``, earlier ``dstRank``)
C10D_P2P = {"send": SEND, "recv": RECV}
PEER_ARGUMENT = {SEND: ("dst", "dstRank", "dst_rank"), RECV: ("src", "srcRank", "src_rank")}
# positions of the peer and the tag in ``c10d::send(Tensor[] tensors, ProcessGroup
# process_group, int dst, int tag)`` when the node has no ``op_schema``
PEER_POSITION, TAG_POSITION = 2, 3
UNRESOLVED_PEER = -2            # a GPU send/recv kernel whose peer its launch will give
# words of an NCCL kernel name (lower case, no "_" or "-"), as Chakra's converter maps them
NCCL_WORDS = (("allreduce", "all_reduce"), ("alltoall", "all_to_all"),
              ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
              ("broadcast", "broadcast"))
# which argument holds nccl-tests' S: all-gather its output (argument 0), reduce-scatter and
# all-to-all their input (argument 1), all-reduce and broadcast their one buffer
SIZE_ARGUMENT = {"all_reduce": 0, "broadcast": 0, "all_gather": 0, "reduce_scatter": 1,
                 "all_to_all": 1, "barrier": None}
DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
               "c10::Half": 2, "bfloat16": 2, "c10::BFloat16": 2, "complex64": 8,
               "complex128": 16, "uint8": 1, "unsigned char": 1, "int8": 1, "signed char": 1,
               "bool": 1, "int16": 2, "short": 2, "int32": 4, "int": 4, "int64": 8,
               "long": 8, "long int": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}
PG_INIT = "## process_group:init ##"
_TENSOR = re.compile(r"Tensor\(([^)]*)\)")


def is_nccl_kernel(name: str) -> bool:
    """A GPU-side NCCL kernel (``ncclKernel_...``, ``ncclDevKernel_...``)."""
    return name.startswith(("ncclKernel", "ncclDevKernel"))


def collective_of(name: str) -> str | None:
    """The collective a c10d op or NCCL kernel name stands for, or None if spin cannot tell."""
    op = name.split("(", 1)[0].strip()
    if op.startswith("c10d::"):
        return C10D_OPS.get(op[len("c10d::"):].rstrip("_"))
    if is_nccl_kernel(op) or op.startswith("nccl:"):
        words = op.replace("_", "").replace("-", "").lower()
        return next((kind for word, kind in NCCL_WORDS if word in words),
                    "all_to_all" if "ncclDevKernel_SendRecv" in op else None)
    return None


def point_to_point_of(name: str) -> str | None:
    """SEND or RECV for ``c10d::send`` and ``c10d::recv_``; None for anything else."""
    op = name.split("(", 1)[0].strip()
    if not op.startswith("c10d::"):
        return None
    return C10D_P2P.get(op[len("c10d::"):].rstrip("_"))


def known_ops() -> str:
    """The op names ``collective_of`` and ``point_to_point_of`` understand, for errors."""
    return ", ".join(f"c10d::{op}_" for op in C10D_OPS) + ", c10d::send, c10d::recv_, " \
        "ncclKernel_<Type>_*, ncclDevKernel_<Type>_*"


def schema_arguments(schema: str) -> list[str]:
    """Argument names of an op schema, ``ns::op(Type name, Type name=default) -> R``."""
    inside = schema.split("(", 1)[1] if "(" in schema else ""
    depth, current, names = 0, "", []
    for ch in inside:
        if ch in "([" or (ch == ")" and depth):
            depth += 1 if ch in "([" else -1
        elif ch == "]":
            depth -= 1
        elif ch == ")" or (ch == "," and not depth):
            names.append(current.split("=", 1)[0].split()[-1] if current.split() else "")
            current = ""
            if ch == ")":
                break
            continue
        current += ch
    return names


def peer_and_tag(kind: str, values, schema: str) -> tuple[int, int] | None:
    """(peer rank, tag) a ``c10d::send``/``recv_`` node recorded in its argument values,
    found by name in its ``op_schema`` (else by position); None if it recorded none."""
    names = schema_arguments(schema)
    peer_at = next((names.index(n) for n in PEER_ARGUMENT[kind] if n in names), PEER_POSITION)
    tag_at = names.index("tag") if "tag" in names else TAG_POSITION
    if not isinstance(values, list) or len(values) <= peer_at:
        return None
    peer = values[peer_at]
    tag = values[tag_at] if len(values) > tag_at else 0
    if not isinstance(peer, int) or isinstance(peer, bool):
        return None
    return peer, tag if isinstance(tag, int) and not isinstance(tag, bool) else 0


def tensor_bytes(shapes, types, argument: int | None) -> int:
    """Bytes of the tensors of one argument (``argument`` None: 0), or of the first argument
    holding tensors when that one holds none. ``shapes``/``types`` as the trace lists them:
    one entry per argument; a tensor list's shape is a list of shapes, its type
    ``GenericList[Tensor(float),...]``."""
    if argument is None:
        return 0
    sizes = [argument_bytes(s, t) for s, t in zip(shapes, types)]
    if argument < len(sizes) and sizes[argument]:
        return sizes[argument]
    return next((b for b in sizes if b), 0)


def argument_bytes(shape, typ) -> int:
    """Bytes of one argument's tensors (0 if it holds none or of a dtype spin does not know)."""
    dtypes = _TENSOR.findall(str(typ))
    if not dtypes:
        return 0
    shapes = _tensor_shapes(shape)
    widths = [DTYPE_BYTES.get(d.strip(), 0) for d in dtypes]
    widths += widths[-1:] * (len(shapes) - len(widths))
    return sum(math.prod(s) * w for s, w in zip(shapes, widths))


def _tensor_shapes(shape) -> list[list[int]]:
    """A tensor's shape is a list of ints ([] a scalar); anything nested is a list of them."""
    if isinstance(shape, list) and all(isinstance(x, int) for x in shape):
        return [shape]
    if isinstance(shape, list):
        return [s for item in shape for s in _tensor_shapes(item)]
    return []


def literal(text: str):
    """A Python literal as Chakra's converter writes IOInfo strings (``str(list)``); None if
    it is not one."""
    try:
        return ast.literal_eval(text) if text else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _rank(value) -> int:
    """A rank of a process group: an integer (a float, infinity or string is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_RANKS:
        raise ValueError(f"rank {value!r} is not an integer 0..{MAX_RANKS - 1}")
    return value


def process_groups(values, n_ranks: int) -> dict[str, tuple[int, ...]]:
    """Groups of a ``## process_group:init ##`` node's input values (a list whose first item
    is the JSON list of groups); empty ranks mean every rank. ValueError if malformed."""
    raw = values[0] if isinstance(values, list) and values else values
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
        return {str(item["pg_name"]): tuple(_rank(r) for r in item.get("ranks") or
                                            range(n_ranks))
                for item in items}
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise ValueError(f"process groups must be a JSON list of {{\"pg_name\", "
                         f"\"ranks\"}} objects ({type(exc).__name__}: {exc})") from None


def settle_cpu_collectives(ranks: tuple[RankTrace, ...], strict: bool = False
                           ) -> tuple[tuple[RankTrace, ...], tuple[str, ...]]:
    """Decide what the CPU-side communication ops named from their op (c10d collectives,
    ``c10d::send``, ``c10d::recv_``) are. In a trace that also has GPU-side communication
    (NCCL kernels) they are the host's launches of those kernels: replaying both would move
    every byte twice, so they become CPU ops (no time under ``--cpu-ops skip``, as ASTRA-sim
    runs CPU nodes on a queue of their own) and are listed as skipped; ``strict`` makes a
    skip an error. In a CPU-only trace (gloo) they are the communication, and an op spin
    cannot name, or a transfer whose peer the trace did not record, is an error."""
    gpu_side = any(op.is_comm and not op.cpu_op for r in ranks for op in r.ops)
    out, skipped = [], []
    for rank in ranks:
        ops = []
        for op in rank.ops:
            if op.is_comm and op.cpu_op and op.op:
                if gpu_side:
                    what = ("collective", "collectives") if op.kind == COLLECTIVE else \
                        ("transfer", "transfers")
                    if strict:
                        raise fail(rank.source, op.node_id, f"CPU-side {what[0]} {op.op} "
                                   f"would be skipped (the trace's NCCL kernels are its "
                                   f"{what[1]}); --strict refuses skips")
                    skipped.append(f"{rank.source}: node {op.node_id}: CPU-side {op.op} "
                                   f"(its NCCL kernel is the {what[0]})")
                    op = TraceOp(op.node_id, COMPUTE, op.name, op.deps, op.start_deps,
                                 duration_ns=op.duration_ns or 0.0, cpu_op=True, op=op.op)
                elif op.kind == COLLECTIVE and not op.collective:
                    raise fail(rank.source, op.node_id, f"CPU-side collective op {op.op!r} "
                               f"has no comm_type and spin cannot name it; known ops: "
                               f"{known_ops()}")
                elif op.kind != COLLECTIVE and op.peer == UNRESOLVED_PEER:
                    raise fail(rank.source, op.node_id, f"{op.op} records no "
                               f"{'destination' if op.kind == SEND else 'source'} rank "
                               f"(argument {PEER_ARGUMENT[op.kind][0]} of its inputs)")
            ops.append(op)
        out.append(replace(rank, ops=tuple(ops)))
    return tuple(out), tuple(skipped)
