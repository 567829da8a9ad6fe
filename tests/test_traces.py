"""Trace readers: Chakra ET (protobuf stream, gzip) and GOAL text, and the one-line errors every
bad trace gives (file, node, problem) before anything runs."""
from __future__ import annotations

import gzip
import resource
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from spin.errors import TraceError
from spin.trace_formats import read_chakra, read_goal, read_trace
from spin.trace_formats.chakra_writer import ChakraNode, encode_trace, write_rank
from spin.trace_formats.protowire import WireFormatError, fields, read_varint

DATA = Path(__file__).parent / "data" / "chakra-microbenchmarks"
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def coll(node_id, kind="all_reduce", size=1 << 20, deps=(), **attrs):
    return ChakraNode(node_id, "COMM_COLL_NODE", f"{kind}_{node_id}", data_deps=deps,
                      attrs={"comm_type": kind, "comm_size": size, **attrs})


def comp(node_id, us=5, deps=(), **attrs):
    return ChakraNode(node_id, "COMP_NODE", f"k{node_id}", data_deps=deps, duration_micros=us,
                      attrs=attrs)


def write_set(tmp_path: Path, per_rank, name="step") -> Path:
    for rank, nodes in enumerate(per_rank):
        write_rank(tmp_path / f"{name}.{rank}.et", nodes)
    return tmp_path / name


# -- the protobuf wire format ----------------------------------------------------------------

def test_varints_and_fields_decode_what_protobuf_encodes():
    assert read_varint(bytes([0xAC, 0x02]), 0) == (300, 2)
    assert read_varint(b"\xff" * 9 + b"\x01", 0) == ((1 << 64) - 1, 10)
    msg = bytes([0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69])   # field 1 = 150, field 2 = "hi"
    assert list(fields(msg)) == [(1, 0, 150), (2, 2, b"hi")]
    with pytest.raises(WireFormatError, match="cut off"):
        list(fields(msg[:-1]))
    with pytest.raises(WireFormatError, match="wire type 3"):
        list(fields(bytes([0x0B])))


def test_writer_reproduces_the_astra_sim_sample_byte_for_byte():
    """The reader and writer agree with the real files, not only with each other."""
    real = (DATA / "all_reduce/4npus_1MB/all_reduce.1.et").read_bytes()
    node = ChakraNode(1, "COMM_COLL_NODE", "all_reduce_4npus_1MB",
                      attrs={"is_cpu_op": False, "comm_type": 0, "comm_size": 1048576})
    assert encode_trace([node]) == real


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("npus", (4, 16))
def test_every_sample_set_reads(kind, npus):
    trace = read_chakra(DATA / kind / f"{npus}npus_1MB" / kind)
    assert trace.n_ranks == npus
    for rank in trace.ranks:
        (op,) = rank.ops
        assert (op.kind, op.collective, op.nbytes, op.cpu_op) == ("collective", kind, 1 << 20,
                                                                  False)


def test_chakra_fields_deps_groups_and_gzip(tmp_path):
    nodes = [comp(1, us=7), comp(2, us=0, deps=(1,), num_ops=10**9, tensor_size=4096),
             coll(3, "all_gather", 4096, deps=(2,), pg_name="tp", involved_dim=[True, False]),
             ChakraNode(4, "COMM_SEND_NODE", "s", ctrl_deps=(3,),
                        attrs={"comm_dst": 1, "comm_size": 64, "comm_tag": 9}),
             comp(5, us=1, is_cpu_op=True)]
    peer = [comp(1), comp(2, deps=(1,)), coll(3, "all_gather", 4096, pg_name="tp"),
            ChakraNode(4, "COMM_RECV_NODE", "r", attrs={"comm_src": 0, "comm_size": 64,
                                                       "comm_tag": 9})]
    write_rank(tmp_path / "t.0.et", nodes, compress=True)
    write_rank(tmp_path / "t.1.et", peer)
    (tmp_path / "t.groups.json").write_text('{"tp": [0, 1]}')
    trace = read_trace(tmp_path / "t.0.et")        # a rank file names its set too
    ops = trace.ranks[0].by_id
    assert ops[1].duration_ns == 7000 and ops[2].duration_ns is None
    assert (ops[2].flops, ops[2].tensor_bytes, ops[2].deps) == (1e9, 4096, (1,))
    assert (ops[3].group, ops[3].involved_dim) == ("tp", (True, False))
    assert (ops[4].kind, ops[4].peer, ops[4].tag, ops[4].deps) == ("send", 1, 9, (3,))
    assert ops[5].cpu_op and trace.groups == {"tp": (0, 1)}


