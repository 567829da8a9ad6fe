"""Standing fuzz test of the path every peer message takes before the engine sees it: batch
decoding (spin.parallel.mesh/batch), the round checks (spin.parallel.sync) and the engine worker's
own admission (spin.runtime.fabric_workers.PeerFrameCheck). Thousands of malformed batches; none may
crash, none may reach the engine, and each is counted under the reason it was made for."""
from __future__ import annotations

import time

import numpy as np

from spin.runtime.fabric_workers import MIN_FRAME_BYTES, PeerFrameCheck
from spin.parallel.batch import HEADER_BYTES, META_BYTES_PER_FRAME, FrameBatch, encode_empty
from spin.parallel.mesh import Mesh
from spin.parallel.sync import admit_batches
from spin.topology import Topology

EPOCH = 0x5EED_F00D_CAFE_0001
ROUND = 7
T_END = 1_000_000
SLOT = 256
ME, PEER = 1, 0
N_WORKERS = 2


class _Program:
    def __init__(self, check: PeerFrameCheck) -> None:
        self.admit = check.admit


def _setup():
    topo = Topology.star(6)  # hosts h0..h5 (devices 0-5), switch s0 (device 6)
    owner = (0, 0, 0, 1, 1, 1, 0)  # worker 0: h0-h2 and the switch; worker 1 (us): h3-h5
    check = PeerFrameCheck(topo, owner, ME, SLOT)
    mesh = Mesh(None, None)  # no sockets: admit() is the receive path minus the recv call
    mesh.worker_id, mesh.n_workers, mesh.epoch = ME, N_WORKERS, EPOCH
    gp = topo.global_ports()
    links = topo.link_ports()
    # frames legitimately sent by the switch (worker 0) into our hosts' ports
    good_ports = []
    for i, link in enumerate(topo.links):
        a, b = links[i]
        host_port = a if link.a.startswith("h") else b
        host = link.a if link.a.startswith("h") else link.b
        if owner[topo.device_names().index(host)] == ME:
            good_ports.append(host_port)
    return topo, owner, check, mesh, gp, good_ports


def _valid(rng, good_ports, n: int) -> FrameBatch:
    ports = rng.choice(good_ports, n).astype(np.int32)
    dev = np.array([3 + good_ports.index(p) for p in ports], np.int32)  # h3..h5 in link order
    switch = 6
    return FrameBatch(
        arrival_ps=T_END + rng.integers(0, 10_000, n).astype(np.int64),
        dst_device=dev, dst_port=ports,
        order_key=(np.int64(switch) << 40) | rng.integers(0, 1 << 30, n).astype(np.int64),
        length=rng.integers(MIN_FRAME_BYTES, SLOT + 1, n).astype(np.int32),
        frames=rng.integers(0, 256, (n, SLOT), dtype=np.uint8),
    )


def _parts(b: FrameBatch) -> list[bytes]:
    """The message as it arrives: bytes, whatever buffer type encode handed to zmq."""
    return [bytes(memoryview(p)) if not isinstance(p, np.ndarray) else p.tobytes()
            for p in b.encode(EPOCH, ROUND, PEER, T_END, 1000)]


def _mutate(kind: str, b: FrameBatch, rng, check: PeerFrameCheck) -> FrameBatch:
    f = {k: np.array(getattr(b, k)) for k in ("arrival_ps", "dst_device", "dst_port", "order_key", "length", "frames")}
    i = int(rng.integers(0, b.n))
    if kind == "len_short":
        f["length"][i] = rng.integers(1, MIN_FRAME_BYTES)
    elif kind == "len_zero":
        f["length"][i] = rng.choice([0, -1, -(1 << 31)])
    elif kind == "len_long":
        f["length"][i] = SLOT + rng.integers(1, 1 << 20)
    elif kind == "port_range":
        f["dst_port"][i] = rng.choice([-1, len(check.port_dev), 1 << 30, -(1 << 31)])
    elif kind == "port_not_mine":  # a port of the switch (worker 0's own device)
        p = int(np.nonzero(check.port_dev == 6)[0][0])
        f["dst_port"][i], f["dst_device"][i] = p, 6
    elif kind == "device_mismatch":
        f["dst_device"][i] = (f["dst_device"][i] + 1 - 3) % 3 + 3
    elif kind == "key_device":
        f["order_key"][i] = (np.int64(int(rng.integers(0, 6))) << 40) | 5
    elif kind == "key_negative":
        f["order_key"][i] = -1 - int(rng.integers(0, 1 << 40))
    elif kind == "arrival_past":
        f["arrival_ps"][i] = T_END - 1 - int(rng.integers(0, 1 << 40))
    else:
        raise AssertionError(kind)
    return FrameBatch(**f)


