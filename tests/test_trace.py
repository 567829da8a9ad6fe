"""The trace of a run (``Scenario.trace``, ``spin run --trace``) against the cost model: a
single-packet ping through one switch, answered by the receiving NIC's ping-pong handler, with
a monitor handler on the switch for the pong. Spans are checked in exact picoseconds."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from handlers.ping_pong import pong_payload
from handlers.switch_monitor import (monitor_completion, monitor_header, monitor_payload,
                                     switch_monitor_program)
from spin.config import HostConfig, LinkConfig, NicConfig, SwitchConfig
from spin.errors import ConfigError
from spin.fabric import run_scenario
from spin.handler import ExecutionContext
from spin.simulation import Simulation
from spin.topology import Topology
from spin.results.timeline import MIN_BUFFER_RECORDS, Trace, TraceOptions
from spin.units import ETHERNET_WIRE_OVERHEAD_BYTES, NS
from tests.switch.conftest import SWITCH_LIBRARY, pattern, scenario

PING_BYTES = 256
# Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + payload + ICRC 4
PING_FRAME_BYTES = 14 + 20 + 8 + 12 + 16 + PING_BYTES + 4


def _ping_scenario(links: bool = True):
    """h0 pings h1 on qp 1 through s0; h1's NIC answers on qp 2; s0 monitors the pong."""
    sc = scenario(Topology.star(2))
    sc.write_host_memory(0, 0, pattern(0, PING_BYTES))
    sc.host_program(0).send(1, PING_BYTES, qp=1, local_addr=0, remote_addr=4096) \
        .wait_recv(qp=2, count=1).mark("pong")
    sc.install(ExecutionContext(node=1, program=SWITCH_LIBRARY[2], match_qp=1))
    sc.install(ExecutionContext(node="s0", program=switch_monitor_program(64), match_qp=2))
    sc.trace(links=links)
    return sc


@pytest.fixture(scope="module")
def traced():
    sc = _ping_scenario()
    return sc, Simulation(sc).run()


def _one(spans, **where):
    got = [s for s in spans if all(getattr(s, k) == v for k, v in where.items())]
    assert len(got) == 1, (where, got)
    return got[0]


def test_handler_spans_last_their_declared_cycles(traced) -> None:
    _, result = traced
    cycle_ps = round(1_000_000 / NicConfig().hpu_clock_mhz)
    sw_cycle_ps = round(1_000_000 / SwitchConfig().hpu_clock_mhz)
    spans = result.trace.spans("handler")
    pong = _one(spans, device="h1")
    assert pong.name == pong_payload.__qualname__ and pong.track.startswith("HPU ")
    assert pong.args["program"] == "ping_pong" and pong.args["kind"] == "payload"
    assert (pong.args["src"], pong.args["qp"]) == ("h0", 1)
    assert pong.args["cycles"] == pong_payload.__spin_cost__.cycles
    assert pong.duration_ps == pong_payload.__spin_cost__.cycles * cycle_ps
    on_switch = {s.args["kind"]: s for s in spans if s.device == "s0"}
    for kind, fn in (("header", monitor_header), ("payload", monitor_payload),
                     ("completion", monitor_completion)):
        s = on_switch[kind]
        assert s.name == fn.__qualname__ and s.args["program"] == "switch_monitor"
        assert (s.args["src"], s.args["qp"]) == ("h1", 2)
        assert s.duration_ps == fn.__spin_cost__.cycles * sw_cycle_ps
    # sPIN order on the switch: payload after header, completion after payload
    assert on_switch["header"].end_ps <= on_switch["payload"].start_ps
    assert on_switch["payload"].end_ps <= on_switch["completion"].start_ps
    assert result.nic(1).hpu_busy_ps == pong.duration_ps


def test_dma_spans_follow_the_pcie_config(traced) -> None:
    _, result = traced
    nic = NicConfig()
    lat_ps = round(nic.pcie_latency_ns * NS)

    def transfer_ps(nbytes: int) -> int:
        return math.ceil(nbytes * 1000 / nic.pcie_rate_gbytes_per_s)

    dma = result.trace.spans("dma")
    read = _one(dma, device="h0", track="PCIe read")       # the ping's payload, host -> NIC
    assert read.args["bytes"] == PING_BYTES
    assert read.duration_ps == transfer_ps(PING_BYTES)
    assert read.start_ps == read.args["issued_ps"] + lat_ps  # request latency on an idle link
    assert read.args["done_ps"] == read.end_ps + lat_ps
    writes = sorted((s for s in dma if s.device == "h0" and s.track == "PCIe write"),
                    key=lambda s: s.start_ps)
    assert [w.args["bytes"] for w in writes] == [PING_BYTES, 16]   # pong data, then its CQE
    for w in writes:
        assert w.duration_ps == transfer_ps(w.args["bytes"])
        assert w.args["done_ps"] == w.end_ps + lat_ps
    assert writes[1].start_ps >= writes[0].end_ps            # one write at a time on the link
    assert not [s for s in dma if s.device == "h1"]           # the pong never touched h1's host
    assert sum(s.args["bytes"] for s in dma if s.device == "h0") == result.nic(0).pcie_bytes


