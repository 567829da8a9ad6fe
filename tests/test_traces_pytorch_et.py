"""PyTorch's own execution traces (``ExecutionTraceObserver`` JSON, one file per rank),
recorded by ``tools/record_torch_trace.py``: one data-parallel step of a small MLP
(Linear(64, 128), ReLU, Linear(128, 16); batch 32) on 2 and 4 gloo ranks, with the Kineto
trace of each rank. The replay must find one all-reduce per parameter, of the parameter's
size, in the order the script reduces them."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spin.cli import main
from spin.errors import TraceError
from spin.trace_formats import read_pytorch_et, read_trace
from spin.training import ReplayConfig, replay

DATA = Path(__file__).parent / "data" / "pytorch-et"
ROOT = Path(__file__).parent.parent
# model.parameters() in order: Linear(64, 128) weight and bias, Linear(128, 16) weight and
# bias, float32
GRADIENT_BYTES = [128 * 64 * 4, 128 * 4, 16 * 128 * 4, 16 * 4]


def et_only(tmp_path: Path, ranks: int) -> Path:
    """The recorded ET files of ``ranks`` ranks without their Kineto traces."""
    for r in range(ranks):
        shutil.copy(DATA / f"dp{ranks}" / f"dp.{r}.json.gz", tmp_path)
    return tmp_path / "dp"


def rank_doc(ranks: int, rank: int) -> dict:
    return json.loads(gzip.open(DATA / f"dp{ranks}" / f"dp.{rank}.json.gz").read())


def write_set(tmp_path: Path, docs: list) -> Path:
    for r, doc in enumerate(docs):
        text = doc if isinstance(doc, str) else json.dumps(doc)
        (tmp_path / f"step.{r}.json").write_text(text)
    return tmp_path / "step"


@pytest.mark.parametrize("ranks", [2, 4])
def test_the_recorded_step_has_one_allreduce_per_gradient(ranks):
    trace = read_trace(DATA / f"dp{ranks}" / "dp")
    assert (trace.fmt, trace.device, trace.n_ranks) == ("pytorch-et", "cpu", ranks)
    assert trace.groups == {"0": tuple(range(ranks))}
    for rank in trace.ranks:
        colls = [op for op in rank.ops if op.is_comm]
        assert [(op.collective, op.nbytes, op.group, op.op) for op in colls] == [
            ("all_reduce", b, "", "c10d::allreduce_") for b in GRADIENT_BYTES]
        compute = [op for op in rank.ops if not op.is_comm]
        # the Kineto trace times every op: forward, backward and the optimizer's updates
        assert all(op.duration_ns is not None and op.duration_ns > 0 for op in compute)
        assert sum(op.name == "aten::add_" for op in compute) == 4      # SGD, per parameter
        ids = [op.node_id for op in rank.ops]
        assert ids == sorted(ids)
        assert all(op.deps == (prev.node_id,) for prev, op in zip(rank.ops, rank.ops[1:]))


def test_without_kineto_compute_is_a_roofline_of_the_shapes(tmp_path):
    trace = read_trace(et_only(tmp_path, 2))
    ops = trace.ranks[0].ops
    linear = [op for op in ops if op.name == "aten::linear"]
    # forward: x[32, 64] @ W1[128, 64]^T, then h[32, 128] @ W2[16, 128]^T
    assert [op.flops for op in linear] == [2 * 32 * 64 * 128, 2 * 32 * 128 * 16]
    assert linear[0].tensor_bytes == (32 * 64 + 128 * 64 + 128 + 32 * 128) * 4
    mms = [op.flops for op in ops if op.name == "aten::mm"]
    assert sorted(mms) == sorted([2 * 32 * 16 * 128, 2 * 16 * 32 * 128, 2 * 128 * 32 * 64])
    views = [op for op in ops if op.name in ("aten::t", "aten::view", "aten::detach")]
    assert views and all(op.duration_ns == 0.0 for op in views)
    assert all(op.duration_ns is None for op in ops if op.name == "aten::add_")


@pytest.mark.parametrize("ranks", [2, 4])
def test_the_recorded_step_replays_to_completion(ranks):
    trace = read_trace(DATA / f"dp{ranks}" / "dp")
    report = replay(trace, config=ReplayConfig())
    assert report.host == "cpu"
    assert [(c.type, c.bytes) for c in report.collectives] == [
        ("all_reduce", b) for b in GRADIENT_BYTES]
    assert all(c.time_us > 0 for c in report.collectives)
    # four all-reduces of different sizes: not the uniform step whose values are checked
    assert report.allreduce_correct is None
    compute_us = [sum(op.duration_ns for op in r.ops if not op.is_comm) / 1000
                  for r in trace.ranks]
    for rank, row in zip(trace.ranks, report.ranks):
        assert row.compute_us == pytest.approx(compute_us[rank.rank], abs=1e-3)
        assert row.step_us == pytest.approx(row.compute_us + row.exposed_comm_us, abs=1e-3)


def test_spin_train_reads_a_rank_file_and_names_the_format(capsys):
    assert main(["train", str(DATA / "dp2" / "dp.0.json.gz"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "dp (pytorch-et)" in out and "host preset: cpu" in out
    assert out.count("all_reduce") == 4


def test_a_kineto_prefix_that_matches_nothing_is_named(tmp_path):
    prefix = et_only(tmp_path, 2)
    for r in range(2):   # rank r's ET with the other rank's profile: no rf_id in common?
        doc = json.loads(gzip.open(DATA / "dp2" / f"dp.{r}.kineto.json.gz").read())
        for e in doc["traceEvents"]:
            if "args" in e and "Record function id" in e["args"]:
                e["args"]["Record function id"] += 10**6
        (tmp_path / f"prof.{r}.json").write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=r"prof\.0\.json: no event has the record function"):
        read_trace(prefix, kineto=tmp_path / "prof")
    with pytest.raises(TraceError, match=r"other\.0\.json: Kineto trace missing"):
        read_trace(prefix, kineto=tmp_path / "other")


def test_gpu_kernels_of_the_kineto_trace_time_the_ops_that_launched_them(tmp_path):
    """On a GPU run an op's time is its kernels' (found by the External id of the op or of
    an op below it); an op that launched none ran on the CPU only and is not replayed. Here
    every matrix product gets one 5 µs kernel in the recorded profile."""
    prefix = et_only(tmp_path, 2)
    for r in range(2):
        doc = json.loads(gzip.open(DATA / "dp2" / f"dp.{r}.kineto.json.gz").read())
        launches = [e["args"]["External id"] for e in doc["traceEvents"]
                    if e.get("cat") == "cpu_op" and e["name"] in ("aten::addmm", "aten::mm")]
        doc["traceEvents"] += [{"ph": "X", "cat": "kernel", "name": "sgemm", "ts": 0,
                                "dur": 5.0, "args": {"External id": ext}} for ext in launches]
        (tmp_path / f"dp.{r}.kineto.json").write_text(json.dumps(doc))
    trace = read_trace(prefix)
    assert trace.device == "gpu"
    compute = [(op.name, op.duration_ns) for op in trace.ranks[0].ops if not op.is_comm]
    # the forward's addmm run inside aten::linear: the linear op is timed by its kernel
    assert sorted(compute) == sorted([("aten::linear", 5000.0)] * 2 + [("aten::mm", 5000.0)] * 3)
    assert [op.nbytes for op in trace.ranks[0].ops if op.is_comm] == GRADIENT_BYTES


def test_record_param_comms_sizes_and_groups_a_collective(tmp_path):
    """NCCL runs record a record_param_comms node under each c10d op: its element counts,
    dtype and pg_name win over the tensor arguments."""
    docs = []
    for r in range(2):
        doc = rank_doc(2, r)
        first = next(n for n in doc["nodes"] if n["name"] == "c10d::allreduce_")
        doc["nodes"].append({
            "id": first["id"] + 100000, "name": "record_param_comms", "ctrl_deps": first["id"],
            "inputs": {"values": [], "shapes": [], "types": []},
            "attrs": [{"name": "rf_id", "type": "uint64", "value": 999999},
                      {"name": "collective_name", "type": "string", "value": "allreduce"},
                      {"name": "in_msg_nelems", "type": "uint64", "value": 1000},
                      {"name": "out_msg_nelems", "type": "uint64", "value": 1000},
                      {"name": "dtype", "type": "string", "value": "BFloat16"},
                      {"name": "pg_name", "type": "string", "value": "0"}]})
        docs.append(doc)
    trace = read_pytorch_et(write_set(tmp_path, docs))
    colls = [op for op in trace.ranks[1].ops if op.is_comm]
    assert [op.nbytes for op in colls] == [2000, *GRADIENT_BYTES[1:]]
    assert colls[0].group == ""        # pg "0" holds every rank: the world


def hostile(tmp_path, change) -> Path:
    docs = [rank_doc(2, r) for r in range(2)]
    change(docs[1])
    return write_set(tmp_path, docs)


def first_named(doc, name):
    return next(n for n in doc["nodes"] if n["name"] == name)


def test_a_truncated_file_is_one_line(tmp_path):
    text = json.dumps(rank_doc(2, 1))
    prefix = write_set(tmp_path, [rank_doc(2, 0), text[: len(text) // 2]])
    with pytest.raises(TraceError, match=r"step\.1\.json: not valid JSON") as err:
        read_trace(prefix)
    assert "\n" not in str(err.value)



def test_a_number_of_thousands_of_digits_is_one_line(tmp_path):
    text = json.dumps(rank_doc(2, 1)).replace('"nodes"', '"big": ' + "9" * 5000 + ', "nodes"', 1)
    prefix = write_set(tmp_path, [rank_doc(2, 0), text])
    with pytest.raises(TraceError, match=r"step\.1\.json: holds a number of more than [\d,]+ "
                       r"digits; no trace value is that long$"):
        read_trace(prefix)

def test_a_string_size_is_named(tmp_path):
    def change(doc):
        first_named(doc, "c10d::allreduce_")["inputs"]["shapes"][0] = [["128", 64]]
    with pytest.raises(TraceError, match=r"step\.1\.json: node \d+: inputs shape dimension "
                       r"= '128': expected an integer"):
        read_trace(hostile(tmp_path, change))


@pytest.mark.parametrize("change, problem", [
    (lambda d: first_named(d, "aten::mm").__setitem__("ctrl_deps", [3]),
     r"node \d+: ctrl_deps = \[3\]: expected an integer"),
    (lambda d: d.pop("nodes"), r"not a PyTorch execution trace"),
    (lambda d: d["nodes"].append("node"), r"node #\d+: a node must be a JSON object"),
    (lambda d: first_named(d, "c10d::allreduce_").__setitem__("name", "c10d::gather_"),
     r"node \d+: communication op 'c10d::gather_': spin cannot name it"),
    (lambda d: first_named(d, "aten::mm")["inputs"]["shapes"].__setitem__(0, [2**40, 2**40]),
     r"node \d+: the size of its inputs = \d+: must be 0\.\.\d+"),
])
def test_malformed_nodes_are_one_line(tmp_path, change, problem):
    with pytest.raises(TraceError, match=r"step\.1\.json: " + problem) as err:
        read_trace(hostile(tmp_path, change))
    assert "\n" not in str(err.value)


def test_a_hostile_rf_id_beside_a_kineto_trace_is_named(tmp_path):
    docs = [rank_doc(2, r) for r in range(2)]
    first_named(docs[1], "aten::mm")["attrs"][0]["value"] = [1]     # rf_id
    prefix = write_set(tmp_path, docs)
    for r in range(2):
        shutil.copy(DATA / "dp2" / f"dp.{r}.kineto.json.gz",
                    tmp_path / f"step.{r}.kineto.json.gz")
    with pytest.raises(TraceError, match=r"step\.1\.json: node \d+: rf_id = \[1\]: expected"):
        read_trace(prefix)


def test_a_missing_rank_file_is_named(tmp_path):
    for r in (0, 1, 3):
        shutil.copy(DATA / "dp4" / f"dp.{r}.json.gz", tmp_path)
    with pytest.raises(TraceError, match=r"dp\.2\.json: rank file missing"):
        read_trace(tmp_path / "dp")
    shutil.copy(DATA / "dp4" / "dp.2.json.gz", tmp_path)
    (tmp_path / "dp.3.json.gz").unlink()     # the last one: the process group knows
    with pytest.raises(TraceError, match=r"dp\.3\.json: the default process group has 4 "
                       r"ranks but there are 3 rank files"):
        read_trace(tmp_path / "dp")


def test_recording_a_step_with_torch_and_replaying_it(tmp_path):
    """Runs the recording script itself (torch is no dependency of spin: skipped without)."""
    pytest.importorskip("torch", reason="torch is not installed: the recording script needs "
                        "it, the committed recordings are replayed by the other tests")
    pytest.importorskip("torch.distributed", reason="torch without torch.distributed")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "record_torch_trace.py"),
                          str(tmp_path), "--ranks", "2", "--kineto"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    trace = read_trace(tmp_path / "dp")
    assert [op.nbytes for op in trace.ranks[0].ops if op.is_comm] == GRADIENT_BYTES
    report = replay(trace)
    assert [c.bytes for c in report.collectives] == GRADIENT_BYTES
