"""The switch data plane on an incast: ECN marks, trimming and PFC pause frames are real bytes
on the wire that our parser, scapy and tshark all dissect the same way."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from spin.config import SwitchConfig
from spin.simulation import Simulation
from spin.topology import Topology

from .conftest import parse, pattern, scenario

MTU = 1024
SIZE = 32 * MTU
SENDERS = (1, 2, 3, 4)


def _incast(switch: SwitchConfig, tmp_path=None, size: int = SIZE):
    """Hosts 1..4 each send ``size`` bytes to host 0 at once through s0 (link 0 is s0-h0)."""
    sc = scenario(Topology.star(5), switch=switch)
    for h in SENDERS:
        sc.write_host_memory(h, 0, pattern(h, size))
        sc.host_program(h).send(0, size, qp=1, local_addr=0, remote_addr=h * size)
    sc.capture(0, 1)
    sim = Simulation(sc)
    result = sim.run(pcap_dir=tmp_path)
    return sim, result


def _link(result, a, b):
    return next(l for l in result.links if l.from_device == a and l.to_device == b)


def test_ecn_marks_and_trims_on_a_congested_port(tmp_path) -> None:
    cfg = SwitchConfig(port_buffer_bytes=16 * 1024, ecn_threshold_bytes=4 * 1024, trim=True,
                       trim_dscp=7)
    sim, result = _incast(cfg, tmp_path)
    down = _link(result, "s0", "h0")
    assert down.ecn_marks > 0 and down.trims > 0
    assert result.drops == {"trimmed": down.trims}      # trimmed, not dropped, and counted
    assert down.max_queue_bytes <= 16 * 1024
    frames = [f for _, f in sim.captured_frames(0) if f[33] == 0]    # towards h0
    assert len(frames) == len(SENDERS) * SIZE // MTU
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    marked = trimmed = 0
    for f in frames:
        code, out = parse(f)
        assert code == 0, code                          # ICRC and IP checksum verify
        ip = Ether(f)[IP]
        want = ip.chksum
        del ip.chksum
        assert IP(bytes(ip)).chksum == want             # scapy recomputes the same checksum
        if ip.tos & 3 == 3:
            marked += 1
        if ip.tos >> 2 == 7:
            trimmed += 1
            assert len(f) in (14 + 20 + 8 + 12 + 16 + 4, 14 + 20 + 8 + 12 + 4)   # headers only
            assert ip[UDP].len == len(f) - 34
    assert marked == down.ecn_marks
    assert trimmed == down.trims
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark not installed: cannot check Wireshark's dissection of ECN and "
                    "trimmed frames (apt-get install tshark)")
    pcap = next(tmp_path.glob("link0_*.pcap"))
    r = subprocess.run([tshark, "-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-T", "fields",
                        "-E", "separator=|", "-e", "ip.dst", "-e", "ip.dsfield.ecn", "-e",
                        "ip.dsfield.dscp", "-e", "ip.checksum.status", "-e", "_ws.malformed",
                        "-e", "frame.protocols"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split("|") for line in r.stdout.splitlines()]
    to_h0 = [row for row in rows if row[0] == "10.0.0.0"]
    assert len(to_h0) == len(frames)
    assert sum(row[1] == "3" for row in to_h0) == marked
    assert sum(row[2] == "7" for row in to_h0) == trimmed
    for row in to_h0:
        assert row[3] == "1" and row[4] == "" and "infiniband" in row[5], row


def test_pfc_pauses_senders_instead_of_dropping(tmp_path) -> None:
    size = 128 * 1024
    lossy = _incast(SwitchConfig(port_buffer_bytes=256 * 1024), size=size)[1]
    assert lossy.drops.get("queue_full", 0) > 0
    # headroom: a sender keeps sending until the pause reaches it, i.e. for the link latency
    # and switch pipeline to the switch plus the link back (~650 ns, ~33 KB at 400 Gb/s); four
    # ingress ports' xoff plus headroom fit the 256 KiB buffer
    cfg = SwitchConfig(port_buffer_bytes=256 * 1024, pfc=True, pfc_xoff_bytes=8 * 1024,
                       pfc_xon_bytes=4 * 1024, ecn_threshold_bytes=0)
    sim, result = _incast(cfg, tmp_path, size=size)
    assert not result.drops                             # lossless
    assert len(result.messages) == len(SENDERS)
    for h in SENDERS:
        got = sim.host_memory(0)[h * size:(h + 1) * size]
        assert np.array_equal(got, pattern(h, size))
    pauses = sum(l.pauses_sent for l in result.links if l.from_device == "s0")
    received = sum(l.pauses_received for l in result.links if l.to_device == "s0")
    assert pauses > 0 and received == pauses
    # the PFC frames on the wire between s0 and h1 (link 1)
    pfc = [f for _, f in sim.captured_frames(1) if f[12:14] == b"\x88\x08"]
    assert len(pfc) == _link(result, "s0", "h1").pauses_sent > 0
    from scapy.layers.l2 import Ether
    for f in pfc:
        e = Ether(f)
        assert e.dst == "01:80:c2:00:00:01" and e.type == 0x8808
        assert f[14:16] == b"\x01\x01" and len(f) == 60
    quanta = [int.from_bytes(f[18:20], "big") for f in pfc]
    assert quanta[0] == cfg.pfc_pause_quanta and quanta[-1] == 0   # pause ... resume
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark not installed: cannot check Wireshark's dissection of PFC frames "
                    "(apt-get install tshark)")
    pcap = next(tmp_path.glob("link1_*.pcap"))
    r = subprocess.run([tshark, "-r", str(pcap), "-Y", "macc", "-T", "fields", "-E",
                        "separator=|", "-e", "macc.opcode", "-e", "_ws.malformed"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split("|") for line in r.stdout.splitlines()]
    assert len(rows) == len(pfc)
    assert all(row[0] in ("0x0101", "257") and row[1] == "" for row in rows), rows


def test_pfc_renews_a_pause_before_it_lapses(tmp_path) -> None:
    """A pause holds the peer for quanta x 512 bit times, then lapses. With pauses of 64
    quanta (82 ns at 400 Gb/s) the incast outlasts every single pause, so the switch must renew
    them while the port stays above XOFF, as 802.1Qbb switches do; a lapsed pause lets the
    sender refill the queue past its buffer."""
    size = 128 * 1024
    cfg = SwitchConfig(port_buffer_bytes=256 * 1024, pfc=True, pfc_xoff_bytes=8 * 1024,
                       pfc_xon_bytes=4 * 1024, pfc_pause_quanta=64, ecn_threshold_bytes=0)
    sim, result = _incast(cfg, tmp_path, size=size)
    assert not result.drops                             # lossless
    for h in SENDERS:
        got = sim.host_memory(0)[h * size:(h + 1) * size]
        assert np.array_equal(got, pattern(h, size))
    quanta = [int.from_bytes(f[18:20], "big") for _, f in sim.captured_frames(1)
              if f[12:14] == b"\x88\x08"]
    # pauses renewed without a resume in between: two pauses of 64 in a row
    assert any(a == b == 64 for a, b in zip(quanta, quanta[1:])), quanta
    assert quanta[-1] == 0
