"""A full message log is said, not mistaken for lost flows: the engine counts every delivered
message and post past the log's end, and the results and reports name what is missing."""
from __future__ import annotations

from spin import Scenario
from spin.config import EngineConfig, HostConfig
from spin.fabric import run_scenario
from spin.results.report import mark_table, run_summary
from spin.topologies import build_topology
from spin.workloads import build_workload, workload_report

FLOWS, ITERATIONS, LOG_ROWS = 4, 5, 7


def _scenario(log_rows: int) -> tuple[Scenario, object]:
    sc = Scenario(build_topology("star", hosts=FLOWS), host=HostConfig(memory_bytes=1 << 16),
                  engine=EngineConfig(log_messages=log_rows))
    workload = build_workload(sc, "permutation", message_bytes=1024, iterations=ITERATIONS, seed=1)
    return sc, workload


def test_messages_past_a_full_log_are_counted_and_named() -> None:
    sc, workload = _scenario(LOG_ROWS)
    result = run_scenario(sc, quiet=True)
    sent = FLOWS * ITERATIONS
    assert len(result.messages) == LOG_ROWS and len(result.posts) == LOG_ROWS
    assert result.unlogged == {"messages": sent - LOG_ROWS, "posts": sent - LOG_ROWS}
    note = f"message log full: {sent - LOG_ROWS} messages and {sent - LOG_ROWS} posts not logged"
    assert note in run_summary(result)
    report = workload_report(workload, sc, result)
    # a logged message whose post was not logged has no post time either
    assert report.missing_flows >= sent - LOG_ROWS
    assert f"{report.missing_flows} flows not in the results: {note}" in report.table()
    assert "frames dropped" not in report.table()
    # every host still received all its messages: the log was short, not the fabric
    assert sum(h.messages_received for h in result.hosts) == sent


def test_a_log_large_enough_leaves_nothing_out_and_workers_agree() -> None:
    sc, workload = _scenario(1 << 10)
    one = run_scenario(sc, quiet=True)
    assert one.unlogged == {} and "message log full" not in run_summary(one)
    assert workload_report(workload, sc, one).missing_flows == 0
    short, _ = _scenario(LOG_ROWS)
    two = run_scenario(short, workers=2, quiet=True)     # a log of LOG_ROWS rows per worker
    assert two.unlogged["messages"] == FLOWS * ITERATIONS - len(two.messages) > 0
    assert two.unlogged["posts"] == FLOWS * ITERATIONS - len(two.posts) > 0


def test_many_marks_are_summarised_per_label() -> None:
    sc, _ = _scenario(1 << 10)
    result = run_scenario(sc, quiet=True)
    n_marks = sum(len(per) for per in result.marks.values())
    assert n_marks > 24
    text = mark_table(result)
    assert f"marks ({n_marks}, per label)" in text and len(text.splitlines()) <= 3 + 25
    first_label = next(iter(result.marks))
    row = next(line for line in text.splitlines() if line.startswith(first_label))
    assert row.split()[1] == str(len(result.marks[first_label]))