def test_goal_reads_ops_dependencies_comments_and_placement(tmp_path):
    path = tmp_path / "s.goal"
    path.write_text("num_ranks 2\n/* two\nranks */\nrank 0 {\nl1: send 1024b to 1 tag 7 cpu 0\n"
                    "l2: calc 500  // ns\nl2 requires l1\nl3: recv 8b from 1 tag 8 nic 0\n"
                    "l3 irequires l2\n}\nrank 1 {\na: recv 1024b from 0 tag 7\n"
                    "b: send 8b to 0 tag 8\nb requires a\n}\n")
    trace = read_goal(path)
    r0 = trace.ranks[0].ops
    assert [(o.kind, o.name, o.nbytes, o.peer, o.tag) for o in r0] == [
        ("send", "l1", 1024, 1, 7), ("compute", "l2", 0, -1, 0), ("recv", "l3", 8, 1, 8)]
    assert r0[1].deps == (0,) and r0[1].duration_ns == 500 and r0[2].start_deps == (1,)


# -- bad traces: one line naming the file, the node and the problem ------------------------------

def _first_line_only(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_truncated_rank_file(tmp_path):
    prefix = write_set(tmp_path, [[comp(1), coll(2, deps=(1,))], [comp(1), coll(2)]])
    path = tmp_path / "step.0.et"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(TraceError) as exc:
        read_chakra(prefix)
    assert _first_line_only(exc).startswith(f"{path}: not a valid Chakra ET stream")
    assert "after node 1" in str(exc.value) and "cut off" in str(exc.value)


def test_corrupt_gzip(tmp_path):
    prefix = write_set(tmp_path, [[coll(1)], [coll(1)]])
    path = tmp_path / "step.1.et"
    data = gzip.compress(path.read_bytes())
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(TraceError, match=r"step\.1\.et: gzip stream is corrupt or truncated"):
        read_chakra(prefix)


def test_a_gzip_bomb_is_refused_from_its_first_mebibyte(tmp_path):
    """Valid records, then a gigabyte of zeros (1 MB on disk): refused at the first zero-length
    record without inflating the rest (it once took 26 s and 4.3 GB before the same line)."""
    prefix = write_set(tmp_path, [[coll(1)], [coll(1)]])
    for rank in (0, 1):
        path = tmp_path / f"step.{rank}.et"
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        data = packer.compress(path.read_bytes())
        zeros = bytes(1 << 20)
        for _ in range(1024):
            data += packer.compress(zeros)
        path.write_bytes(data + packer.flush())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TraceError, match=r"step\.0\.et: node 0: node type INVALID_NODE"):
        read_chakra(prefix)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 256 * 1024            # far from the gigabyte the file inflates to


@pytest.mark.parametrize("node, problem", [
    (ChakraNode(3, "MEM_LOAD_NODE", "m"), "node 3: node type MEM_LOAD_NODE is not replayable"),
    (coll(3, kind="reduce"), "node 3: collective type reduce is not replayable; valid types"),
    (ChakraNode(3, "COMM_COLL_NODE", "c", attrs={"comm_type": 42, "comm_size": 8}),
     "node 3: collective type code 42 is not replayable"),
    (comp(3, deps=(99,)), "node 3: depends on node 99, which the file does not have"),
    (coll(3, size=0), "node 3: all_reduce of 0 B: the size must be > 0"),
    (ChakraNode(3, "COMM_COLL_NODE", "c", attrs={"comm_type": 0}),
     "node 3: attribute comm_size missing (all_reduce needs its size)"),
    (coll(3, pg_name="nope"), "node 3: process group 'nope' is not defined"),
])
def test_bad_node(tmp_path, node, problem):
    prefix = write_set(tmp_path, [[comp(1), node], [comp(1)]])
    with pytest.raises(TraceError) as exc:
        read_chakra(prefix)
    assert _first_line_only(exc).startswith(f"{tmp_path / 'step.0.et'}: {problem}")