def test_link_spans_are_frame_serialisation_and_chain_through_the_switch(traced) -> None:
    sc, result = traced
    link = LinkConfig()
    lat_ps = round(link.latency_ns * NS)
    sw_ps = round(SwitchConfig().latency_ns * NS)
    spans = result.trace.spans("link")
    for s in spans:
        want = math.ceil((s.args["bytes"] + ETHERNET_WIRE_OVERHEAD_BYTES) * 8000 / link.rate_gbps)
        assert s.duration_ps == want, s
    up = _one(spans, device="h0")
    down = _one(spans, device="s0", args={"bytes": PING_FRAME_BYTES, "link": 1, "to": "h1"})
    assert up.args["bytes"] == PING_FRAME_BYTES and up.track == "port 0 -> s0"
    read = _one(result.trace.spans("dma"), device="h0", track="PCIe read")
    assert up.start_ps == read.args["done_ps"]              # the frame leaves once its data is read
    assert down.start_ps == up.end_ps + lat_ps + sw_ps       # link latency, switch pipeline
    pong = _one(result.trace.spans("handler"), device="h1")
    header_match_ps = NicConfig().match_header_cycles * 1000
    assert pong.start_ps == down.end_ps + lat_ps + header_match_ps
    for l in result.links:   # every frame of every link direction is in the trace
        mine = [s for s in spans if s.device == l.from_device and s.args["link"] == l.link]
        assert sum(s.args["bytes"] for s in mine) == l.tx_bytes and len(mine) == l.tx_frames
        assert sum(s.duration_ps for s in mine) == l.busy_ps


def test_host_steps_and_messages(traced) -> None:
    _, result = traced
    host = HostConfig()
    o_send, o_recv = round(host.send_overhead_ns * NS), round(host.recv_overhead_ns * NS)
    steps = result.trace.spans("host")
    assert [s.name for s in steps] == ["send", "wait_recv", "pong"]
    send, wait, mark = steps
    assert (send.start_ps, send.end_ps) == (0, o_send)
    assert send.args == {"op_index": 0, "dst": "h1", "qp": 1, "bytes": PING_BYTES}
    pong_msg = next(m for m in result.messages if m.dst == 0)
    assert wait.start_ps == send.end_ps                      # from when the host reached it
    assert wait.args["satisfied_ps"] == pong_msg.t_done_ps
    assert wait.end_ps == pong_msg.t_done_ps + o_recv
    assert mark.start_ps == mark.end_ps == result.mark("pong", 0) == wait.end_ps
    msgs = result.trace.spans("message")
    assert len(msgs) == len(result.messages) == 2
    for s, m in zip(msgs, result.messages):
        assert (s.start_ps, s.end_ps, s.args["bytes"]) == (m.t_first_arrival_ps, m.t_done_ps,
                                                           m.bytes)
    assert result.host(0).cpu_busy_ps == send.duration_ps + o_recv


def test_chrome_json_has_the_trace_event_fields(traced, tmp_path) -> None:
    _, result = traced
    path = result.trace.write(tmp_path / "t.json")
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    assert doc["otherData"]["records_lost"] == 0
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert names == {(1, "h0 (NIC, host)"), (2, "h1 (NIC, host)"), (3, "s0 (switch)")}
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    assert {(1, "host program"), (1, "PCIe read"), (1, "PCIe write"),
            (3, "port 1 -> h1")} <= threads
    assert any(p == 2 and t.startswith("HPU ") for p, t in threads)
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == sum(1 for s in result.trace.spans() if s.category != "message"
                             and s.duration_ps > 0)
    for e in spans:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert isinstance(e["ts"], float) and e["dur"] > 0
    pong = next(e for e in spans if e["cat"] == "handler" and e["pid"] == 2)
    assert round(pong["dur"] * 1e6) == 40_000                 # µs in the file, 40 ns exactly
    begins = [e for e in events if e["ph"] == "b"]
    ends = {e["id"]: e for e in events if e["ph"] == "e"}
    assert len(begins) == 2 and all(ends[b["id"]]["ts"] >= b["ts"] for b in begins)
    assert any(e["ph"] == "i" and e["name"] == "pong" for e in events)


