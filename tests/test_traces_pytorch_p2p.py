"""A converted PyTorch step with CPU-side c10d ops beside its GPU NCCL kernels, point-to-point
included: ``c10d::send``/``c10d::recv_`` record peer and tag among their arguments, and the
``ncclDevKernel_SendRecv`` kernel they launch records neither. Written with the project's
encoder in the two shapes Chakra's PyTorch converter has produced: CPU c10d ops as
``COMM_COLL_NODE`` (send and receive kernels typed by their launch), and before mid-2024 CPU
sends and receives as ``COMM_SEND_NODE``/``COMM_RECV_NODE`` with every ``SendRecv`` kernel a
send."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from spin.cli import main
from spin.errors import TraceError
from spin.trace_formats import read_chakra, read_trace
from spin.trace_formats.chakra_writer import ChakraNode, write_rank
from spin.training import ComputeModel, ReplayConfig, replay

# the world, and a pipeline pair of ranks 2 and 3 (their group ranks 0 and 1)
PGS = json.dumps([{"pg_name": "0", "pg_desc": "default_pg", "ranks": []},
                  {"pg_name": "2", "pg_desc": "pp", "ranks": [2, 3]}])
SEND_SCHEMA = ("c10d::send(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup "
               "process_group, int dst, int tag) -> __torch__.torch.classes.c10d.Work")
RECV_SCHEMA = ("c10d::recv_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup "
               "process_group, int src, int tag) -> __torch__.torch.classes.c10d.Work")
ACTIVATION = 64 * 256 * 4           # the float32 tensor [64, 256] each stage hands on
LAUNCH_US = 25                      # every CPU-side c10d op's measured duration


def args(peer, tag, shape=(64, 256), dtype="float"):
    """IOInfo strings of a c10d::send/recv_: tensors, process group, peer, tag."""
    return (str([[[7, 8, 0, 16384, 4, "cuda:0"]], "ProcessGroup", peer, tag]),
            str([[list(shape)], [], [], []]),
            str([f"GenericList[Tensor({dtype})]", "Object", "Int", "Int"]))


def c10d(node_id, op, schema, deps=(), inputs=None, node_type="COMM_COLL_NODE"):
    return ChakraNode(node_id, node_type, op, ctrl_deps=deps, duration_micros=LAUNCH_US,
                      attrs={"rf_id": node_id, "op_schema": schema, "is_cpu_op": True},
                      inputs=inputs)


def kernel(node_id, name, caller, size, pg="0", node_type="COMM_COLL_NODE"):
    return ChakraNode(node_id, node_type, name, ctrl_deps=(caller,), duration_micros=9,
                      attrs={"is_cpu_op": False, "comm_size": size, "pg_name": pg})


def record_param_comms(node_id, caller):
    """The CPU node between a c10d op and its kernel in PyTorch's traces."""
    return ChakraNode(node_id, "COMP_NODE", "record_param_comms", ctrl_deps=(caller,),
                      attrs={"is_cpu_op": True, "op_schema": ""})


def rank_nodes(rank: int, old_converter: bool = False) -> list[ChakraNode]:
    """Broadcast, a pipeline hand-off from rank 2 to rank 3 (group "2"), an all-reduce and a
    barrier (NCCL runs it as a one-float all-reduce)."""
    nodes = [ChakraNode(1, "METADATA_NODE", "## process_group:init ##",
                        attrs={"is_cpu_op": True}, inputs=(str([PGS]), "[[]]", "['String']")),
             c10d(10, "c10d::broadcast_", "c10d::broadcast_(Tensor[] tensors, ...)", (1,)),
             kernel(11, "ncclKernel_Broadcast_RING_LL_Sum_float", 10, 4096),
             ChakraNode(12, "COMP_NODE", "aten::mm", data_deps=(11,), duration_micros=40,
                        attrs={"is_cpu_op": False})]
    last = 12
    if rank in (2, 3):
        send = rank == 2
        op, schema = ("c10d::send", SEND_SCHEMA) if send else ("c10d::recv_", RECV_SCHEMA)
        cpu_type = ("COMM_SEND_NODE" if send else "COMM_RECV_NODE") if old_converter \
            else "COMM_COLL_NODE"
        gpu_type = "COMM_SEND_NODE" if send or old_converter else "COMM_RECV_NODE"
        nodes += [c10d(20, op, schema, (last,), args(1 if send else 0, 5), cpu_type),
                  record_param_comms(21, 20),
                  kernel(22, "ncclDevKernel_SendRecv", 21, ACTIVATION, "2", gpu_type)]
        last = 22
    nodes += [c10d(30, "c10d::allreduce_", "c10d::allreduce_(Tensor[] tensors, ...)", (last,)),
              kernel(31, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 1 << 16),
              c10d(40, "c10d::barrier", "c10d::barrier(Tensor tensor, ...)", (31,)),
              kernel(41, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 4)]
    return nodes


