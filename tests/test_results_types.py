"""Typed results: records round-trip through JSON and merge by owner, with no engine needed."""
from __future__ import annotations

import json

from spin.results import (HandlerCalls, HostStats, LinkStats, MessageRecord, NicStats, RunResult,
                          SwitchStats, Totals)


def _part(node: int, switch: bool) -> RunResult:
    return RunResult(
        end_time_ps=1000 * (node + 1), events=10 + node, packet_events=5 + node,
        messages=[MessageRecord(src=1 - node, dst=node, qp=3, bytes=64, t_post_ps=None,
                                t_first_arrival_ps=100 + node, t_done_ps=200 + node,
                                handled_by_nic=bool(node))],
        links=[LinkStats(link=node, from_device=f"h{node}", to_device="s0", tx_frames=2,
                         tx_bytes=100 + node, drops=0, max_queue_bytes=64, busy_ps=30)],
        nics=[NicStats(node=node, dma_write_bytes=80, dma_read_bytes=node * 8, hpu_busy_ps=7 * node,
                       handler_calls=HandlerCalls(header=node, payload=2 * node, completion=node))],
        hosts=[HostStats(node=node, cpu_busy_ps=1500, finished=True, messages_received=1,
                         events_received=0)],
        switches=[SwitchStats(name="s0", drops={"queue_full": 2})] if switch else [],
        drops={"queue_full": 2} if switch else {}, marks={"done": {node: 900 + node}},
        host_memory_sha256={node: "ab" * 32}, posts=[[1 - node, node, 3, 64, 10 + node]])


def test_run_result_round_trips_through_json():
    r = RunResult.merge([_part(1, False), _part(0, True)])
    back = RunResult.from_dict(json.loads(r.to_json()))
    assert back == r
    assert isinstance(back.nics[0], NicStats)
    assert isinstance(back.nics[0].handler_calls, HandlerCalls)
    assert isinstance(back.links[0], LinkStats) and isinstance(back.switches[0], SwitchStats)


def test_merge_orders_by_owner_and_sums_totals():
    r = RunResult.merge([_part(1, False), _part(0, True)])
    assert [n.node for n in r.nics] == [0, 1] and [h.node for h in r.hosts] == [0, 1]
    assert r.totals() == Totals(link_bytes=201, pcie_bytes=168, host_cpu_ps=3000, hpu_busy_ps=7,
                                drops=2)
    assert r.nic(1).pcie_bytes == 88 and r.host(0).cpu_busy_ps == 1500
    assert [m.t_post_ps for m in r.messages] == [10, 11]     # paired with their posts
    assert r.to_dict()["totals"]["pcie_bytes"] == 168


def test_a_real_run_round_trips():
    from dataclasses import replace

    from spin.fabric import run_scenario
    from tests.test_testing_kit import _pair_reduce
    r = run_scenario(_pair_reduce(True), regions=((0, 0, 16),))
    back = RunResult.from_dict(json.loads(r.to_json()))
    assert back == replace(r, memory_regions={})          # regions are bytes: not in JSON
    assert back.nics[0].handler_calls.payload == 1 and back.totals().link_bytes > 0
