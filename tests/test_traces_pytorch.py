"""Chakra traces converted from PyTorch: collectives named by their op (c10d ops on the CPU,
NCCL kernels on the GPU) instead of ``comm_type``, sizes from tensor arguments, process
groups from the trace's ``## process_group:init ##`` node. Each case is a small trace written
with the project's encoder, shaped as Chakra's PyTorch converter writes them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from spin.cli import main
from spin.errors import TraceError
from spin.trace_formats import read_chakra
from spin.trace_formats.chakra_writer import ChakraNode, write_rank
from spin.training import ReplayConfig, replay

PGS = json.dumps([{"pg_name": "0", "pg_desc": "default_pg", "ranks": []},
                  {"pg_name": "1", "pg_desc": "tp", "ranks": [0, 1]}])


def pg_init(node_id=1):
    return ChakraNode(node_id, "METADATA_NODE", "## process_group:init ##",
                      attrs={"is_cpu_op": True}, inputs=(str([PGS]), "[[]]", "['String']"))


def cpu_coll(node_id, op, deps=(), us=30, inputs=None):
    """A CPU-side collective as the converter writes one: op_schema, no comm_type."""
    return ChakraNode(node_id, "COMM_COLL_NODE", op, ctrl_deps=deps, duration_micros=us,
                      attrs={"op_schema": f"{op}(Tensor[] tensors, ...) -> Tensor[]",
                             "is_cpu_op": True}, inputs=inputs)


def kernel(node_id, name, size, parent, pg="0"):
    """A GPU-side NCCL kernel as the converter writes one: comm_size and pg_name."""
    return ChakraNode(node_id, "COMM_COLL_NODE", name, ctrl_deps=(parent,),
                      attrs={"is_cpu_op": False, "comm_size": size, "pg_name": pg})


def gpu_rank(tp: bool):
    nodes = [pg_init(), cpu_coll(432, "c10d::broadcast_", deps=(1,)),
             kernel(433, "ncclKernel_Broadcast_RING_LL_Sum_float", 4096, 432),
             ChakraNode(434, "COMP_NODE", "aten::mm", data_deps=(433,), duration_micros=20),
             cpu_coll(435, "c10d::allreduce_", deps=(434,)),
             kernel(436, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1 << 16, 435)]
    if tp:
        nodes += [cpu_coll(437, "c10d::_allgather_base_", deps=(436,)),
                  kernel(438, "ncclDevKernel_AllGather_RING_LL", 8192, 437, pg="1")]
    return nodes


def gpu_set(tmp_path: Path, name="conv") -> Path:
    for rank in range(4):
        write_rank(tmp_path / f"{name}.{rank}.et", gpu_rank(rank < 2))
    return tmp_path / name


def plain_set(tmp_path: Path) -> Path:
    """The same step as ASTRA-sim-style nodes: comm_type, comm_size, groups in a file."""
    def rank(tp):
        nodes = [ChakraNode(433, "COMM_COLL_NODE", attrs={"comm_type": "broadcast",
                                                         "comm_size": 4096, "pg_name": "0"}),
                 ChakraNode(434, "COMP_NODE", data_deps=(433,), duration_micros=20),
                 ChakraNode(436, "COMM_COLL_NODE", ctrl_deps=(434,),
                            attrs={"comm_type": "all_reduce", "comm_size": 1 << 16,
                                   "pg_name": "0"})]
        if tp:
            nodes.append(ChakraNode(438, "COMM_COLL_NODE", ctrl_deps=(436,),
                                    attrs={"comm_type": "all_gather", "comm_size": 8192,
                                           "pg_name": "1"}))
        return nodes
    for r in range(4):
        write_rank(tmp_path / f"plain.{r}.et", rank(r < 2))
    (tmp_path / "plain.groups.json").write_text(json.dumps({"0": [0, 1, 2, 3], "1": [0, 1]}))
    return tmp_path / "plain"


def test_nccl_kernels_are_the_collectives_and_cpu_launches_are_skipped(tmp_path):
    trace = read_chakra(gpu_set(tmp_path))
    assert trace.device == "gpu"
    assert trace.groups == {"0": (0, 1, 2, 3), "1": (0, 1)}
    ops = trace.ranks[0].by_id
    assert [(ops[i].collective, ops[i].nbytes, ops[i].group, ops[i].op)
            for i in (433, 436, 438)] == [
        ("broadcast", 4096, "0", "ncclKernel_Broadcast_RING_LL_Sum_float"),
        ("all_reduce", 1 << 16, "0", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        ("all_gather", 8192, "1", "ncclDevKernel_AllGather_RING_LL")]
    assert [(ops[i].kind, ops[i].cpu_op, ops[i].duration_ns) for i in (432, 435, 437)] == [
        ("compute", True, 30_000.0)] * 3
    assert len(trace.skipped) == 3 * 2 + 2 * 2
    assert trace.skipped[0].endswith("conv.0.et: node 432: CPU-side c10d::broadcast_ (its "
                                     "NCCL kernel is the collective)")


def test_converted_trace_replays_as_its_comm_type_twin(tmp_path):
    """Skipped launches cost nothing (--cpu-ops skip), so the converted step takes exactly
    the time of the same step written with comm_type; --cpu-ops serial charges them."""
    conv = replay(read_chakra(gpu_set(tmp_path)))
    plain = replay(read_chakra(plain_set(tmp_path)))
    assert [(c.type, c.bytes, c.ranks) for c in conv.collectives] == \
        [(c.type, c.bytes, c.ranks) for c in plain.collectives]
    assert [c.time_us for c in conv.collectives] == [c.time_us for c in plain.collectives]
    assert conv.step_us == plain.step_us
    from spin.training import ComputeModel
    serial = replay(read_chakra(gpu_set(tmp_path)),
                    config=ReplayConfig(compute=ComputeModel(cpu_ops="serial")))
    assert serial.ranks[0].compute_us == pytest.approx(conv.ranks[0].compute_us + 3 * 30)


def test_strict_refuses_to_skip(tmp_path):
    with pytest.raises(TraceError, match=r"conv\.0\.et: node 432: CPU-side collective "
                       r"c10d::broadcast_ would be skipped .* --strict refuses skips"):
        read_chakra(gpu_set(tmp_path), strict=True)


def test_cli_replays_the_converted_trace_and_says_what_it_skipped(tmp_path, capsys):
    assert main(["train", str(gpu_set(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "skipped 10 CPU-side c10d launch(es)" in out
    assert "broadcast" in out and "all_gather" in out
    assert main(["train", str(gpu_set(tmp_path)), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spin: error: ") and "node 432" in err and "\n" not in err


def tensors(shape_per_arg, types):
    return (str([[1, 1, 0, 1, 4, "cpu"]] * len(types)), str(shape_per_arg), str(types))


CPU_OPS = [  # (op, argument shapes, argument types, collective, nccl-tests S in bytes)
    ("c10d::allreduce_", [[[256, 4]], []], ["GenericList[Tensor(float)]", "Int"],
     "all_reduce", 4096),
    ("c10d::broadcast_", [[[10, 10]], []], ["GenericList[Tensor(double)]", "Int"],
     "broadcast", 800),
    ("c10d::_allgather_base_", [[4096], [1024]], ["Tensor(c10::BFloat16)", "Tensor(c10::BFloat16)"],
     "all_gather", 8192),
    ("c10d::allgather_", [[[[512]] * 4], [[512]]],
     ["GenericList[GenericList[Tensor(float)]]", "GenericList[Tensor(float)]"],
     "all_gather", 8192),
    ("c10d::_reduce_scatter_base_", [[256], [1024]], ["Tensor(float)", "Tensor(float)"],
     "reduce_scatter", 4096),
    ("c10d::reduce_scatter_", [[[256]], [[[256]] * 4]],
     ["GenericList[Tensor(half)]", "GenericList[GenericList[Tensor(half)]]"],
     "reduce_scatter", 2048),
    ("c10d::alltoall_base_", [[1024], [1024], [], []],
     ["Tensor(long)", "Tensor(long)", "GenericList[Int]", "GenericList[Int]"],
     "all_to_all", 8192),
    ("c10d::barrier", [[]], ["Tensor(float)"], "barrier", 0),
]


@pytest.mark.parametrize("op, shapes, types, kind, nbytes", CPU_OPS)
def test_cpu_only_trace_names_collectives_from_their_op(tmp_path, op, shapes, types, kind,
                                                         nbytes):
    """A CPU-only run (gloo): the c10d ops are the collectives, sized from their tensors."""
    for r in range(2):
        write_rank(tmp_path / f"g.{r}.et", [cpu_coll(7, op, inputs=tensors(shapes, types))])
    trace = read_chakra(tmp_path / "g")
    assert trace.device == "cpu" and trace.skipped == ()
    (o,) = trace.ranks[1].ops
    assert (o.kind, o.collective, o.nbytes, o.op) == ("collective", kind, nbytes, op)


def test_cpu_only_trace_replays_with_comm_size(tmp_path):
    for r in range(2):
        node = cpu_coll(7, "c10d::allreduce_")
        node.attrs["comm_size"] = 4096
        write_rank(tmp_path / f"g.{r}.et", [node])
    rep = replay(read_chakra(tmp_path / "g"))
    (call,) = rep.collectives
    assert (rep.host, call.type, call.bytes, rep.allreduce_correct) == \
        ("cpu", "all_reduce", 4096, True)


@pytest.mark.parametrize("node, problem", [
    (kernel(5, "ncclKernel_Reduce_RING_LL_Sum_float", 64, 5),
     "node 5: collective op 'ncclKernel_Reduce_RING_LL_Sum_float' has no comm_type and spin "
     "cannot name it; known ops: c10d::allreduce_"),
    (cpu_coll(6, "c10d::gather_"),
     "node 6: CPU-side collective op 'c10d::gather_' has no comm_type and spin cannot name "
     "it; known ops: c10d::allreduce_"),
    (cpu_coll(8, "c10d::allreduce_", inputs=("[]", "[]", "[]")),
     "node 8: all_reduce of 0 B: the size must be > 0"),
])
def test_unknown_ops_are_one_line_naming_file_node_and_op(tmp_path, node, problem):
    node.ctrl_deps = ()
    for r in range(2):
        write_rank(tmp_path / f"u.{r}.et", [node])
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "u")
    assert f"u.0.et: {problem}" in str(exc.value) and "\n" not in str(exc.value)


def test_malformed_process_groups_name_the_node(tmp_path):
    bad = ChakraNode(1, "METADATA_NODE", "## process_group:init ##",
                     inputs=(str(['{"pg_name": 0']), "[[]]", "['String']"))
    write_rank(tmp_path / "m.0.et", [bad])
    with pytest.raises(TraceError, match=r"m\.0\.et: node 1: process groups must be a JSON "
                       r"list of \{\"pg_name\", \"ranks\"\} objects"):
        read_chakra(tmp_path / "m")