FRAME_KINDS = {  # mutation -> the reason it must be counted under
    "len_short": "bad_length", "len_zero": "bad_length", "len_long": "bad_length",
    "port_range": "bad_port", "port_not_mine": "not_owned", "device_mismatch": "device_mismatch",
    "key_device": "bad_key", "key_negative": "bad_key", "arrival_past": "arrival_in_past",
}


def _wire(kind: str, b: FrameBatch, rng) -> tuple[list[bytes], str]:
    """Damage the encoded message itself; returns the parts and the reason expected."""
    (m,) = _parts(b)
    m = bytearray(m)
    if kind == "truncated_header":
        return [bytes(m[: rng.integers(0, HEADER_BYTES)])], "short_header"
    if kind == "magic":
        m[0:4] = rng.integers(0, 256, 4, dtype=np.uint8).tobytes()
        return [bytes(m)], "bad_magic"
    if kind == "version":
        m[4] ^= 0x80
        return [bytes(m)], "bad_magic"
    if kind == "epoch":
        m[10] ^= 1 + int(rng.integers(0, 255))
        return [bytes(m)], "foreign_epoch"
    if kind == "sender":
        m[26:30] = int(rng.choice([ME, 2, 99, 2**32 - 1])).to_bytes(4, "little")
        return [bytes(m)], "bad_sender"
    if kind == "round":
        m[18:26] = int(rng.choice([0, ROUND - 1, ROUND + 2, 2**63])).to_bytes(8, "little")
        return [bytes(m)], "bad_round"
    if kind == "huge_count":
        m[30:34] = int(rng.integers(2**20, 2**32)).to_bytes(4, "little")
        return [bytes(m)], "bad_size"
    if kind == "count_off_by_one":
        m[30:34] = (b.n + int(rng.choice([-1, 1]))).to_bytes(4, "little")
        return [bytes(m)], "bad_size"
    if kind == "frames_truncated":
        return [bytes(m[:-int(rng.integers(1, SLOT))])], "bad_size"
    if kind == "frames_extra":
        return [bytes(m) + bytes(int(rng.integers(1, SLOT)))], "bad_size"
    meta = HEADER_BYTES + b.n * META_BYTES_PER_FRAME
    if kind == "slots_part_short":  # the two-part layout of large batches, slots cut short
        return [bytes(m[:meta]), bytes(m[meta:-int(rng.integers(1, SLOT))])], "bad_frames_size"
    if kind == "meta_part_long":
        return [bytes(m[:meta + 1]), bytes(m[meta + 1:])], "bad_count"
    if kind == "empty_with_part":
        return [encode_empty(EPOCH, ROUND, PEER, T_END, 1000)[0], b"x"], "bad_parts"
    if kind == "slot_bad":
        m[6:10] = int(rng.choice([0, 1 << 17, 2**32 - 1])).to_bytes(4, "little")
        return [bytes(m)], "bad_slot_size"
    if kind == "three_parts":
        return [bytes(m[:meta]), bytes(m[meta:]), b"x"], "bad_parts"
    raise AssertionError(kind)


WIRE_KINDS = ("truncated_header", "magic", "version", "epoch", "sender", "round", "huge_count",
              "count_off_by_one", "frames_truncated", "frames_extra", "slots_part_short",
              "meta_part_long", "empty_with_part", "slot_bad", "three_parts")
