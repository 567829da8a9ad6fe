"""Reliable NIC transports (``NicConfig.transport``): every message completes exactly once with
the right bytes under random loss, trimming and spraying; the counters show what the transport
did; results are identical for 1 and 2 workers; ACK/NAK/CNP/SACK frames dissect in scapy.

One small leaf-spine fabric (4 hosts, 100 Gb/s, MTU 1 KiB, 64 KiB messages) and no handler
programs, so every test shares one compiled engine.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spin.config import (EngineConfig, HostConfig, LinkConfig, NicConfig, SwitchConfig,
                         TransportConfig)
from spin.errors import ConfigError
from spin.fabric import run_scenario
from spin.results.report import run_summary
from spin.scenario_file import load_scenario
from spin.simulation import Scenario, Simulation
from spin.topologies import build_topology
from spin.wire import headers as H
from spin.wire import roce as W

SIZE = 64 * 1024
HOSTS = 4
LINE_MBPS = 100_000


def _pattern(node: int) -> np.ndarray:
    return ((np.arange(SIZE, dtype=np.int64) * 13 + node * 101 + 7) % 253).astype(np.uint8)


def _scenario(kind: str, entropy: str = "per_flow", loss: float = 0.0, trim: bool = False,
              ecn_bytes: int = 65_536, incast: bool = False, rto_us: float = 50.0) -> Scenario:
    """Permutation (host h -> h+2) or incast (hosts 1..3 -> host 0) of 64 KiB messages."""
    topo = build_topology("leaf_spine", leaves=2, spines=2, hosts_per_leaf=2,
                          link=LinkConfig(rate_gbps=100, latency_ns=500.0, loss_rate=loss,
                                          loss_seed=3))
    nic = NicConfig(transport=TransportConfig(kind=kind, entropy=entropy, rto_us=rto_us))
    switch = SwitchConfig(trim=trim, ecn_threshold_bytes=ecn_bytes)
    engine = EngineConfig(mtu_bytes=1024, queue_frames=24 if trim else 1024)
    sc = Scenario(topo, nic=nic, switch=switch, engine=engine,
                  host=HostConfig(memory_bytes=(HOSTS + 1) * SIZE))
    for h in range(HOSTS):
        sc.write_host_memory(h, 0, _pattern(h))
        if incast and h == 0:
            continue
        dst = 0 if incast else (h + 2) % HOSTS
        sc.host_program(h).send(dst, SIZE, qp=1, local_addr=0, remote_addr=SIZE * (1 + h))
    for h in range(HOSTS):   # every message must land for every host program to finish
        if not incast or h == 0:
            sc.host_program(h).wait_recv(qp=1, count=HOSTS - 1 if incast else 1)
    return sc


def _run(sc: Scenario):
    sim = Simulation(sc)
    return sim, sim.run()


def _assert_exact(sc: Scenario, sim: Simulation, result) -> None:
    """Every sent message landed once, with the sender's bytes, where it was addressed."""
    sends = {h: op[1] for h, prog in sc.host_programs.items() for op in prog.ops if op[0] == 1}
    incast = set(sends.values()) == {0}
    senders = sorted(sends)
    assert sorted((m.src, m.dst) for m in result.messages) == \
        sorted((h, 0 if incast else (h + 2) % HOSTS) for h in senders)
    for h in senders:
        dst = 0 if incast else (h + 2) % HOSTS
        got = sim.host_memory(dst)[SIZE * (1 + h):SIZE * (2 + h)]
        np.testing.assert_array_equal(got, _pattern(h))
    assert all(host.finished for host in result.hosts)


def _total(result, field: str) -> int:
    return sum(getattr(n, field) for n in result.nics)


@pytest.fixture(scope="module")
def rc_lossy():
    sc = _scenario("rc", loss=0.01)
    return (sc, *_run(sc))


@pytest.fixture(scope="module")
def ue_lossy_spray():
    sc = _scenario("ue", entropy="spray", loss=0.01)
    return (sc, *_run(sc))


