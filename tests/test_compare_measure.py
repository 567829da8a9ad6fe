"""An offload comparison says what its completion time measured, and by default measures the
hosts that mark the workload's end, wherever they are: a receiver on host 1 is measured on
host 1, not on host 0."""
from __future__ import annotations

import pytest

from spin.results.compare import Metrics, OffloadComparison
from spin.errors import ConfigError
from spin.runs import compare
from spin.simulation import Scenario
from spin.topology import Topology

PS_PER_NS = 1000


def _send_to_receiver(nbytes: int, sender_done_ns: float | None = None) -> Scenario:
    """h0 sends ``nbytes`` to h1; h1 marks ``done`` when it has them. With ``sender_done_ns``
    h0 also marks ``done``, that long after its send (earlier than h1's)."""
    sc = Scenario(Topology.star(2))
    sender = sc.host_program("h0").mark("start").send("h1", nbytes, qp=1)
    if sender_done_ns is not None:
        sender.compute(sender_done_ns).mark("done")
    sc.host_program("h1").wait_recv(qp=1).mark("done")
    return sc


def test_default_measures_the_receiver_that_marks_done_on_host_1():
    result = _send_to_receiver(4096).run()
    m = Metrics.of(result)                       # today: "host 0 never reached it"
    assert m.completion_ps == result.mark("done", 1) - result.mark("start", 0) > 0
    assert m.measure == "mark 'start' (earliest: h0) -> mark 'done' (latest of 1 host: h1)"


def test_default_spans_to_the_latest_done_and_node_picks_one_host():
    result = _send_to_receiver(65536, sender_done_ns=1).run()
    sender_done, receiver_done = result.mark("done", 0), result.mark("done", 1)
    assert sender_done < receiver_done
    assert Metrics.of(result).completion_ps == receiver_done
    only_h0 = Metrics.of(result, node="h0")
    assert only_h0.completion_ps == sender_done
    assert only_h0.measure == "host 'h0' (node 0): mark 'start' -> mark 'done'"
    assert Metrics.of(result, node=1).measure == "host 'h1' (node 1): time 0 -> mark 'done'"
    assert Metrics.of(result, done=None).measure.endswith("-> the end of the run")
    with pytest.raises(ConfigError, match=r"node='h7' is not a host of this run; hosts: h0, h1"):
        Metrics.of(result, node="h7")


def test_the_comparison_table_prints_what_was_measured():
    slow, fast = _send_to_receiver(65536).run(), _send_to_receiver(4096).run()
    cmp = OffloadComparison.of(slow, fast, title="t")
    assert cmp.speedup > 1
    assert cmp.table().splitlines()[-1] == ("completion measured: mark 'start' (earliest: h0) -> "
                                            "mark 'done' (latest of 1 host: h1)")
    both = OffloadComparison.of(slow, fast, node=1)
    assert both.table().splitlines()[-1] == ("completion measured: host 'h1' (node 1): time 0 "
                                              "-> mark 'done'")
    back = OffloadComparison.from_dict(cmp.to_dict())
    assert back == cmp and back.baseline.measure == cmp.baseline.measure


def test_spin_testing_compare_measures_a_receiver_on_host_1():
    cmp = compare(_send_to_receiver(65536), _send_to_receiver(4096))
    assert cmp.speedup > 1 and "latest of 1 host: h1" in cmp.table()


def test_mistyped_marks_and_metrics_name_the_close_match():
    result = _send_to_receiver(64).run()
    with pytest.raises(ConfigError, match=r"label='don' is not a mark of this run \(did you "
                       r"mean 'done'\?\); marks: 'done', 'start'"):
        result.mark("don", 1)
    cmp = OffloadComparison.of(result, result)
    with pytest.raises(ConfigError, match=r"metric='pcie_byte' \(did you mean 'pcie_bytes'\?\)"):
        cmp.gain("pcie_byte")