MESH_LEVEL = {"short_header", "bad_magic", "foreign_epoch", "bad_sender", "bad_round"}


def _feed(mesh: Mesh, check: PeerFrameCheck, parts: list[bytes]) -> list[FrameBatch]:
    mesh.admit(parts, ROUND)
    got = mesh.filed(ROUND)
    mesh.filed(ROUND + 1)
    return admit_batches(mesh.inbox(got, T_END, 1000), _Program(check), mesh.stats, T_END)


def test_malformed_batches_are_counted_by_reason_and_never_delivered():
    started = time.monotonic()
    rng = np.random.default_rng(2024)
    _, _, check, mesh, _, good_ports = _setup()
    expected: dict[str, int] = {}
    made = 0
    for _ in range(150):  # 9 frame-level kinds x 150
        for kind, reason in FRAME_KINDS.items():
            b = _mutate(kind, _valid(rng, good_ports, int(rng.integers(1, 9))), rng, check)
            assert _feed(mesh, check, _parts(b)) == [], kind
            expected[reason] = expected.get(reason, 0) + 1
            made += 1
    for _ in range(100):  # 15 wire-level kinds x 100
        for kind in WIRE_KINDS:
            parts, reason = _wire(kind, _valid(rng, good_ports, int(rng.integers(1, 9))), rng)
            assert _feed(mesh, check, parts) == [], kind
            expected[reason] = expected.get(reason, 0) + 1
            made += 1
    random_reasons: dict[str, int] = {}
    for _ in range(500):  # random bytes, one or two parts
        parts = [rng.integers(0, 256, int(rng.integers(0, 400)), dtype=np.uint8).tobytes()
                 for _ in range(int(rng.integers(1, 3)))]
        before = dict(mesh.stats.rejected)
        assert _feed(mesh, check, parts) == []
        (reason,) = [k for k in mesh.stats.rejected if mesh.stats.rejected[k] != before.get(k, 0)]
        random_reasons[reason] = random_reasons.get(reason, 0) + 1
        made += 1
    assert made >= 1000
    assert set(random_reasons) <= {"short_header", "bad_magic"}
    for r, n in random_reasons.items():
        expected[r] = expected.get(r, 0) + n
    assert mesh.stats.rejected == expected
    assert sum(mesh.stats.rejected.values()) == made
    assert mesh.stats.foreign_dropped == expected["foreign_epoch"]
    assert time.monotonic() - started < 20


def test_valid_batches_pass_and_a_duplicate_is_refused():
    rng = np.random.default_rng(5)
    _, _, check, mesh, _, good_ports = _setup()
    b = _valid(rng, good_ports, 6)
    parts = _parts(b)
    mesh.admit(parts, ROUND)
    mesh.admit(parts, ROUND)  # the same peer twice in one round
    got = admit_batches(mesh.inbox(mesh.filed(ROUND), T_END, 1000), _Program(check), mesh.stats, T_END)
    assert len(got) == 1 and np.array_equal(got[0].frames, b.frames)
    assert np.array_equal(got[0].dst_port, b.dst_port)
    assert mesh.stats.rejected == {"duplicate": 1}
    # a bound-only message (the common case) is filed with its bound and no frames
    mesh.admit(encode_empty(EPOCH, ROUND, PEER, T_END + 5, 1000), ROUND)
    inbox = mesh.inbox(mesh.filed(ROUND), T_END, 1000)
    assert inbox.batches == [] and inbox.bounds_ps[PEER] == T_END + 5


def test_frames_from_a_worker_that_does_not_own_the_link_peer_are_refused():
    rng = np.random.default_rng(9)
    topo = Topology.star(6)
    owner = (0, 0, 0, 1, 1, 1, 2)  # the switch on worker 2: frames into h3-h5 must come from 2
    check = PeerFrameCheck(topo, owner, 1, SLOT)
    _, _, _, _, _, good_ports = _setup()
    b = _valid(rng, good_ports, 4)
    assert check.reason(b, 0, T_END) == "wrong_sender"
    assert check.reason(b, 2, T_END) is None