def test_rc_delivers_exactly_once_under_loss(rc_lossy) -> None:
    sc, sim, result = rc_lossy
    _assert_exact(sc, sim, result)
    assert result.drops["random_loss"] > 0
    assert _total(result, "retransmissions") > 0
    assert _total(result, "naks_sent") > 0                  # go-back-N after a PSN gap
    assert result.drops.get("out_of_sequence", 0) > 0
    assert _total(result, "naks_received") == _total(result, "naks_sent") \
        or result.drops["random_loss"] > 0                  # NAKs may be lost too


def test_ue_spray_delivers_exactly_once_under_loss_and_reordering(ue_lossy_spray) -> None:
    sc, sim, result = ue_lossy_spray
    _assert_exact(sc, sim, result)
    assert result.drops["random_loss"] > 0
    assert _total(result, "retransmissions") > 0
    assert _total(result, "timeouts") > 0                   # a lost (not trimmed) packet
    assert _total(result, "out_of_order") > 0
    assert max(n.reorder_degree for n in result.nics) > 0


def test_per_flow_rc_without_loss_never_reorders_or_resends() -> None:
    sc = _scenario("rc")
    sim, result = _run(sc)
    _assert_exact(sc, sim, result)
    assert _total(result, "retransmissions") == 0 and _total(result, "out_of_order") == 0
    assert _total(result, "acks_received") == _total(result, "acks_sent") > 0
    assert result.drops == {}


@pytest.mark.parametrize("entropy", ["spray", "reps"])
def test_ue_trimmed_incast_nacks_and_delivers_exactly_once(entropy) -> None:
    sc = _scenario("ue", entropy=entropy, trim=True, incast=True)
    sim, result = _run(sc)
    _assert_exact(sc, sim, result)
    trims = sum(link.trims for link in result.links)
    assert trims > 0 and result.drops["trimmed"] == trims
    assert _total(result, "naks_sent") == trims             # one NACK per trimmed packet
    assert _total(result, "retransmissions") >= trims        # each resent at once
    assert _total(result, "timeouts") == 0


def test_dcqcn_cuts_the_rate_when_switches_mark() -> None:
    marked = _scenario("rc", incast=True, ecn_bytes=4096)
    unmarked = _scenario("rc", incast=True, ecn_bytes=0)
    sim_m, res_m = _run(marked)
    sim_u, res_u = _run(unmarked)
    _assert_exact(marked, sim_m, res_m)
    _assert_exact(unmarked, sim_u, res_u)
    assert sum(link.ecn_marks for link in res_m.links) > 0
    assert _total(res_m, "cnps_sent") > 0 and _total(res_m, "cnps_received") > 0
    cut = [n.min_rate_mbps for n in res_m.nics if n.min_rate_mbps]
    assert cut and max(cut) < LINE_MBPS
    assert _total(res_u, "cnps_sent") == 0
    assert all(n.min_rate_mbps == 0 for n in res_u.nics)


@pytest.mark.parametrize("kind,entropy", [("rc", "per_flow"), ("ue", "reps")])
def test_one_and_two_workers_give_identical_results(kind, entropy) -> None:
    sc = _scenario(kind, entropy=entropy, loss=0.01)
    one = run_scenario(sc, workers=1).to_dict(include_wall=False)
    two = run_scenario(sc, workers=2, timeout_s=900).to_dict(include_wall=False)
    assert one == two
    assert sum(n["retransmissions"] for n in one["nics"]) > 0


