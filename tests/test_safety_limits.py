"""Limits before allocation (issue 18, item 5): the memory a topology and scenario need is
estimated up front and refused above a configurable limit, with the estimate in the message;
endpoint messages are capped; frames an endpoint sends that no round asked for are counted."""
from __future__ import annotations

import re
import socket
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import zmq

from spin.endpoint import EndpointSpec
from spin.endpoint import protocol as P
from spin.errors import ConfigError, EndpointError
from spin.fabric import run_scenario
from spin.tools.scenario_file import load_scenario, load_scenario_text
from spin.describe.limits import parse_bytes

ROOT = Path(__file__).resolve().parents[1]


def test_host_memory_of_10_gib_is_refused_with_the_estimate(monkeypatch):
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "16GiB")
    with pytest.raises(ConfigError) as info:
        load_scenario_text('[topology]\nkind = "pair"\n[host]\nmemory_bytes = 10737418240\n',
                           "big.toml")
    msg = str(info.value)
    # the hosts' 20 GiB and the rest of the state (events, calendar, tables: tens of MB)
    assert re.match(r"big\.toml: the engine state needs about 20\.\d GiB", msg), msg
    assert "the memory limit is 16.0 GiB (SPIN_MEMORY_LIMIT)" in msg
    assert "host memory (2 hosts x host.memory_bytes = 10737418240, payload stored): 20.0 GiB" \
        in msg


def test_the_limit_is_configurable(monkeypatch):
    text = '[topology]\nkind = "pair"\n[host]\nmemory_bytes = 67108864\n'   # 2 x 64 MiB
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "64MiB")
    with pytest.raises(ConfigError, match=r"needs about 1\d\d\.\d MiB \(the memory limit is 64.0"):
        load_scenario_text(text, "s.toml")
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "1GiB")
    load_scenario_text(text, "s.toml")
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "a lot")
    with pytest.raises(ConfigError, match="SPIN_MEMORY_LIMIT = 'a lot': expected a size"):
        load_scenario_text(text, "s.toml")
    assert parse_bytes("16 GB", "x") == 16 * 10**9 and parse_bytes("2KiB", "x") == 2048


def test_hamming_mesh_at_its_largest_is_refused_before_building(monkeypatch):
    """262,144 hosts: refused from its parameters alone, with the estimate (routing tables and
    topology objects) and the limit, having allocated next to nothing."""
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "1GiB")
    text = ('[topology]\nkind = "hamming_mesh"\nboard_rows = 16\nboard_cols = 16\nrows = 32\n'
            'cols = 32\n')
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as info:
            load_scenario_text(text, "hm.toml")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert msg.startswith("hm.toml: topology.kind = 'hamming_mesh' (board_rows = 16"), msg
    assert "262,144 hosts" in msg and "routing tables" in msg and "memory limit is 1.0 GiB" in msg
    assert peak < 20 * 2**20, peak


def test_an_endpoint_message_above_the_cap_is_refused():
    lengths = np.array([P.MAX_FRAME_BYTES] * 1025, "<i4")
    blob = bytes(int(lengths.sum()))
    parts = [P.SEND, b"{}", np.zeros(len(lengths), "<i8").tobytes(), lengths.tobytes(), blob]
    with pytest.raises(P.ProtocolError) as info:
        P.unpack_frames(parts)
    assert info.value.reason == "too_large"
    assert P.MAX_MESSAGE_BYTES <= 1 << 26


def _free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def _early_sender(url: str, out: dict) -> None:
    """A raw lockstep program: its round-0 answer, then a second message of 3 frames that no
    round asks for, then an oversized message the fabric's socket must drop unread."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 2000)
    sock.connect(url)
    try:
        sock.send_multipart(P.message(P.HELLO, {"version": P.VERSION, "host": "h3"}))
        if not sock.poll(120_000):
            out["error"] = "no welcome"
            return
        out["welcome"] = sock.recv_multipart()[0]
        sock.send_multipart(P.message(P.SEND, {"round": 0}, [], []))
        frame = bytes(64)
        sock.send_multipart(P.message(P.SEND, {"round": 0}, [0, 0, 0], [frame] * 3))
        big = bytes(P.MAX_MESSAGE_BYTES + 1)
        sock.send_multipart(P.message(P.SEND, {"round": 0}, [0], ([len(big)], big)))
        if sock.poll(120_000):
            out["end"] = sock.recv_multipart()[0]
    finally:
        sock.close()
        ctx.term()


def test_frames_no_round_asked_for_are_counted():
    sc, _ = load_scenario(ROOT / "examples" / "endpoint" / "pingpong_endpoint.toml")
    url = _free_url()
    out: dict = {}
    t = threading.Thread(target=_early_sender, args=(url, out), daemon=True)
    t.start()
    result = run_scenario(sc, 1, endpoints=[EndpointSpec("h3", url)])
    t.join(30)
    assert out.get("welcome") == P.WELCOME, out
    ep = result.endpoints[0]
    assert ep.dropped == {"unread": 3}, ep
    assert "too_large" not in ep.messages_rejected, ep   # the oversized one was never received
    assert result.drops.get("endpoint_unread") == 3


def test_the_client_refuses_a_round_above_the_cap():
    from spin.endpoint.client import Endpoint

    ep = Endpoint.__new__(Endpoint)          # no fabric needed: only the flush is exercised
    ep.host = "h3"
    ep._out_times = [0] * 1025
    ep._out_frames = [bytes(P.MAX_FRAME_BYTES)] * 1025
    with pytest.raises(EndpointError, match="at most 65536 frames and 67108864 B"):
        ep._flush(P.SEND, 0)
    assert ep._out_frames == []


def test_the_fabric_socket_drops_an_oversized_message_unread():
    from spin.runtime.endpoint_bridge import EndpointBridge
    from spin.endpoint.spec import attach_endpoints

    sc, _ = load_scenario(ROOT / "examples" / "endpoint" / "pingpong_endpoint.toml")
    (att,) = attach_endpoints(sc, [EndpointSpec("h3", _free_url())])
    bridge = EndpointBridge(att)
    try:
        assert bridge._sock.getsockopt(zmq.MAXMSGSIZE) == P.MAX_MESSAGE_BYTES
    finally:
        bridge.close()
