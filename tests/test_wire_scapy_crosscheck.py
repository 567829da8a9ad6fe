"""The Numba wire path and the scapy mirror agree byte for byte and field for field."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("scapy")

from scapy.compat import raw  # noqa: E402
from scapy.contrib.roce import BTH as ScapyBTH  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

from spin.wire import drops  # noqa: E402
from spin.wire import (  # noqa: E402
    NUM_PARSED_FIELDS, P_ACK_REQ, P_DEST_QP, P_DST_NODE, P_ECN, P_EV, P_HAS_RETH, P_OPCODE,
    P_PAYLOAD_LEN, P_PAYLOAD_OFF, P_PSN, P_RETH_DMA_LEN, P_RETH_RKEY, P_RETH_VA, P_SRC_NODE,
    P_TTL, RETH_OPCODES, VALID_OPCODES, build_frame, parse_frame,
)
from spin.wire.scapy_layers import RETH, bind_spin_layers, scapy_roce_frame  # noqa: E402

N_CASES = 320
U64 = (1 << 64) - 1


@dataclass(frozen=True)
class Case:
    src: int
    dst: int
    ev: int
    opcode: int
    qp: int
    psn: int
    payload: bytes
    ack_req: bool
    reth: tuple[int, int, int] | None
    ip_id: int

    def args(self) -> tuple:
        return (self.src, self.dst, self.ev, self.opcode, self.qp, self.psn, self.payload)

    def kwargs(self) -> dict:
        return {"ack_req": self.ack_req, "reth": self.reth, "ip_id": self.ip_id}


def _cases(seed: int, n: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    ops = sorted(VALID_OPCODES)
    out = []
    for k in range(n):
        op = ops[k % len(ops)] if k < 2 * len(ops) else int(rng.choice(ops))
        plen = int(rng.integers(0, 9)) if k % 4 == 0 else int(rng.integers(0, 1025))
        # a valid DMA length: ONLY carries the whole message, FIRST leaves some (up to 2^31 B)
        reth = (int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2)),
                int(rng.integers(0, 1 << 32)),
                plen if op & 0x1F == 0x0A else plen + 1 + int(rng.integers(0, (1 << 31) - plen))) \
            if op in RETH_OPCODES else None
        out.append(Case(int(rng.integers(0, 1 << 24)), int(rng.integers(0, 1 << 24)),
                        int(rng.integers(0, 1 << 16)), op, int(rng.integers(0, 1 << 24)),
                        int(rng.integers(0, 1 << 24)), rng.bytes(plen), bool(rng.integers(0, 2)),
                        reth, int(rng.integers(0, 1 << 16))))
    return out


@pytest.fixture(scope="module", autouse=True)
def _bind() -> None:
    bind_spin_layers()


def test_bind_is_idempotent() -> None:
    before = list(ScapyBTH.payload_guess)
    bind_spin_layers()
    bind_spin_layers()
    assert ScapyBTH.payload_guess == before
    assert sum(1 for _, cls in before if cls is RETH) == len(RETH_OPCODES)


def _parse(frame: bytes) -> tuple[int, np.ndarray]:
    buf = np.frombuffer(frame, dtype=np.uint8).copy()
    out = np.full(NUM_PARSED_FIELDS, -1, dtype=np.int64)
    return int(parse_frame(buf, len(buf), True, out)), out


def test_scapy_built_frames_parse_identically() -> None:
    """(a) scapy crafts, Numba parses (ICRC checked): every field matches."""
    rng = np.random.default_rng(11)
    for c in _cases(1, N_CASES):
        pkt = scapy_roce_frame(*c.args(), **c.kwargs())
        ecn, ttl = int(rng.integers(0, 4)), int(rng.integers(1, 256))
        pkt[IP].tos = (int(rng.integers(0, 64)) << 2) | ecn
        pkt[IP].ttl = ttl
        frame = raw(pkt)
        code, o = _parse(frame)
        assert code == drops.OK, (c, drops.DROP_REASON_NAMES.get(code))
        d = Ether(frame)
        assert (o[P_SRC_NODE], o[P_DST_NODE]) == (c.src, c.dst)
        assert (o[P_EV], o[P_OPCODE], o[P_DEST_QP], o[P_PSN], o[P_ACK_REQ]) == \
            (d[UDP].sport, d[ScapyBTH].opcode, d[ScapyBTH].dqpn, d[ScapyBTH].psn,
             d[ScapyBTH].ackreq) == (c.ev, c.opcode, c.qp, c.psn, int(c.ack_req))
        assert (o[P_ECN], o[P_TTL]) == (ecn, ttl)
        if c.reth is None:
            assert o[P_HAS_RETH] == 0 and RETH not in d
        else:
            assert o[P_HAS_RETH] == 1
            got = (int(o[P_RETH_VA]) & U64, int(o[P_RETH_RKEY]), int(o[P_RETH_DMA_LEN]))
            assert got == (d[RETH].va, d[RETH].rkey, d[RETH].dma_len) == c.reth
        off, plen = int(o[P_PAYLOAD_OFF]), int(o[P_PAYLOAD_LEN])
        assert plen == len(c.payload) and frame[off:off + plen] == c.payload


def test_engine_frames_are_byte_identical_to_scapy() -> None:
    """(b) Numba builds; bytes equal scapy's; scapy dissects the same fields and ICRC."""
    for c in _cases(2, N_CASES):
        frame = build_frame(*c.args(), **c.kwargs())
        assert frame == raw(scapy_roce_frame(*c.args(), **c.kwargs())), c
        d = Ether(frame)
        assert (d[IP].src, d[IP].dst, d[IP].id, d[IP].tos, d[IP].ttl, d[IP].flags.value) == \
            (f"10.{c.src >> 16}.{(c.src >> 8) & 255}.{c.src & 255}",
             f"10.{c.dst >> 16}.{(c.dst >> 8) & 255}.{c.dst & 255}", c.ip_id, 2, 64, 2)
        assert (d[UDP].sport, d[UDP].dport, d[UDP].chksum) == (c.ev, 4791, 0)
        b = d[ScapyBTH]
        pad = (4 - len(c.payload) % 4) % 4
        assert (b.opcode, b.dqpn, b.psn, b.ackreq, b.padcount, b.pkey, b.version) == \
            (c.opcode, c.qp, c.psn, int(c.ack_req), pad, 0xFFFF, 0)
        if c.reth is not None:
            assert (d[RETH].va, d[RETH].rkey, d[RETH].dma_len) == c.reth
        assert d[Raw].load == c.payload + b"\x00" * pad if (c.payload or pad) else Raw not in d
        # ICRC: scapy recomputes it from the dissected packet.
        assert b.icrc == int.from_bytes(frame[-4:], "big")
        b.icrc = None
        assert raw(d)[-4:] == frame[-4:]
        # IPv4 header checksum: scapy recomputes it.
        d2 = Ether(frame)
        stored = d2[IP].chksum
        d2[IP].chksum = None
        assert Ether(raw(d2))[IP].chksum == stored


def test_ip_options_frame_from_scapy_parses() -> None:
    """IHL > 5 (not built by spin, but legal on the wire) takes the generic ICRC path."""
    for c in _cases(3, 12):
        pkt = scapy_roce_frame(*c.args(), **c.kwargs())
        pkt[IP].options = [b"\x01\x01\x01\x00", b"\x01\x01\x01\x00"]
        frame = raw(pkt)
        code, o = _parse(frame)
        assert code == drops.OK
        off, plen = int(o[P_PAYLOAD_OFF]), int(o[P_PAYLOAD_LEN])
        assert frame[off:off + plen] == c.payload and o[P_PSN] == c.psn
        bad = bytearray(frame)
        bad[off - 1] ^= 1
        assert _parse(bytes(bad))[0] == drops.BAD_ICRC
