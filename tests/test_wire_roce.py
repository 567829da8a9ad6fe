"""RoCEv2 frame build/parse: round trips, every malformation maps to its drop code, CRC-32."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from spin.wire import drops
from spin.errors import WireError
from spin.wire import (
    BTH, ETH, IPV4, Field, HeaderFormat, NUM_PARSED_FIELDS, RETH, ROCE_HEADER_BYTES, UDP, build_frame, compute_icrc,
    finalize_roce_frame, ip_node, ipv4_checksum, mac_node, node_ip, node_mac, parse, parse_frame,
    roce_frame_len, write_roce_headers,
)
from spin.wire.crc32 import crc32
from spin.wire.headers import (
    BTH_OFF, ICRC_BYTES, IP_DST_OFF, IP_OFF, IP_PROTO_OFF, IP_SRC_OFF, OP_WRITE_FIRST,
    OP_WRITE_LAST, OP_WRITE_MIDDLE, OP_WRITE_ONLY, RETH_BYTES, RETH_OFF, UDP_OFF,
    UDP_SPORT_OFF, VALID_OPCODES,
)

WIRE_CODES = {drops.TRUNCATED, drops.NOT_IPV4, drops.BAD_IP_HEADER, drops.BAD_IP_CHECKSUM,
              drops.BAD_IP_LENGTH, drops.NOT_UDP, drops.BAD_UDP_LENGTH, drops.NOT_ROCE,
              drops.UNKNOWN_OPCODE, drops.BAD_BTH, drops.BAD_ICRC, drops.BAD_DMA_LENGTH}
REPO = Path(__file__).resolve().parents[1]


def _code(frame: bytes | np.ndarray, check_icrc: bool = True, n: int | None = None) -> int:
    buf = np.frombuffer(bytes(frame), dtype=np.uint8).copy()
    out = np.zeros(NUM_PARSED_FIELDS, dtype=np.int64)
    return int(parse_frame(buf, len(buf) if n is None else n, check_icrc, out))


def _first(payload: bytes = bytes(range(37))) -> bytes:
    return build_frame(3, 0x0A0B0C, 40001, OP_WRITE_FIRST, 0x77, 1000, payload, ack_req=True,
                       reth=(0x7F00_0000_1000, 0xABCD, 4096), ip_id=9)


def _middle(payload: bytes = bytes(range(100, 140))) -> bytes:
    return build_frame(3, 0x0A0B0C, 40001, OP_WRITE_MIDDLE, 0x77, 1001, payload)


def _fix_ip_csum(b: bytearray) -> bytearray:
    buf = np.frombuffer(bytes(b), dtype=np.uint8)
    c = int(ipv4_checksum(buf, IP_OFF))
    b[IP_OFF + 10:IP_OFF + 12] = c.to_bytes(2, "big")
    return b


def _refinalize(b: bytearray) -> bytes:
    """Recompute IP checksum and ICRC after editing headers (so the edit itself is what fails)."""
    buf = np.frombuffer(bytes(b), dtype=np.uint8).copy()
    c = int(ipv4_checksum(buf, IP_OFF))
    buf[IP_OFF + 10], buf[IP_OFF + 11] = c >> 8, c & 0xFF
    icrc = int(compute_icrc(buf, len(buf)))
    buf[-4:] = np.frombuffer(icrc.to_bytes(4, "little"), dtype=np.uint8)
    return buf.tobytes()


# --- header declarations ------------------------------------------------------------------------

def test_header_sizes_and_constants() -> None:
    assert [h.size_bytes for h in (ETH, IPV4, UDP, BTH, RETH)] == [14, 20, 8, 12, 16]
    assert ROCE_HEADER_BYTES == 54 and RETH_BYTES == 16 and ICRC_BYTES == 4
    assert [h.dtype.itemsize for h in (ETH, IPV4, UDP, BTH, RETH)] == [14, 20, 8, 12, 16]
    assert IPV4.bits["flags"].container == "flags_frag" and BTH.bits["pad_cnt"].shift == 4


def test_header_format_rejects_bad_declarations() -> None:
    with pytest.raises(WireError, match="do not pack"):
        HeaderFormat("X", [Field("a", 3), Field("b", 8)])
    with pytest.raises(WireError, match="duplicate"):
        HeaderFormat("X", [Field("a", 8), Field("a", 8)])
    with pytest.raises(WireError, match="does not fit"):
        Field("a", 4, 16)
    with pytest.raises(WireError, match="no field"):
        BTH.get(np.zeros(1, dtype=BTH.dtype), "qp")
    x = HeaderFormat("X", [Field("mac", 48, 0x0200_0000_0001), Field("v", 4, 9), Field("w", 12)])
    assert x.size_bytes == 8 and x.default_bytes() == bytes.fromhex("0200000000019000")
    rec = np.frombuffer(x.default_bytes(), dtype=x.dtype).copy()
    assert x.get(rec[0], "mac") == 0x0200_0000_0001 and x.get(rec[0], "v") == 9
    x.set(rec[0], "w", 0xABC)
    assert rec.tobytes() == bytes.fromhex("0200000000019abc")


def test_dtype_view_agrees_with_numba_parse() -> None:
    """The declared dtypes, viewed over engine-built frames, read what parse_frame reads."""
    frames = [_first(bytes(range(k))) for k in (0, 1, 5, 64)]
    slots = np.zeros((len(frames), 160), dtype=np.uint8)
    for i, f in enumerate(frames):
        slots[i, :len(f)] = np.frombuffer(f, dtype=np.uint8)
    ip, udp, bth, reth = (IPV4.view(slots, IP_OFF), UDP.view(slots, UDP_OFF),
                          BTH.view(slots, BTH_OFF), RETH.view(slots, RETH_OFF))
    for i, f in enumerate(frames):
        p = parse(f)
        assert IPV4.get(ip[i], "version") == 4 and IPV4.get(ip[i], "ihl") == 5
        assert IPV4.get(ip[i], "flags") == 2 and IPV4.get(ip[i], "ttl") == p.ttl
        assert IPV4.get(ip[i], "src") & 0xFFFFFF == p.src_node
        assert UDP.get(udp[i], "sport") == p.ev and UDP.get(udp[i], "dport") == 4791
        assert BTH.get(bth[i], "opcode") == p.opcode
        assert BTH.get(bth[i], "dest_qp") == p.dest_qp and BTH.get(bth[i], "psn") == p.psn
        assert BTH.get(bth[i], "ack_req") == p.ack_req
        assert BTH.get(bth[i], "pad_cnt") == (4 - len(p.payload) % 4) % 4
        assert (RETH.get(reth[i], "va"), RETH.get(reth[i], "rkey"),
                RETH.get(reth[i], "dma_len")) == p.reth
    assert IPV4.default_bytes()[:2] == b"\x45\x02" and BTH.default_bytes()[2:4] == b"\xff\xff"


# --- addressing and round trips -----------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 0x0102, 0x0A0B0C, 0xFFFFFF])
def test_node_addressing_round_trip(n: int) -> None:
    assert mac_node(node_mac(n)) == n and ip_node(node_ip(n)) == n
    f = build_frame(n, 0xFFFFFF - n, 1, OP_WRITE_MIDDLE, 0, 0, b"x")
    p = parse(f)
    assert (p.src_node, p.dst_node) == (n, 0xFFFFFF - n)
    assert f[6:12] == bytes.fromhex(node_mac(n).replace(":", ""))
    assert f[26:30] == bytes(int(x) for x in node_ip(n).split("."))


def test_forwarding_offsets_point_at_the_five_tuple() -> None:
    """The offsets routing and ECMP read (spin.wire.headers) land on the fields of a frame."""
    f = build_frame(3, 0x10203, 0xBEEF, OP_WRITE_MIDDLE, 0, 0, b"x")
    assert f[IP_SRC_OFF:IP_SRC_OFF + 4] == bytes(int(x) for x in node_ip(3).split("."))
    assert f[IP_DST_OFF:IP_DST_OFF + 4] == bytes(int(x) for x in node_ip(0x10203).split("."))
    assert int.from_bytes(f[IP_DST_OFF + 1:IP_DST_OFF + 4], "big") == 0x10203   # the node id
    assert f[IP_PROTO_OFF] == 17
    assert int.from_bytes(f[UDP_SPORT_OFF:UDP_SPORT_OFF + 2], "big") == 0xBEEF   # the EV
    assert int.from_bytes(f[UDP_SPORT_OFF + 2:UDP_SPORT_OFF + 4], "big") == 4791


def test_node_addressing_rejects_out_of_range() -> None:
    with pytest.raises(WireError):
        node_mac(1 << 24)
    with pytest.raises(WireError):
        node_ip(-1)
    with pytest.raises(WireError):
        mac_node("00:11:22:33:44:55")


@pytest.mark.parametrize("opcode", sorted(VALID_OPCODES))
@pytest.mark.parametrize("plen", [0, 1, 2, 3, 4, 5, 1023, 1024])
def test_build_parse_round_trip(opcode: int, plen: int) -> None:
    payload = bytes((7 * i + 1) & 0xFF for i in range(plen))
    # a FIRST frame leaves part of its message (DMA length) to later frames; ONLY carries it all
    dma_len = plen + (4096 if opcode in (6, 0x26) else 0)
    reth = (0xFFFF_FFFF_FFFF_FFF0, 0xFFFF_FFFF, dma_len) if opcode in (6, 10, 0x26, 0x2A) else None
    f = build_frame(5, 6, 0xFFFF, opcode, 0xFFFFFF, 0xFFFFFF, payload, ack_req=True, reth=reth,
                    ip_id=0xFFFF)
    assert len(f) == roce_frame_len(plen, reth is not None) and len(f) % 2 == 0
    p = parse(f)
    assert (p.opcode, p.dest_qp, p.psn, p.ev, p.ack_req, p.reth, p.payload, p.ecn, p.ttl) == \
        (opcode, 0xFFFFFF, 0xFFFFFF, 0xFFFF, True, reth, payload, 2, 64)
    assert f[p.payload_off + plen:-4] == b"\x00" * ((4 - plen % 4) % 4)


def test_build_frame_argument_errors() -> None:
    with pytest.raises(WireError, match="needs RETH"):
        build_frame(1, 2, 3, OP_WRITE_ONLY, 0, 0, b"")
    with pytest.raises(WireError, match="takes no RETH"):
        build_frame(1, 2, 3, OP_WRITE_LAST, 0, 0, b"", reth=(0, 0, 0))
    with pytest.raises(WireError, match="not an RDMA WRITE opcode"):
        build_frame(1, 2, 3, 0x04, 0, 0, b"")
    with pytest.raises(WireError, match="psn"):
        build_frame(1, 2, 3, OP_WRITE_MIDDLE, 0, 1 << 24, b"")


def test_slot_too_small_is_refused_without_writing() -> None:
    slot = np.full(82, 0xEE, dtype=np.uint8)
    assert write_roce_headers(slot, 1, 2, 3, OP_WRITE_ONLY, 4, 5, False, 0, 0, 0, 30, 0) == -1
    assert (slot == 0xEE).all()
    off = write_roce_headers(slot, 1, 2, 3, OP_WRITE_MIDDLE, 4, 5, False, 0, 0, 0, 22, 0)
    assert off == 54
    assert finalize_roce_frame(slot, off, 25) == -1
    assert finalize_roce_frame(slot, off, 22) == 82


def test_slot_reuse_pad_is_zeroed() -> None:
    slot = np.full(256, 0xAB, dtype=np.uint8)
    off = write_roce_headers(slot, 1, 2, 3, OP_WRITE_MIDDLE, 4, 5, False, 0, 0, 0, 5, 0)
    n = finalize_roce_frame(slot, off, 5)
    assert slot[off + 5:off + 8].tolist() == [0, 0, 0]
    payload = slot[off:off + 5].tobytes()
    assert slot[:n].tobytes() == build_frame(1, 2, 3, OP_WRITE_MIDDLE, 4, 5, payload)


# --- malformed frames ---------------------------------------------------------------------------

@pytest.mark.parametrize("make", [_first, _middle])
def test_truncation_at_every_length(make) -> None:
    f = make()
    for n in range(len(f)):
        assert _code(f[:n]) == drops.TRUNCATED, n
        assert _code(f, n=n) == drops.TRUNCATED, n
    assert _code(f) == drops.OK
    assert _code(f, n=len(f) + 1) == drops.TRUNCATED       # claims more than the buffer holds
    assert _code(f, n=-1) == drops.TRUNCATED


def test_ethernet_padding_is_ignored() -> None:
    f = _middle(b"")
    assert len(f) == 58
    assert parse(f + b"\x00\x00").payload == b""


def test_every_ip_header_byte_flip_is_caught() -> None:
    f = _first()
    for i in range(IP_OFF + 1, IP_OFF + 20):
        b = bytearray(f)
        b[i] ^= 0x01
        assert _code(b) == drops.BAD_IP_CHECKSUM, i
    for first_byte, expected in ((0x44, drops.BAD_IP_HEADER), (0x65, drops.NOT_IPV4)):
        b = bytearray(f)
        b[IP_OFF] = first_byte                              # IHL 4 (below minimum); version 6
        assert _code(b) == expected


def _edit(frame: bytes, at: int, new: bytes, fix_csum: bool = False) -> bytearray:
    b = bytearray(frame)
    b[at:at + len(new)] = new
    return _fix_ip_csum(b) if fix_csum else b


def _be16(v: int) -> bytes:
    return v.to_bytes(2, "big")


def test_header_field_errors() -> None:
    f = _first()
    short = bytearray(f[:IP_OFF + 20 + 8 + 12 + 3])          # no room for BTH + ICRC
    short[IP_OFF + 2:IP_OFF + 4] = _be16(20 + 8 + 12 + 3)
    short[UDP_OFF + 4:UDP_OFF + 6] = _be16(8 + 12 + 3)
    no_reth = _edit(_middle(b""), BTH_OFF, bytes([OP_WRITE_FIRST]))   # FIRST without its RETH
    big_pad = _edit(_middle(b""), BTH_OFF + 1, b"\x30")      # PadCnt 3 > payload 0
    cases = [
        (_edit(f, 12, b"\x86\xdd"), drops.NOT_IPV4),
        (_edit(f, IP_OFF + 9, b"\x06", True), drops.NOT_UDP),
        (_edit(f, IP_OFF + 6, b"\x20", True), drops.BAD_IP_HEADER),          # MF: a fragment
        (_edit(f, IP_OFF + 2, _be16(19), True), drops.BAD_IP_LENGTH),
        (_edit(f, IP_OFF + 2, _be16(len(f) - 14 + 1), True), drops.TRUNCATED),
        (_edit(f, UDP_OFF + 4, _be16(len(f) - 34 - 1)), drops.BAD_UDP_LENGTH),
        (_edit(f, IP_OFF + 2, _be16(27), True), drops.BAD_UDP_LENGTH),
        (_edit(f, UDP_OFF + 2, _be16(4792)), drops.NOT_ROCE),
        (_edit(f, BTH_OFF + 1, bytes([f[BTH_OFF + 1] | 1])), drops.BAD_BTH),  # TVer 1
        (_fix_ip_csum(short), drops.BAD_BTH),
        (bytearray(_refinalize(no_reth)), drops.BAD_BTH),
        (bytearray(_refinalize(big_pad)), drops.BAD_BTH),
    ]
    cases += [(_edit(f, BTH_OFF, bytes([op])), drops.UNKNOWN_OPCODE)
              for op in (0x00, 0x04, 0x09, 0x0B, 0x12, 0x46, 0x80, 0xC2, 0xFF)]
    # the reliable transports' control opcodes are known but carry no payload
    cases += [(_edit(f, BTH_OFF, bytes([op])), drops.BAD_BTH) for op in (0x11, 0x81, 0xC1)]
    for b, expected in cases:
        assert _code(b) == expected, (b.hex(), expected)
        assert _code(b, check_icrc=False) == expected


def test_icrc_covers_payload_and_invariant_headers() -> None:
    f = _first(bytes(range(200)))
    for i in (ROCE_HEADER_BYTES + RETH_BYTES, len(f) - 5, len(f) - 1, BTH_OFF + 7, RETH_OFF + 3,
              UDP_OFF + 0, IP_OFF + 15):
        b = bytearray(f)
        b[i] ^= 0x80
        if i < UDP_OFF:
            _fix_ip_csum(b)
        assert _code(b) == drops.BAD_ICRC, i
        assert _code(b, check_icrc=False) == drops.OK, i
    b = bytearray(f)
    b[0:12] = bytes(range(12))                              # MACs change per hop: not covered
    assert _code(b) == drops.OK


def test_icrc_ignores_masked_fields() -> None:
    """TTL, TOS (ECN) and resv8a are masked out of the ICRC: switches may rewrite them."""
    b = bytearray(_first())
    b[IP_OFF + 1] = 0x03                                    # ECN CE
    b[IP_OFF + 8] = 17                                      # TTL
    b[BTH_OFF + 4] = 0xC0                                   # FECN/BECN bits of resv8a
    b[UDP_OFF + 6:UDP_OFF + 8] = b"\x12\x34"                # UDP checksum (not verified)
    p = parse(bytes(_fix_ip_csum(b)))
    assert (p.ecn, p.ttl) == (3, 17)


def test_random_garbage_never_raises() -> None:
    rng = np.random.default_rng(20240601)
    out = np.zeros(NUM_PARSED_FIELDS, dtype=np.int64)
    template = np.frombuffer(_first(bytes(64)), dtype=np.uint8)
    seen: set[int] = set()
    for k in range(6000):
        n = int(rng.integers(0, 200))
        if k % 2:
            buf = rng.integers(0, 256, n, dtype=np.uint8)
            if n >= 14 and k % 4 == 1:
                buf[12:14] = (8, 0)                         # get past the ethertype check
                if n >= 15:
                    buf[14] = 0x45
        else:                                               # mutations of a valid frame
            buf = template[:min(n, len(template))].copy() if k % 6 else template.copy()
            m = len(buf)
            for _ in range(int(rng.integers(1, 4))):
                if m:
                    buf[int(rng.integers(0, m))] = int(rng.integers(0, 256))
        code = int(parse_frame(buf, buf.shape[0], bool(k % 3), out))
        assert code == drops.OK or code in WIRE_CODES
        seen.add(code)
    assert len(seen) >= 6


# --- CRC-32 -------------------------------------------------------------------------------------

def test_crc32_matches_zlib() -> None:
    rng = np.random.default_rng(7)
    for n in list(range(0, 70)) + [255, 256, 1024, 1500, 9000]:
        data = rng.integers(0, 256, n + 9, dtype=np.uint8)
        for start in (0, 1, 7):
            assert crc32(data, start, start + n) == zlib.crc32(data[start:start + n].tobytes())


# --- no JIT and bounds checking -----------------------------------------------------------------

_SUBPROCESS_SCRIPT = r"""
import sys, numpy as np
from spin.wire import drops
from spin.wire import build_frame, parse, parse_frame, NUM_PARSED_FIELDS
import spin.results.capture
assert not [m for m in sys.modules if m.startswith("scapy")], "spin.wire must not import scapy"
f = build_frame(3, 0x0A0B0C, 40001, 6, 0x77, 1000, bytes(range(37)), ack_req=True,
                reth=(0x7F0000001000, 0xABCD, 4096), ip_id=9)
