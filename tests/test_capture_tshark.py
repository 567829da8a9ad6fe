"""pcap files of engine-built frames read back identically and dissect as RoCEv2 in tshark."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from spin.results.capture import LINKTYPE_ETHERNET, PCAP_MAGIC_NS, PcapWriter, read_pcap
from spin.errors import WireError
from spin.wire import (
    OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_MIDDLE, OP_WRITE_ONLY, RETH_OPCODES,
    finalize_roce_frame, write_roce_headers,
)

MTU_PAYLOAD = 256


def _message_frames(src: int, dst: int, qp: int, psn0: int, size: int,
                    va: int) -> list[bytes]:
    """Split one RDMA WRITE into FIRST/MIDDLE.../LAST or ONLY frames (built the engine's way)."""
    n = max(1, -(-size // MTU_PAYLOAD))
    frames = []
    slot = np.zeros(2048, dtype=np.uint8)
    for i in range(n):
        chunk = min(MTU_PAYLOAD, size - i * MTU_PAYLOAD)
        op = OP_WRITE_ONLY if n == 1 else OP_WRITE_FIRST if i == 0 else \
            OP_WRITE_LAST if i == n - 1 else OP_WRITE_MIDDLE
        off = write_roce_headers(slot, src, dst, 0xC000 + qp, op, qp, (psn0 + i) & 0xFFFFFF,
                                 i == n - 1, va, 0x1234, size, chunk, i)
        slot[off:off + chunk] = (np.arange(chunk) + i) & 0xFF
        frames.append(slot[:finalize_roce_frame(slot, off, chunk)].tobytes())
    return frames


@pytest.fixture
def capture(tmp_path: Path) -> tuple[Path, list[tuple[int, bytes]]]:
    frames = (_message_frames(1, 2, 0x11, 0, 1000, 0x7F00_0000_0000)
              + _message_frames(2, 1, 0x22, 0xFFFFFE, 600, 0x1000)
              + _message_frames(3, 0x10203, 0x33, 5, 100, 0)
              + _message_frames(4, 5, 0x44, 7, 0, 0x2000)
              + _message_frames(5, 4, 0x55, 9, 3, 0x3000))
    times = [i * 1_234_567 + 999 for i in range(len(frames))]     # ps; not whole ns
    path = tmp_path / "roce.pcap"
    half = len(frames) // 2
    slots = np.zeros((len(frames) - half, 2048), dtype=np.uint8)
    for i, f in enumerate(frames[half:]):
        slots[i, :len(f)] = np.frombuffer(f, dtype=np.uint8)
    with PcapWriter(path) as w:
        for t, f in zip(times[:half], frames[:half]):
            w.write(t, f if t % 2 else np.frombuffer(f, dtype=np.uint8))
        w.write_many(np.array(times[half:]), slots, [len(f) for f in frames[half:]])
    assert w.frames_written == len(frames)
    return path, [(t // 1000, f) for t, f in zip(times, frames)]


def test_pcap_header_and_read_back(capture) -> None:
    path, expected = capture
    magic, vmaj, vmin, _, _, _, link = struct.unpack("<IHHiIII", path.read_bytes()[:24])
    assert (magic, vmaj, vmin, link) == (PCAP_MAGIC_NS, 2, 4, LINKTYPE_ETHERNET)
    assert read_pcap(path) == expected


def test_scapy_rdpcap_reads_same_bytes(capture) -> None:
    from scapy.utils import rdpcap
    path, expected = capture
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == [f for _, f in expected]
    assert [int(round(float(p.time) * 1e9)) for p in pkts] == [t for t, _ in expected]


def test_write_many_validates_and_closed_writer_refuses(tmp_path: Path) -> None:
    w = PcapWriter(tmp_path / "x.pcap")
    with pytest.raises(WireError, match="not open"):
        w.write(0, b"\x00" * 60)
    with w:
        with pytest.raises(WireError):
            w.write_many([0], np.zeros((1, 64), dtype=np.uint8), [65])
        w.write_many([], np.zeros((0, 64), dtype=np.uint8), [])
    assert read_pcap(tmp_path / "x.pcap") == []


def test_tshark_dissects_roce(capture) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark not installed: cannot check Wireshark's RoCEv2 dissection "
                    "(apt-get install tshark)")
    path, expected = capture
    fields = ["frame.protocols", "ip.checksum.status", "_ws.malformed", "infiniband.bth.opcode",
              "infiniband.reth.dmalen", "infiniband.bth.padcnt", "frame.len"]
    cmd = [tshark, "-r", str(path), "-o", "ip.check_checksum:TRUE", "-T", "fields",
           "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split("|") for line in r.stdout.splitlines()]
    assert len(rows) == len(expected)
    for (protocols, csum_status, malformed, opcode, dmalen, padcnt, flen), (_, frame) \
            in zip(rows, expected):
        assert "eth:ethertype:ip:udp:infiniband" in protocols, protocols
        assert csum_status == "1", csum_status                    # 1 = good
        assert malformed == "", malformed
        assert int(opcode) == frame[42]
        assert (dmalen != "") == (frame[42] in RETH_OPCODES)
        assert int(padcnt) == (frame[43] >> 4) & 3
        assert int(flen) == len(frame)


def test_tshark_dissects_a_captured_fabric_run(tmp_path) -> None:
    """The pcaps of a real run (switch hops, handler-sent pongs, default-path writes) are clean
    RoCEv2 for Wireshark: every frame dissects, none is malformed, every IP checksum is good."""
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark not installed: cannot check Wireshark's RoCEv2 dissection "
                    "(apt-get install tshark)")
    from spin.scenario_file import load_scenario, run_loaded
    scenario, options = load_scenario(Path(__file__).parents[1] / "examples" / "pingpong.toml")
    run = run_loaded(scenario, options, pcap_dir=tmp_path)
    assert run.pcaps
    total = 0
    for pcap in run.pcaps:
        r = subprocess.run([tshark, "-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-T",
                            "fields", "-E", "separator=|", "-e", "frame.protocols", "-e",
                            "ip.checksum.status", "-e", "_ws.malformed"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        for line in r.stdout.splitlines():
            protocols, status, malformed = line.split("|")
            assert "eth:ethertype:ip:udp:infiniband" in protocols, (pcap.name, protocols)
            assert status == "1" and malformed == "", (pcap.name, line)
            total += 1
    captured_frames = sum(l.tx_frames for l in run.result.links)
    assert total == captured_frames > 0