def test_unknown_node_type_code(tmp_path):
    node = ChakraNode(3, "COMP_NODE", "x")
    raw = node.encode().replace(bytes([0x18, 4]), bytes([0x18, 42]))     # type = 42
    (tmp_path / "step.0.et").write_bytes(encode_trace([]) + bytes([len(raw)]) + raw)
    with pytest.raises(TraceError, match=r"step\.0\.et: node 3: node type code 42 is not"):
        read_chakra(tmp_path / "step")


def test_dependency_cycle(tmp_path):
    prefix = write_set(tmp_path, [[comp(1, deps=(3,)), comp(2, deps=(1,)), comp(3, deps=(2,))]])
    with pytest.raises(TraceError, match=r"step\.0\.et: node 1: dependency cycle 1 -> 2 -> 3 -> 1"):
        read_chakra(prefix)


def test_missing_rank_file(tmp_path):
    write_set(tmp_path, [[coll(1)], [coll(1)], [coll(1)]])
    (tmp_path / "step.1.et").unlink()
    with pytest.raises(TraceError, match=r"step\.1\.et: rank file missing \(found 2 of ranks "
                                         r"0\.\.2\)"):
        read_chakra(tmp_path / "step")


def test_collectives_that_do_not_match_across_ranks(tmp_path):
    prefix = write_set(tmp_path, [[coll(1, size=64)], [coll(1, size=128)]])
    with pytest.raises(TraceError, match=r"step\.1\.et: node 1: collective #0 of group 'world' "
                                         r"is all_reduce of 128 B here but all_reduce of 64 B"):
        read_chakra(prefix)


def test_a_collective_missing_on_the_first_rank_is_named_as_missing(tmp_path):
    prefix = write_set(tmp_path, [[comp(1)], [coll(1, size=64)], [coll(1, size=64)]])
    with pytest.raises(TraceError, match=r"step\.1\.et: node 1: collective #0 of group 'world' "
                                         r"is all_reduce of 64 B here but nothing on rank 0"):
        read_chakra(prefix)
    prefix = write_set(tmp_path, [[coll(1, size=64)], [comp(1)]])     # missing on the other
    with pytest.raises(TraceError, match=r"step\.0\.et: node 1: collective #0 of group 'world' "
                                         r"is all_reduce of 64 B here but nothing on rank 1"):
        read_chakra(prefix)


def test_send_without_its_receive(tmp_path):
    send = ChakraNode(2, "COMM_SEND_NODE", "s", attrs={"comm_dst": 1, "comm_size": 64})
    prefix = write_set(tmp_path, [[comp(1), send], [comp(1)]])
    with pytest.raises(TraceError, match=r"step\.0\.et: node 2: 1 send\(s\) of 64 B from rank 0 "
                                         r"to rank 1 with tag 0 but 0 matching recv"):
        read_chakra(prefix)