def write_step(tmp_path: Path, name="mixed", old_converter=False) -> Path:
    for rank in range(4):
        write_rank(tmp_path / f"{name}.{rank}.et", rank_nodes(rank, old_converter))
    return tmp_path / name


def twin(tmp_path: Path) -> Path:
    """The same step as ASTRA-sim writes it: comm_type, comm_dst/comm_src, no CPU ops."""
    def rank(r):
        nodes = [ChakraNode(11, "COMM_COLL_NODE", attrs={"comm_type": "broadcast",
                                                        "comm_size": 4096}),
                 ChakraNode(12, "COMP_NODE", data_deps=(11,), duration_micros=40)]
        last = 12
        if r in (2, 3):
            peer = "comm_dst" if r == 2 else "comm_src"
            nodes.append(ChakraNode(22, "COMM_SEND_NODE" if r == 2 else "COMM_RECV_NODE",
                                    ctrl_deps=(12,), attrs={peer: 5 - r, "comm_tag": 5,
                                                            "comm_size": ACTIVATION}))
            last = 22
        nodes += [ChakraNode(31, "COMM_COLL_NODE", ctrl_deps=(last,),
                             attrs={"comm_type": "all_reduce", "comm_size": 1 << 16}),
                  ChakraNode(41, "COMM_COLL_NODE", ctrl_deps=(31,),
                             attrs={"comm_type": "all_reduce", "comm_size": 4})]
        return nodes
    for r in range(4):
        write_rank(tmp_path / f"twin.{r}.et", rank(r))
    return tmp_path / "twin"


@pytest.mark.parametrize("old_converter", (False, True))
def test_kernels_are_the_communication_and_c10d_launches_are_skipped(tmp_path, old_converter):
    trace = read_chakra(write_step(tmp_path, old_converter=old_converter))
    assert trace.device == "gpu"
    sender, receiver = trace.ranks[2].by_id[22], trace.ranks[3].by_id[22]
    assert (sender.kind, sender.peer, sender.tag, sender.nbytes) == ("send", 3, 5, ACTIVATION)
    assert (receiver.kind, receiver.peer, receiver.tag) == ("recv", 2, 5)
    assert [(op.kind, op.cpu_op, op.op) for op in
            (trace.ranks[2].by_id[20], trace.ranks[3].by_id[20], trace.ranks[0].by_id[40])] == [
        ("compute", True, "c10d::send"), ("compute", True, "c10d::recv_"),
        ("compute", True, "c10d::barrier")]
    assert len(trace.skipped) == 4 * 3 + 2
    assert any(line.endswith("mixed.2.et: node 20: CPU-side c10d::send (its NCCL kernel is "
                             "the transfer)") for line in trace.skipped)


def test_the_step_replays_as_its_astra_sim_twin(tmp_path):
    """Skipped launches cost nothing (--cpu-ops skip, the default): the converted step takes
    the very time of the same step written with comm_type and comm_dst; --cpu-ops serial
    charges each launch its 25 us and still runs every collective and transfer once."""
    step = replay(read_chakra(write_step(tmp_path)))
    plain = replay(read_chakra(twin(tmp_path)))
    assert [(c.type, c.bytes, c.ranks) for c in step.collectives] == \
        [(c.type, c.bytes, c.ranks) for c in plain.collectives]
    assert [c.time_us for c in step.collectives] == [c.time_us for c in plain.collectives]
    assert [r.step_us for r in step.ranks] == [r.step_us for r in plain.ranks]
    serial = replay(read_chakra(write_step(tmp_path)),
                    config=ReplayConfig(compute=ComputeModel(cpu_ops="serial")))
    assert [(c.type, c.bytes) for c in serial.collectives] == \
        [(c.type, c.bytes) for c in step.collectives]
    for rank in (0, 2, 3):
        launches = 3 + (rank in (2, 3))
        assert serial.ranks[rank].compute_us == pytest.approx(
            step.ranks[rank].compute_us + launches * LAUNCH_US)