assert parse(f).payload == bytes(range(37))
out = np.zeros(NUM_PARSED_FIELDS, dtype=np.int64)
rng = np.random.default_rng(1)
base = np.frombuffer(f, dtype=np.uint8)
for n in range(len(f)):               # arrays sized exactly: any read past frame_len is caught
    assert parse_frame(base[:n].copy(), n, True, out) == drops.TRUNCATED
for k in range(int(sys.argv[1])):
    b = base.copy() if k % 2 else rng.integers(0, 256, int(rng.integers(0, 120)), dtype=np.uint8)
    if k % 2:
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        b = b[:int(rng.integers(0, len(b) + 1))].copy()
    parse_frame(b, b.shape[0], True, out)
sys.stdout.write(f.hex())
"""


def _run_sub(env_extra: dict[str, str], n_fuzz: int, tmp_path: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"), **env_extra)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS_SCRIPT, str(n_fuzz)], env=env,
                       capture_output=True, text=True, timeout=240, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_no_jit_mode_gives_identical_frames(tmp_path: Path) -> None:
    """NUMBA_DISABLE_JIT=1 (for pdb) builds the same bytes; also: no scapy import at runtime."""
    out = _run_sub({"NUMBA_DISABLE_JIT": "1"}, 50, tmp_path)
    assert bytes.fromhex(out) == _first()


def test_parse_never_reads_out_of_bounds(tmp_path: Path) -> None:
    """Compiled with NUMBA_BOUNDSCHECK=1: an out-of-bounds read would raise IndexError."""
    out = _run_sub({"NUMBA_BOUNDSCHECK": "1"}, 3000, tmp_path)
    assert bytes.fromhex(out) == _first()