@pytest.mark.parametrize("body, problem", [
    ("rank 0 {\nl1: calc 5\n", "rank 0 block not closed (truncated file?)"),
    ("rank 0 {\nl1: wait 5\n}\nrank 1 {\n}\n", ":3: node l1: unknown operation 'wait'"),
    ("rank 0 {\nl1: recieve 8b from 1\n}\nrank 1 {\n}\n",
     ":3: node l1: unknown operation 'recieve' (did you mean 'recv'?); valid operations: send, "
     "recv, calc"),
    ("rank 0 {\nl1: calc 5\nl1 requires l9\n}\nrank 1 {\n}\n",
     ":4: node l1: l1 requires l9, which rank 0 does not define"),
    ("rank 0 {\nl1: calc 5\nl9 requires l1\n}\nrank 1 {\n}\n",
     ":4: node l9: dependency of l9, which rank 0 does not define"),
    ("rank 0 {\nl1: calc -100\n}\nrank 1 {\n}\n",
     ":3: node l1: cannot read 'calc -100'; expected 'calc <nanoseconds, an integer "
     "0..1,000,000,000,000>'"),
    ("rank 0 {\nl1: send 8 to 1\n}\nrank 1 {\n}\n",
     ":3: node l1: cannot read 'send 8 to 1'; expected 'send <bytes>b to <rank> [tag <tag>]"),
    ("rank 0 {\nl1: calc 5\nl2: calc 5\nl1 requires l2\nl2 requires l1\n}\nrank 1 {\n}\n",
     " rank 0: node l1: dependency cycle l1 -> l2 -> l1"),
    ("rank 0 {\nl1: send 0b to 1 tag 0\n}\nrank 1 {\nl1: recv 0b from 0 tag 0\n}\n",
     " rank 0: node l1: send of 0 B: the size must be > 0"),
    ("rank 0 {\nl1: recv 8b from -1 tag 0\n}\nrank 1 {\n}\n",
     ":3: node l1: recv with peer -1 and tag 0: any-source"),
    ("rank 0 {\nl1: calc 5\n}\n", "num_ranks 2 but rank 1 has no block"),
])
def test_bad_goal(tmp_path, body, problem):
    path = tmp_path / "bad.goal"
    path.write_text("num_ranks 2\n" + body)
    with pytest.raises(TraceError) as exc:
        read_goal(path)
    assert _first_line_only(exc).startswith(f"{path}") and problem in str(exc.value)


def test_a_dependency_may_name_a_label_defined_after_it(tmp_path):
    """The format does not order them; Schedgen writes 'requires' lines after all labels."""
    path = tmp_path / "fwd.goal"
    path.write_text("num_ranks 1\nrank 0 {\nl1 requires l2\nl1: calc 5\nl2: calc 7\n}\n")
    ops = read_goal(path).ranks[0].ops
    assert [op.name for op in ops] == ["l1", "l2"] and ops[0].deps == (1,)


@pytest.mark.parametrize("line", ["num_ranks -3", "num_ranks two"])
def test_a_bad_num_ranks_says_what_it_must_be(tmp_path, line):
    path = tmp_path / "bad.goal"
    path.write_text(line + "\n")
    with pytest.raises(TraceError, match="num_ranks must be an integer 1..1,048,576"):
        read_goal(path)


def test_placements_are_read_and_said_to_be_unmodelled(tmp_path):
    path = tmp_path / "cpus.goal"
    path.write_text("num_ranks 1\nrank 0 {\nl1: calc 5 cpu 0\nl2: calc 5 cpu 1\n}\n")
    assert read_goal(path).notes == ("GOAL 'cpu N' and 'nic N' placements are read but not "
                                     "modelled: each rank's operations run on one timeline, as "
                                     "on one core",)
    path.write_text("num_ranks 1\nrank 0 {\nl1: calc 5\n}\n")
    assert read_goal(path).notes == ()


def test_cli_bad_trace_is_one_line_and_writes_nothing(tmp_path):
    prefix = write_set(tmp_path, [[comp(1, deps=(7,))], [comp(1)]])
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "spin.cli", "train", str(prefix), "--json",
                        str(out)], check=False, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"spin: error: {tmp_path / 'step.0.et'}: node 1: depends on "
                                f"node 7, which the file does not have")
    assert not out.exists()


def test_gz_rank_files_and_a_missing_goal_file(tmp_path):
    write_rank(tmp_path / "z.0.et.gz", [coll(1)], compress=True)
    write_rank(tmp_path / "z.1.et.gz", [coll(1)], compress=True)
    assert read_trace(tmp_path / "z.1.et.gz").n_ranks == 2
    with pytest.raises(TraceError, match=r"nope\.goal: GOAL file does not exist"):
        read_trace(tmp_path / "nope.goal")