def test_cli_replays_the_mixed_step_and_strict_refuses(tmp_path, capsys):
    step = write_step(tmp_path)
    assert main(["train", str(step)]) == 0
    out = capsys.readouterr().out
    assert "skipped 14 CPU-side c10d launch(es)" in out
    assert main(["train", str(step), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"spin: error: {step}.0.et: node 10: CPU-side collective c10d::broadcast_ "
                   f"would be skipped (the trace's NCCL kernels are its collectives); "
                   f"--strict refuses skips")


def test_strict_names_a_skipped_send(tmp_path):
    for rank in range(4):
        write_rank(tmp_path / f"p.{rank}.et", [n for n in rank_nodes(rank)
                                               if n.node_id in (1, 20, 21, 22)])
    with pytest.raises(TraceError, match=r"p\.2\.et: node 20: CPU-side transfer c10d::send "
                       r"would be skipped \(the trace's NCCL kernels are its transfers\); "
                       r"--strict refuses skips"):
        read_trace(tmp_path / "p", strict=True)


# -- CPU-only steps (gloo): the c10d ops are the communication -------------------------------

@pytest.mark.parametrize("schemas", [
    (SEND_SCHEMA, RECV_SCHEMA),
    (SEND_SCHEMA.replace("int dst", "int dstRank"), RECV_SCHEMA.replace("int src", "int srcRank")),
    ("", "")])                          # no op_schema: peer and tag by position
def test_cpu_only_sends_and_receives_run(tmp_path, schemas):
    """Rank 0 sends a [64, 256] float tensor to rank 1 with tag 5: peer and tag from the
    op's arguments (named dst in PyTorch 2.x, dstRank before), size from the tensor."""
    write_rank(tmp_path / "g.0.et", [c10d(3, "c10d::send", schemas[0], inputs=args(1, 5))])
    write_rank(tmp_path / "g.1.et", [c10d(3, "c10d::recv_", schemas[1], inputs=args(0, 5))])
    trace = read_chakra(tmp_path / "g")
    assert trace.device == "cpu" and trace.skipped == ()
    (send,), (recv,) = trace.ranks[0].ops, trace.ranks[1].ops
    assert (send.kind, send.peer, send.tag, send.nbytes) == ("send", 1, 5, ACTIVATION)
    assert (recv.kind, recv.peer, recv.tag, recv.nbytes) == ("recv", 0, 5, ACTIVATION)
    rep = replay(trace)
    assert rep.host == "cpu" and rep.ranks[1].step_us > 0


@pytest.mark.parametrize("nodes, problem", [
    ([c10d(3, "c10d::send", SEND_SCHEMA, inputs=("[]", "[]", "[]")),
      c10d(3, "c10d::recv_", RECV_SCHEMA, inputs=args(0, 5))],
     "g.0.et: node 3: c10d::send records no destination rank (argument dst of its inputs)"),
    ([c10d(3, "c10d::send", SEND_SCHEMA, inputs=args(1, 5)),
      c10d(3, "c10d::recv_any_source_", "c10d::recv_any_source_(Tensor[] tensors, ...)",
           inputs=args(0, 5))],
     "g.1.et: node 3: CPU-side collective op 'c10d::recv_any_source_' has no comm_type and "
     "spin cannot name it; known ops: c10d::allreduce_"),
    ([kernel(4, "ncclDevKernel_SendRecv", 4, 64, node_type="COMM_SEND_NODE"),
      kernel(4, "ncclDevKernel_SendRecv", 4, 64, node_type="COMM_RECV_NODE")],
     "g.0.et: node 4: send kernel ncclDevKernel_SendRecv has no comm_dst and no c10d::send "
     "or c10d::recv_ among its callers (ctrl_deps) records its peer"),
])
def test_bad_transfers_are_one_line(tmp_path, nodes, problem):
    for rank, node in enumerate(nodes):
        node.ctrl_deps = ()
        write_rank(tmp_path / f"g.{rank}.et", [node])
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "g")
    assert problem in str(exc.value) and "\n" not in str(exc.value)