def test_links_are_traced_only_when_asked() -> None:
    sc = _ping_scenario(links=False)
    result = Simulation(sc).run()
    trace = result.trace
    assert trace.spans("link") == [] and trace.spans("handler") and trace.spans("dma")
    sc.tracing = None
    assert Simulation(sc).run().trace is None


def test_one_and_two_workers_give_the_same_trace() -> None:
    sc = _ping_scenario()
    one = run_scenario(sc, workers=1)
    two = run_scenario(sc, workers=2, partition={"h0": 0, "s0": 0, "h1": 1}, timeout_s=600)
    assert one.trace.spans("handler") and one.trace.spans("link")
    assert json.dumps(one.trace.chrome()) == json.dumps(two.trace.chrome())
    assert one.to_dict(include_wall=False) == two.to_dict(include_wall=False)


def test_a_full_engine_table_is_drained_not_lost() -> None:
    """More records than the smallest table holds: the engine stops to let them be drained."""
    sc = scenario(Topology.star(2))
    sc.write_host_memory(0, 0, pattern(0, 1024))
    prog = sc.host_program(0)
    for _ in range(2000):    # per message: send, PCIe read, 2 frames, PCIe write + CQE at h1
        prog.send(1, 64, qp=5, local_addr=0, remote_addr=0)
    sc.host_program(1).wait_recv(qp=5, count=2000)
    sc.trace(links=True, buffer_records=MIN_BUFFER_RECORDS)
    sim = Simulation(sc)
    result = sim.run()
    assert result.trace.lost == 0
    assert len(sim._trace_parts) > 1                    # drained while it ran
    assert result.trace.records.shape[0] > sc.tracing.buffer_records
    assert result.trace.records.shape[0] == 2001 + 2000 * 5


def test_trace_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="buffer_records"):
        TraceOptions(buffer_records=10)
    rows = np.arange(3 * 11, dtype=np.int64).reshape(3, 11)
    back, lost = Trace.unpack(Trace.pack(rows, 3))
    assert np.array_equal(back, rows) and lost == 3


def test_cli_trace_writes_a_perfetto_file(tmp_path) -> None:
    from tests.test_cli import spin
    out = tmp_path / "trace" / "pingpong.json"
    r = spin("run", "examples/pingpong.toml", "--trace", str(out), "--trace-links")
    assert r.returncode == 0, r.stderr
    assert f"written to {out}" in r.stdout
    events = json.loads(out.read_text())["traceEvents"]
    cats = {e.get("cat") for e in events}
    assert {"handler", "dma", "link", "host", "message"} <= cats
    pongs = [e for e in events if e.get("cat") == "handler"]
    assert len(pongs) == 8 and {e["name"] for e in pongs} == {"pong_payload"}
    assert sum(1 for e in events if e["ph"] == "b") == 16    # 8 pings, 8 pongs
    r = spin("run", "examples/pingpong.toml", "--trace-links")
    assert r.returncode == 2 and "--trace FILE" in r.stderr


def test_result_tables_load_in_pandas(traced) -> None:
    pd = pytest.importorskip("pandas")
    _, result = traced
    t = result.tables()
    assert isinstance(t.messages, pd.DataFrame) and len(t.messages) == 2
    assert list(t.nics["node"]) == [0, 1]
    assert t.nics.set_index("node").loc[1, "handler_calls_payload"] == 1
    assert t.nics["pcie_bytes"].sum() == result.totals().pcie_bytes
    assert t.links["tx_bytes"].sum() == result.totals().link_bytes
    assert 0 < t.links["utilisation"].max() < 1
    assert t.switches.loc[0, "handler_calls_header"] == 1
    assert list(t.hosts["cpu_busy_ps"]) == [h.cpu_busy_ps for h in result.hosts]
    assert set(t.spans["category"]) == {"handler", "dma", "link", "host", "message"}
    assert t.spans["duration_ps"].sum() == sum(s.duration_ps for s in result.trace.spans())


def test_result_tables_name_the_extra_without_pandas(traced, monkeypatch) -> None:
    import sys

    from spin.errors import MissingExtraError
    monkeypatch.setitem(sys.modules, "pandas", None)    # import pandas now raises ImportError
    with pytest.raises(MissingExtraError, match=r"spin-emulator\[pandas\]"):
        traced[1].tables()
