"""Hostile traces: wrong types, absurd sizes, sparse ranks and gzip bombs end with one line
naming the file and the problem, before anything large is allocated."""
from __future__ import annotations

import gzip
import json

import pytest

from spin.errors import TraceError
from spin.trace_formats import read_chakra, read_goal
from spin.trace_formats.chakra_writer import ChakraNode, write_rank


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def _pair(tmp_path, node):
    write_rank(tmp_path / "step.0.et", [node])
    write_rank(tmp_path / "step.1.et", [node])
    return tmp_path / "step"


@pytest.mark.parametrize("size, problem", [
    ("1048576", "comm_size = '1048576': expected an integer"),
    ([1, 0], "comm_size = [True, False]: expected an integer"),
    (1 << 60, f"comm_size = {1 << 60}: must be 0..{1 << 50}"),
])
def test_a_chakra_size_of_the_wrong_type_or_range_is_named(tmp_path, size, problem):
    node = ChakraNode(1, "COMM_COLL_NODE", "ar", attrs={"comm_type": "all_reduce",
                                                          "comm_size": size})
    with pytest.raises(TraceError) as exc:
        read_chakra(_pair(tmp_path, node))
    text = _one_line(exc)
    assert "step.0.et: node 1: comm_size" in text
    assert problem.split(":")[0] in text


def test_a_rank_file_that_is_a_directory(tmp_path):
    node = ChakraNode(1, "COMP_NODE", "k", duration_micros=5)
    write_rank(tmp_path / "step.0.et", [node])
    (tmp_path / "step.1.et").mkdir()
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "step")
    assert "step.1.et: cannot read the rank file" in _one_line(exc)


def test_sparse_rank_ids_are_refused_before_allocating(tmp_path):
    node = ChakraNode(1, "COMP_NODE", "k", duration_micros=5)
    write_rank(tmp_path / "step.0.et", [node])
    write_rank(tmp_path / f"step.{10 ** 12}.et", [node])
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "step")
    assert "a trace has at most 1,048,576 ranks" in _one_line(exc)


def test_a_gzip_bomb_stops_at_the_size_limit(tmp_path, monkeypatch):
    """Records valid all along: only the size limit stops the inflation."""
    monkeypatch.setenv("SPIN_TRACE_MAX_BYTES", "1MiB")
    node = ChakraNode(1, "COMP_NODE", "k", duration_micros=5)
    write_rank(tmp_path / "step.0.et", [node])
    many = tmp_path / "many.et"
    write_rank(many, [ChakraNode(i, "COMP_NODE", "k", duration_micros=5)
                      for i in range(1, 120_001)])
    assert many.stat().st_size > 1 << 20
    (tmp_path / "step.1.et").write_bytes(gzip.compress(many.read_bytes()))
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "step")
    assert "step.1.et: larger than 1,048,576 B once gunzipped" in _one_line(exc)
    assert "SPIN_TRACE_MAX_BYTES" in str(exc.value)


def test_a_gzip_bomb_of_zeros_is_refused_from_its_first_records(tmp_path, monkeypatch):
    """64 MiB of zeros: the first mebibyte holds an invalid record, so the rest is never
    inflated."""
    node = ChakraNode(1, "COMP_NODE", "k", duration_micros=5)
    write_rank(tmp_path / "step.0.et", [node])
    (tmp_path / "step.1.et").write_bytes(gzip.compress(bytes(64 << 20)))
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "step")
    assert "step.1.et: node 0: node type INVALID_NODE is not replayable" in _one_line(exc)


def test_a_group_with_an_infinite_rank(tmp_path):
    node = ChakraNode(1, "COMP_NODE", "k", duration_micros=5)
    prefix = _pair(tmp_path, node)
    (tmp_path / "step.groups.json").write_text(json.dumps({"tp": [0, float("inf")]}))
    with pytest.raises(TraceError) as exc:
        read_chakra(prefix)
    assert "step.groups.json" in _one_line(exc) and "inf" in str(exc.value)


@pytest.mark.parametrize("body, problem", [
    ("num_ranks 1000000000\n", "num_ranks 1000000000: at most 1,048,576"),
    ("num_ranks 2\nrank 0 {\nl1: send " + "9" * 5000 + "b to 1\n}\n",
     "size a number of 5,000 digits"),
    ("num_ranks 2\nrank 0 {\nl1: calc " + "9" * 30 + "\n}\n", "calc time (ns) a number of 30"),
])
def test_absurd_goal_numbers_are_one_line(tmp_path, body, problem):
    path = tmp_path / "bad.goal"
    path.write_text(body)
    with pytest.raises(TraceError) as exc:
        read_goal(path)
    assert problem in _one_line(exc)


def test_a_goal_schedule_past_the_operation_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("SPIN_GOAL_MAX_OPS", "10")
    path = tmp_path / "long.goal"
    path.write_text("num_ranks 1\nrank 0 {\n" + "".join(f"c{i}: calc 5\n" for i in range(11))
                    + "}\n")
    with pytest.raises(TraceError) as exc:
        read_goal(path)
    assert "more than 10 operations" in _one_line(exc)
    monkeypatch.setenv("SPIN_GOAL_MAX_OPS", "11")
    assert len(read_goal(path).ranks[0].ops) == 11


def test_a_chakra_rank_past_the_node_limit(tmp_path, monkeypatch):
    nodes = [ChakraNode(i, "COMP_NODE", f"c{i}", duration_micros=1) for i in range(11)]
    write_rank(tmp_path / "long.0.et", nodes)
    monkeypatch.setenv("SPIN_TRACE_MAX_NODES", "10")
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "long")
    assert "more than 10 nodes" in _one_line(exc)
    monkeypatch.setenv("SPIN_TRACE_MAX_NODES", "11")
    assert len(read_chakra(tmp_path / "long").ranks[0].ops) == 11
    monkeypatch.setenv("SPIN_TRACE_MAX_NODES", "many")
    with pytest.raises(TraceError) as exc:
        read_chakra(tmp_path / "long")
    assert "SPIN_TRACE_MAX_NODES: 'many': expected a count of nodes >= 1" in _one_line(exc)
