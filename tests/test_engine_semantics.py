"""sPIN semantics and the cost model, checked on single runs in virtual time."""
import numpy as np
import pytest

from spin.config import HostConfig, LinkConfig, NicConfig, SwitchConfig
from spin.engine import state as S
from spin.engine.ports import inject_frames
from nic_emulator.pcie import CQE_BYTES
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from spin.units import serialization_ps
from spin.wire import build_frame

from tests.probe_handlers import (C_CALLS, C_START, H_CALLS, H_START, MSG_STATE_COUNT, MTU,
                                  P_CALLS, PER_PKT,
                                  PROBE_HEADER_CYCLES, PROBE_PAYLOAD_CYCLES, VIOLATIONS,
                                  engine_test_programs, probe_program,
                                  probe_program_without_completion)


def _scenario(topo=None, **kw) -> Scenario:
    return Scenario(topo or Topology.pair(), engine_programs=engine_test_programs(), **kw)


def _probe_run(n_packets: int, hpus: int = 32):
    sc = _scenario(nic=NicConfig(hpus=hpus))
    data = np.random.default_rng(0).integers(0, 256, n_packets * MTU, dtype=np.uint8)
    sc.write_host_memory(0, 0, data)
    ctx = sc.install(ExecutionContext(1, probe_program(), match_qp=5))
    sc.host_program(0).send(1, len(data), qp=5, remote_addr=0x1000)
    sc.host_program(1).wait_recv(qp=5).mark("received")
    sim = Simulation(sc)
    result = sim.run()
    return sim, result, sim.handler_memory(ctx), data


def test_header_first_payloads_parallel_completion_last():
    n = 16
    sim, result, mem, data = _probe_run(n)
    cycle_ps = 1000
    assert mem[H_CALLS] == 1 and mem[P_CALLS] == n and mem[C_CALLS] == 1
    assert mem[VIOLATIONS] == 0
    assert mem[MSG_STATE_COUNT] == n                      # per-message state seen by every handler
    headers = mem[PER_PKT + 2::4][:n]
    assert headers[0] == 14 + 20 + 8 + 12 + 16 + 4 and (headers[1:] == 14 + 20 + 8 + 12 + 4).all()
    header_end = mem[H_START] + PROBE_HEADER_CYCLES * cycle_ps
    starts = mem[PER_PKT::4][:n]
    hpus = mem[PER_PKT + 1::4][:n]
    assert (starts >= header_end).all()
    assert mem[C_START] >= (starts + PROBE_PAYLOAD_CYCLES * cycle_ps).max()
    # payload handlers overlap on several HPUs: 2 us handlers, packets arrive every ~22 ns
    assert len(set(hpus.tolist())) == n
    assert starts.max() - starts.min() < PROBE_PAYLOAD_CYCLES * cycle_ps
    # PROCEED: every packet also took the default path into host memory
    np.testing.assert_array_equal(sim.host_memory(1)[0x1000:0x1000 + len(data)], data)
    assert "received" in result.marks


def test_fewer_hpus_serialise_payload_handlers():
    n = 8
    _, fast, _, _ = _probe_run(n, hpus=32)
    _, slow, mem, _ = _probe_run(n, hpus=1)
    starts = np.sort(mem[PER_PKT::4][:n])
    assert (np.diff(starts) >= PROBE_PAYLOAD_CYCLES * 1000).all()
    delta = slow.mark("received", 1) - fast.mark("received", 1)
    assert delta >= (n - 1) * PROBE_PAYLOAD_CYCLES * 1000 - 8 * 30_000


def test_single_packet_latency_matches_the_cost_model():
    nbytes = 256
    nic, host, link = NicConfig(), HostConfig(), LinkConfig()
    sc = _scenario()
    sc.host_program(0).send(1, nbytes, qp=2, remote_addr=0)
    sc.host_program(1).wait_recv(qp=2).mark("got")
    result = Simulation(sc).run()
    pcie_lat = int(nic.pcie_latency_ns * 1000)
    pcie_xfer = (nbytes * int(round(1e6 / nic.pcie_rate_gbytes_per_s)) + 999) // 1000
    frame = 14 + 20 + 8 + 12 + 16 + nbytes + 4
    t = int(host.send_overhead_ns * 1000)                      # post the send
    t += pcie_lat + pcie_xfer + pcie_lat                        # NIC reads the payload
    t += serialization_ps(frame + 24, link.rate_gbps)           # on the wire
    t += int(link.latency_ns * 1000)                            # propagation
    t += nic.match_header_cycles * 1000                         # matching at the receiver
    t += pcie_xfer                                              # DMA write of the payload
    t += (CQE_BYTES * int(round(1e6 / nic.pcie_rate_gbytes_per_s)) + 999) // 1000
    t += pcie_lat                                               # completion entry visible
    t += int(host.recv_overhead_ns * 1000)                      # host consumes the completion
    assert result.mark("got", 1) == t


