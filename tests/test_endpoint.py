"""External endpoints: programs outside the engine attached to host h3 of a running fabric.

The fabric is examples/endpoint/pingpong_endpoint.toml (ping-pong handlers on h0 and h1: the
engine every ping-pong test compiles); the program is the example scapy script or the
``spin.endpoint.Endpoint`` client in a thread. Replies are checked byte for byte (parsed with
the ICRC verified), and lockstep runs are identical on 1 and 2 workers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("scapy")

from examples.endpoint.scapy_rdma_write import BASE_VA, payload_of, rdma_write  # noqa: E402
from examples.endpoint.scapy_rdma_write import run as scapy_client  # noqa: E402
from spin import cli  # noqa: E402
from spin.endpoint import Endpoint, EndpointSpec  # noqa: E402
from spin.endpoint.spec import attach_endpoints  # noqa: E402
from spin.errors import ConfigError, EndpointError  # noqa: E402
from spin.fabric import run_scenario  # noqa: E402
from spin.tools.scenario_file import load_scenario, load_scenario_text  # noqa: E402
from spin.wire import parse  # noqa: E402
from spin.wire.headers import OP_WRITE_ONLY  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "endpoint" / "pingpong_endpoint.toml"
N, SIZE = 6, 200


def free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def scenario():
    sc, _opts = load_scenario(EXAMPLE)
    return sc


class ClientThread(threading.Thread):
    """Runs ``fn(url)`` next to the fabric; ``value()`` returns its result or re-raises."""

    def __init__(self, fn, url: str) -> None:
        super().__init__(daemon=True)
        self.fn, self.url, self.result, self.error = fn, url, None, None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.fn(self.url)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def value(self):
        self.join(60)
        assert not self.is_alive(), "the endpoint program did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def check_replies(replies, expected_vas):
    """Each reply is a valid RoCE frame (ICRC verified) from h0/h1 to h3 on qp 2, echoing the
    bytes of the write it answers."""
    got = []
    for _t, frame in replies:
        p = parse(frame)
        assert p.opcode == OP_WRITE_ONLY and p.dst_node == 3 and p.src_node in (0, 1)
        assert p.dest_qp == 2
        va = p.reth[0]
        index = (va - BASE_VA) // SIZE
        assert p.src_node == index % 2
        assert p.payload[:SIZE] == payload_of(index, SIZE)
        got.append(va)
    assert sorted(got) == sorted(expected_vas)
    times = [t for t, _ in replies]
    assert times == sorted(times) and times[0] > 0


def test_scapy_example_lockstep_is_identical_on_1_and_2_workers(tmp_path):
    url = free_url()
    client = ClientThread(lambda u: scapy_client(u, N, SIZE, quiet=True), url)
    sc = scenario()
    sc.capture()
    ref = run_scenario(sc, 1, endpoints=[EndpointSpec("h3", url)], pcap_dir=tmp_path / "p1")
    ref_replies = client.value()
    check_replies(ref_replies, [BASE_VA + i * SIZE for i in range(N)])
    ep = ref.endpoints[0]
    assert (ep.host, ep.frames_from_endpoint, ep.frames_to_endpoint, ep.dropped) == ("h3", N, N, {})
    assert ref.end_time_ps == ref_replies[-1][0]

    url = free_url()   # the same run from the command line, on two workers
    client = ClientThread(lambda u: scapy_client(u, N, SIZE, quiet=True), url)
    out = tmp_path / "run.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "spin", "run", str(EXAMPLE), "--workers", "2",
                        "--endpoint", f"h3={url}", "--json", str(out), "--quiet",
                        "--pcap", str(tmp_path / "p2")], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr
    assert client.value() == ref_replies
    data = json.loads(out.read_text())
    assert data["scenario"]["workers"] == 2
    assert {k: data[k] for k in ref.to_dict(include_wall=False)} == ref.to_dict(include_wall=False)
    # both directions of h3's link are in its pcap, byte for byte the same on 2 workers
    (pcap,) = (tmp_path / "p1").glob("*h3*.pcap")
    assert pcap.read_bytes() == (tmp_path / "p2" / pcap.name).read_bytes()
    from scapy.utils import rdpcap
    frames = [bytes(p) for p in rdpcap(str(pcap))]
    assert len(frames) == 2 * N
    assert sorted(frames) == sorted([f for _, f in ref_replies] + [
        bytes(rdma_write(3, i % 2, i, payload_of(i, SIZE), BASE_VA + i * SIZE)) for i in range(N)])


def _lockstep_with_junk(url):
    replies = []
    with Endpoint(url) as ep:
        for i in range(N):
            ep.send(rdma_write(ep.node, i % 2, i, payload_of(i, SIZE), BASE_VA + i * SIZE),
                    at_ps=i * 50_000)
        ep.send(rdma_write(2, 0, 99, payload_of(0, SIZE), BASE_VA), at_ps=0)   # h2's addresses
        ep.send(b"\x00" * 20, at_ps=0)                                       # not a frame
        for frame, t in ep.frames():
            replies.append((t, frame))
            if len(replies) <= 2:        # answer while the run goes on
                k = N + len(replies)
                with pytest.raises(EndpointError, match="before the frame being answered"):
                    ep.send(rdma_write(ep.node, k % 2, k, payload_of(k, SIZE), 0), at_ps=t - 1)
                ep.send(rdma_write(ep.node, k % 2, k, payload_of(k, SIZE), BASE_VA + k * SIZE),
                        at_ps=t + 1000)
    return replies


def test_lockstep_program_answers_during_the_run_and_junk_is_counted():
    url = free_url()
    client = ClientThread(_lockstep_with_junk, url)
    sc = scenario()
    result = run_scenario(sc, 1, endpoints=[EndpointSpec("h3", url)])
    replies = client.value()
    check_replies(replies, [BASE_VA + i * SIZE for i in [*range(N), N + 1, N + 2]])
    assert result.endpoints[0].dropped == {"bad_source": 1, "bad_length": 1}
    assert result.drops == {"endpoint_bad_length": 1, "endpoint_bad_source": 1}
    assert result.nic(0).handler_calls.payload + result.nic(1).handler_calls.payload == N + 2
    for ctx in sc.contexts:      # the ping-pong handlers' memory: the reply qp they were given
        assert result.handler_memory(ctx).tolist() == [2]


def _realtime_client(url):
    replies = []
    with Endpoint(url) as ep:
        assert ep.mode == "realtime"
        for i in range(N):
            ep.send(rdma_write(ep.node, i % 2, i, payload_of(i, SIZE), BASE_VA + i * SIZE))
        while len(replies) < N:
            got = ep.recv(timeout_s=60)
            assert got is not None, "no reply within 60 s"
            data, t = got
            replies.append((t, data))
    return replies


def test_realtime_program_gets_the_echoes():
    url = free_url()
    client = ClientThread(_realtime_client, url)
    result = run_scenario(scenario(), 1, endpoints=[
        EndpointSpec("h3", url, mode="realtime", realtime_factor=1e4, on_lag="warn")])
    check_replies(client.value(), [BASE_VA + i * SIZE for i in range(N)])
    assert result.endpoints[0].frames_from_endpoint == N
    assert result.endpoints[0].mode == "realtime"


def test_realtime_run_stops_when_it_falls_behind_the_wall_clock():
    url = free_url()

    def client(u):
        with Endpoint(u) as ep:
            ep.send(rdma_write(ep.node, 0, 0, payload_of(0, SIZE), BASE_VA))
            frames = list(ep.frames())
            return frames, ep.end_reason

    thread = ClientThread(client, url)
    # 1 µs of wall time per second of virtual time: no emulation keeps up with that
    with pytest.raises(EndpointError, match="behind the wall clock"):
        run_scenario(scenario(), 1, endpoints=[
            EndpointSpec("h3", url, mode="realtime", realtime_factor=1e-6, max_lag_ms=1.0)])
    _frames, reason = thread.value()
    assert "behind the wall clock" in reason


def test_no_program_attaching_is_a_clear_error():
    url = free_url()
    with pytest.raises(EndpointError, match="no program answered within 0.5 s to attach"):
        run_scenario(scenario(), 1, endpoints=[EndpointSpec("h3", url, attach_timeout_s=0.5)])


def test_declarations_are_checked():
    sc = scenario()
    url = free_url()
    cases = [
        (lambda: attach_endpoints(sc, [EndpointSpec("h9", url)]), "no such host; hosts: h0"),
        (lambda: EndpointSpec("h3", "udp://127.0.0.1:5"), "expected tcp://ADDR:PORT"),
        (lambda: EndpointSpec("h3", "tcp://10.1.2.3:5600"), "beyond loopback; give key_file"),
        (lambda: EndpointSpec("h3", url, mode="fast"), "valid choices: lockstep, realtime"),
        (lambda: attach_endpoints(sc, [EndpointSpec("h0", url)]), "has an execution context"),
    ]
    for make, text in cases:
        with pytest.raises(ConfigError, match=text):
            make()
    sc.host_program(2).send(0, 64, qp=1)
    with pytest.raises(ConfigError, match="also has a host program"):
        attach_endpoints(sc, [EndpointSpec("h2", url)])
    toml = EXAMPLE.read_text().replace('host = "h3"', 'host = "h7"')
    with pytest.raises(ConfigError, match=r"x.toml: endpoint\[0\] = .*no such host"):
        load_scenario_text(toml, "x.toml", EXAMPLE.parent)


@pytest.mark.parametrize("argv, text", [
    (["--endpoint", "h3"], "expected HOST=tcp://ADDR:PORT"),
    (["--endpoint", "s0=tcp://127.0.0.1:5601"], "endpoint s0: no such host"),
    (["--endpoint-mode", "realtime"], "--endpoint-mode applies to --endpoint"),
])
def test_cli_refuses_bad_endpoints(argv, text, capsys):
    assert cli.main(["run", str(EXAMPLE), "--quiet", *argv]) == cli.EXIT_ERROR
    assert text in capsys.readouterr().err