def test_control_frames_on_the_wire_dissect_in_scapy() -> None:
    from scapy.contrib.roce import AETH, BTH, CNPPadding
    from scapy.layers.l2 import Ether

    from spin.wire.scapy_layers import PLH, SACKH, bind_spin_layers
    bind_spin_layers()
    seen = {}
    dissected: dict[int, int] = {}
    for kind, incast in (("rc", True), ("ue", False)):
        sc = _scenario(kind, incast=incast, ecn_bytes=4096, loss=0.02, entropy="spray"
                       if kind == "ue" else "per_flow")
        sc.capture()
        sim, _ = _run(sc)
        for link in range(len(sc.topology.links)):
            for _, frame in sim.captured_frames(link):
                if frame[12:14] != b"\x08\x00":
                    continue
                out = np.zeros(W.NUM_PARSED_FIELDS, np.int64)
                assert W.parse_frame(np.frombuffer(frame, np.uint8).copy(), len(frame), True,
                                     out) == 0
                op = int(out[W.P_OPCODE])
                dissected[op] = dissected.get(op, 0) + 1
                if dissected[op] > 40 and not (op == H.OP_RC_ACKNOWLEDGE and "nak" not in seen):
                    continue   # enough of this kind (scapy is slow)
                pkt = Ether(frame)
                # scapy recomputes the same ICRC (and IPv4 checksum) from the fields
                rebuilt = pkt.copy()
                rebuilt[BTH].icrc = None
                del rebuilt["IP"].chksum
                assert bytes(rebuilt) == frame, hex(op)
                assert pkt[BTH].psn == out[W.P_PSN] and pkt[BTH].dqpn == out[W.P_DEST_QP]
                if op == H.OP_RC_ACKNOWLEDGE:
                    syn = pkt[AETH].syndrome
                    seen["nak" if syn == H.AETH_NAK_PSN_SEQUENCE else "ack"] = True
                    assert syn in (H.AETH_ACK, H.AETH_NAK_PSN_SEQUENCE)
                elif op == H.OP_CNP:
                    assert pkt[BTH].becn == 1 and CNPPadding in pkt
                    seen["cnp"] = True
                elif op == H.OP_UE_ACK:
                    assert pkt[SACKH].ev >= 0xC000 and pkt[AETH].syndrome == H.AETH_ACK
                    assert pkt[SACKH].cum_psn <= pkt[SACKH].sack_psn + 64
                    seen["sack"] = True
                elif op == H.OP_UE_WRITE:
                    assert pkt[PLH].msg_len == SIZE and pkt[PLH].va == out[W.P_RETH_VA]
                    seen["ue_write"] = True
    assert seen == {"ack": True, "nak": True, "cnp": True, "sack": True, "ue_write": True}


def test_transport_config_errors_name_field_value_and_choices() -> None:
    with pytest.raises(ConfigError) as e:
        NicConfig.make(transport={"kind": "tcp"})
    assert "transport.kind = 'tcp': unknown transport; valid choices: none, rc, ue" in str(e.value)
    with pytest.raises(ConfigError) as e:
        TransportConfig.make(kind="none", entropy="reps")
    assert "reps" in str(e.value) and "'rc' or 'ue'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        LinkConfig.make(loss_rate=1.5)
    assert "loss_rate" in str(e.value)


TRANSPORT_EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "transports")
                            .glob("*.toml"))


@pytest.mark.parametrize("path", TRANSPORT_EXAMPLES, ids=[p.stem for p in TRANSPORT_EXAMPLES])
def test_transport_examples_deliver_every_byte(path) -> None:
    sc, opts = load_scenario(path)
    assert sc.nic.transport.kind in ("rc", "ue")
    sim = Simulation(sc)
    result = sim.run()
    assert all(host.finished for host in result.hosts)
    flows = opts.workload.flows
    data = [m for m in result.messages if m.bytes > 1]   # incast: 1-byte releases between
    assert len(data) == len(flows)                        # iterations
    for f in flows:
        got = sim.host_memory(f.dst)[f.remote_addr:f.remote_addr + f.nbytes].tobytes()
        assert got == opts.workload.expected_bytes(f)
    assert _total(result, "retransmissions") > 0
    summary = run_summary(result)
    assert "transport" in summary and "retx" in summary   # `spin run` shows the counters