def test_default_path_delivers_multi_packet_message():
    sc = _scenario(Topology.star(3))
    data = np.arange(10_000, dtype=np.uint8) * 7
    sc.write_host_memory(2, 64, data)
    sc.host_program(2).send(0, len(data), qp=1, local_addr=64, remote_addr=4096)
    sc.host_program(0).wait_recv(qp=1).mark("got")
    sim = Simulation(sc)
    result = sim.run()
    np.testing.assert_array_equal(sim.host_memory(0)[4096:4096 + len(data)], data)
    [msg] = result.messages
    assert (msg.src, msg.dst, msg.bytes, msg.handled_by_nic) == (2, 0, len(data), False)
    assert msg.t_post_ps == int(HostConfig().send_overhead_ns * 1000)
    n_frames = -(-len(data) // 1024)
    assert sum(l.tx_frames for l in result.links) == 2 * n_frames  # host->switch->host
    assert result.nics[0].dma_write_bytes == len(data) + CQE_BYTES


def test_malformed_frames_are_dropped_and_counted_by_reason():
    sc = _scenario()
    sc.host_program(0).send(1, 100, qp=1, remote_addr=0)
    sc.host_program(1).wait_recv(qp=1).mark("got")
    sim = Simulation(sc)
    good = build_frame(0, 1, 0xC000, 10, 1, 77, bytes(40), reth=(0, 0, 40))
    bad_csum = bytearray(good)
    bad_csum[24] ^= 0xFF
    bad_icrc = bytearray(good)
    bad_icrc[-10] ^= 1
    not_ip = bytearray(good)
    not_ip[12:14] = b"\x86\xdd"
    frames = [good[:20], bytes(bad_csum), bytes(bad_icrc), bytes(not_ip),
              bytes(np.random.default_rng(3).integers(0, 256, 300, dtype=np.uint8))]
    slot = sim.st.pool.shape[1]
    buf = np.zeros((len(frames), slot), np.uint8)
    for i, f in enumerate(frames):
        buf[i, :len(f)] = np.frombuffer(f, np.uint8)
    nic1_port = int(sim.st.dev[1, S.D_PORT0])
    inject_frames(sim.st, np.arange(len(frames), dtype=np.int64) * 1000 + 1000,
                  np.full(len(frames), nic1_port, np.int32), np.arange(len(frames), dtype=np.int64),
                  np.array([len(f) for f in frames], np.int32), buf)
    result = sim.run()
    assert result.drops.get("truncated") == 1
    assert result.drops.get("bad_ip_checksum") == 1
    assert result.drops.get("bad_icrc") == 1
    assert result.drops.get("not_ipv4", 0) >= 1  # the IPv6 ethertype (and maybe the garbage)
    assert sum(result.drops.values()) == 5
    assert "got" in result.marks  # the legitimate message still arrived



@pytest.mark.parametrize("bad", ["port_past_end", "port_negative", "length_negative",
                                 "length_past_slot", "arrays_disagree"])
def test_injecting_frames_directly_with_bad_arrays_raises_and_writes_nothing(bad):
    """The compiled ``inject_frames`` (callers check batches first) refuses arrays that would
    make it write outside the state, instead of crashing the process."""
    sc = _scenario()
    sc.host_program(0).send(1, 100, qp=1, remote_addr=0)
    sim = Simulation(sc)
    width = sim.st.pool.shape[1]
    port = {"port_past_end": 1_000_000, "port_negative": -1}.get(bad, 0)
    length = {"length_negative": -1, "length_past_slot": width + 1}.get(bad, 60)
    times = np.array([1000, 2000] if bad == "arrays_disagree" else [1000], np.int64)
    before = int(sim.st.sc[S.SC_SLOT_FREE_TOP]), int(sim.st.sc[S.SC_HEAP_N])
    with pytest.raises((IndexError, ValueError), match="inject_frames"):
        inject_frames(sim.st, times, np.array([port], np.int32), np.array([7], np.int64),
                      np.array([length], np.int32), np.zeros((1, width), np.uint8))
    assert (int(sim.st.sc[S.SC_SLOT_FREE_TOP]), int(sim.st.sc[S.SC_HEAP_N])) == before


def test_full_switch_buffer_tail_drops_and_reports_unfinished_hosts():
    topo = Topology.star(5, LinkConfig(rate_gbps=100))
    sc = _scenario(topo, switch=SwitchConfig(port_buffer_bytes=8192))
    for i in range(1, 5):
        sc.host_program(i).send(0, 64 * 1024, qp=1, remote_addr=0)
    sc.host_program(0).wait_recv(qp=1, count=4).mark("all")
    result = Simulation(sc).run()
    assert result.drops.get("queue_full", 0) > 0
    assert result.switches[0].drops["queue_full"] == result.drops["queue_full"]
    assert not result.marks.get("all")
    assert not result.hosts[0].finished


def test_results_are_deterministic_and_json_serialisable():
    a = _probe_run(4)[1]
    b = _probe_run(4)[1]
    assert a.deterministic_digest() == b.deterministic_digest()
    import json
    d = json.loads(a.to_json())
    assert d["totals"]["hpu_busy_ps"] > 0 and "wall" in d


def test_host_event_never_overtakes_the_data_it_announces():
    from handlers.reduce import reduce_program
    n_elems = 4096
    sc = Scenario(Topology.pair(), engine_programs=engine_test_programs())
    sc.write_host_memory(0, 0, np.arange(n_elems, dtype=np.int32))
    sc.install(ExecutionContext(1, reduce_program(n_elems, 1), match_qp=3))
    sc.host_program(0).send(1, 4 * n_elems, qp=3, remote_addr=0x8000)
    sc.host_program(1).wait_event().mark("event")
    sim = Simulation(sc)
    result = sim.run()
    nic = NicConfig()
    transfer = (4 * n_elems * int(round(1e6 / nic.pcie_rate_gbytes_per_s)) + 999) // 1000
    # the result's DMA (16 KiB) must be visible before the event: at least its transfer time
    # separates the completion handler's end from the host seeing the event
    got = sim.host_memory(1)[0x8000:0x8000 + 4 * n_elems].view(np.int32)
    np.testing.assert_array_equal(got, np.arange(n_elems, dtype=np.int32))
    assert result.nics[1].dma_write_bytes == 4 * n_elems + CQE_BYTES
    assert result.mark("event", 1) >= transfer + int(nic.pcie_latency_ns * 1000)


def test_payload_proceed_without_completion_handler_notifies_the_host():
    sc = _scenario()
    sc.install(ExecutionContext(1, probe_program_without_completion(), match_qp=5))
    sc.host_program(0).send(1, 3000, qp=5, remote_addr=0)
    sc.host_program(1).wait_recv(qp=5).mark("got")
    result = Simulation(sc).run()
    assert "got" in result.marks and result.marks["got"]


def test_boundscheck_switch_names_a_handler_indexing_out_of_bounds():
    from spin.config import EngineConfig
    from spin.errors import HandlerError
    from tests.probe_handlers import out_of_bounds_program
    sc = Scenario(Topology.pair(), engine=EngineConfig(boundscheck=True))
    sc.install(ExecutionContext(1, out_of_bounds_program(), match_qp=9))
    sc.host_program(0).send(1, 100, qp=9)
    with pytest.raises(HandlerError) as info:
        Simulation(sc).run()
    msg = str(info.value)
    assert "out_of_bounds_payload" in msg and "IndexError" in msg and "qp 9" in msg


def test_captured_frames_carry_a_valid_icrc():
    """The engine defers the ICRC of frames it builds until their bytes can be observed; every
    captured frame must still verify, in our parser and in scapy."""
    from spin.wire import parse
    from spin.wire.scapy_layers import bind_spin_layers
    from scapy.layers.l2 import Ether
    bind_spin_layers()
    sc = _scenario(Topology.star(3))
    sc.write_host_memory(0, 0, np.random.default_rng(9).integers(0, 256, 5000, dtype=np.uint8))
    sc.install(ExecutionContext(1, probe_program(), match_qp=5))
    sc.host_program(0).send(1, 5000, qp=5).send(2, 700, qp=1)
    sc.host_program(1).wait_recv(qp=5)
    sc.capture()
    sim = Simulation(sc)
    sim.run()
    frames = [f for link in range(3) for _, f in sim.captured_frames(link)]
    assert len(frames) == 2 * (5 + 1)
    for f in frames:
        parse(f)                                   # raises WireError on a bad ICRC
        icrc = Ether(f).getlayer("BTH").icrc
        rebuilt = Ether(f)
        rebuilt.getlayer("BTH").icrc = None
        assert bytes(rebuilt)[-4:] == f[-4:] and icrc is not None


def test_small_capture_buffer_is_drained_without_losing_frames(tmp_path):
    from spin.config import EngineConfig

    def run(capture_frames, out):
        sc = _scenario(Topology.star(3), engine=EngineConfig(capture_frames=capture_frames))
        sc.host_program(0).send(1, 40_000, qp=1).send(2, 9_000, qp=1)
        sc.capture()
        sim = Simulation(sc)
        sim.run(pcap_dir=out)
        return sorted(out.iterdir()), len(sim.captured.time_ps)

    small, n_small = run(16, tmp_path / "small")
    large, n_large = run(4096, tmp_path / "large")
    assert n_small == n_large == 2 * (40 + 9)
    assert [p.read_bytes() for p in small] == [p.read_bytes() for p in large]
