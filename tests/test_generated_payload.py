"""Generated payload (``Scenario.payload = "generated"``): the same run as with bytes in host
memory, real bytes on the wire, no host memory kept, and clear refusals of what needs memory."""
import numpy as np
import pytest

from spin import ConfigError, Scenario, Topology
from spin.loadbalancing.compare import add_workload, fabric_scenario
from spin.runtime.fabric import run_scenario
from spin.runtime.simulation import Simulation
from spin.wire import parse
from spin.wire.payload import PATTERN_BYTES, generated_bytes, pattern_start


def _permutation(payload: str, transport: str):
    sc = fabric_scenario("fat_tree", {"k": 4}, transport=transport)
    add_workload(sc, "permutation", message_bytes=50_000, seed=3, fill=False, payload=payload)
    return sc


def _figures(result):
    """Everything a run reports that does not read host memory."""
    msgs = sorted((m.src, m.dst, m.qp, m.bytes, m.t_post_ps, m.completion_ps,
                   m.sender_completion_ps) for m in result.messages)
    links = [(l.from_device, l.to_device, l.tx_frames, l.tx_bytes, l.trims, l.ecn_marks)
             for l in result.links]
    return msgs, links, result.events, result.packet_events, dict(result.drops)


@pytest.mark.parametrize("transport", ["ue", "none"])
def test_generated_payload_gives_the_same_run_as_stored(transport):
    stored = run_scenario(_permutation("stored", transport))
    generated = run_scenario(_permutation("generated", transport))
    assert len(stored.messages) == 16
    assert _figures(generated) == _figures(stored)


@pytest.mark.slow
def test_generated_payload_is_identical_on_two_workers():
    """Frames cross to the other worker as their header slots (the payload is generated at
    both ends): the same run, and far fewer bytes between the workers than the frames carry."""
    one = run_scenario(_permutation("generated", "ue"))
    two = run_scenario(_permutation("generated", "ue"), workers=2)
    assert _figures(two) == _figures(one)
    from spin.wire.roce import HEADER_SLOT_BYTES
    crossed = two.wall["frames_exchanged"]
    assert crossed > 0 and two.wall["bytes_exchanged"] <= crossed * (HEADER_SLOT_BYTES + 64)


def test_frames_carry_the_generated_bytes():
    """Every captured data frame verifies (ICRC included) and carries exactly the bytes
    ``generated_bytes`` defines for its sender and address, also across the table's wrap."""
    sc = Scenario(Topology.star(3), payload="generated")
    sc.host_program(1).send(2, 3 * 4096 + 100, qp=1, local_addr=PATTERN_BYTES - 5000)
    sc.host_program(2).send(0, 700, qp=1, local_addr=12_345)
    sc.capture()
    sim = Simulation(sc)
    sim.run()
    seen = 0
    for link in range(3):
        for _, frame in sim.captured_frames(link):
            f = parse(frame)                      # raises on a bad ICRC
            if not f.payload:
                continue
            src = f.src_node
            base = {1: PATTERN_BYTES - 5000, 2: 12_345}[src]
            # the packet's offset in its message, from its PSN relative to the first one
            first = min(parse(g).psn for _, g in sim.captured_frames(link)
                        if parse(g).src_node == src and parse(g).payload)
            offset = (f.psn - first) * sc.engine.mtu_bytes
            assert f.payload == generated_bytes(src, base + offset, len(f.payload))
            seen += 1
    mtu = sc.engine.mtu_bytes      # each frame is captured on the sender's and receiver's links
    assert seen == 2 * (-(-(3 * 4096 + 100) // mtu) + -(-700 // mtu))


def test_generated_bytes_differ_between_nodes_and_addresses():
    a = generated_bytes(1, 0, 256)
    assert a != generated_bytes(2, 0, 256) and a != generated_bytes(1, 256, 256)
    assert generated_bytes(1, 100, 50) == a[100:150]
    assert pattern_start(0, PATTERN_BYTES) == 0


def test_no_host_memory_is_kept():
    """The engine's host memory holds the table and the handlers' staging area only, however
    large the hosts' address space."""
    small = _permutation("generated", "ue")
    big = _permutation("generated", "ue")
    big.host = big.host.model_copy(update={"memory_bytes": 1 << 30})
    sizes = [Simulation(sc, quiet=True).st.host_mem.nbytes for sc in (small, big)]
    assert sizes[0] == sizes[1] < 2 * PATTERN_BYTES + 256 * 8192
    with pytest.raises(ConfigError, match="keeps no host memory"):
        Simulation(small, quiet=True).host_memory(0)


def test_what_needs_host_memory_is_refused():
    sc = Scenario(Topology.star(2), payload="generated")
    sc.write_host_memory(0, 0, np.ones(8, np.uint8))
    sc.host_program(0).send(1, 8, qp=1)
    with pytest.raises(ConfigError, match="write_host_memory"):
        Simulation(sc, quiet=True)

    sc = Scenario(Topology.star(2), payload="generated")
    sc.host_program(0).reduce(0, 64, 4, "int32")
    with pytest.raises(ConfigError, match=r"op 0 \(reduce\)"):
        Simulation(sc, quiet=True)

    sc = Scenario(Topology.star(2), payload="generated")
    sc.host_program(0).send(1, 8, qp=1)
    with pytest.raises(ConfigError, match="regions"):
        run_scenario(sc, regions=[(1, 0, 8)])

    with pytest.raises(ConfigError, match="payload = 'sometimes'"):
        Simulation(Scenario(Topology.star(2), payload="sometimes"), quiet=True)


def test_workload_payload_parameter():
    sc = fabric_scenario("fat_tree", {"k": 4}, transport="ue")
    with pytest.raises(ConfigError, match="fill = true with payload = 'generated'"):
        add_workload(sc, "permutation", message_bytes=4096, fill=True, payload="generated")
    with pytest.raises(ConfigError, match="payload"):
        add_workload(sc, "permutation", message_bytes=4096, payload="zeros")
    add_workload(sc, "permutation", message_bytes=4096, payload="generated")
    assert sc.payload == "generated" and not sc.host_memory


def test_frame_slots_hold_headers_only_when_nothing_reads_the_payload():
    """Generated payload, no handler and no capture: frame slots are ``HEADER_SLOT_BYTES``, in
    one process and on workers, and the run is the same as one whose slots hold every byte (a
    capture, which must see the bytes, and an attached host give full slots)."""
    from spin.wire.roce import HEADER_SLOT_BYTES
    full = _permutation("generated", "ue").engine.mtu_bytes + 128
    bare = Simulation(_permutation("generated", "ue"), quiet=True)
    assert bare.st.pool.shape[1] == HEADER_SLOT_BYTES
    captured_sc = _permutation("generated", "ue")
    captured_sc.capture()
    captured = Simulation(captured_sc, quiet=True)
    assert captured.st.pool.shape[1] >= full
    assert Simulation(_permutation("stored", "ue"), quiet=True).st.pool.shape[1] >= full
    worker = Simulation(_permutation("generated", "ue"), quiet=True,
                        local_devices=set(range(bare.n_devs)))   # as a worker process builds it
    assert worker.st.pool.shape[1] == HEADER_SLOT_BYTES     # its peers generate the payload too
    attached = Simulation(_permutation("generated", "ue"), quiet=True, attached_hosts=True,
                          local_devices=set(range(bare.n_devs)))
    assert attached.st.pool.shape[1] >= full                # a host outside spin reads bytes
    assert _figures(bare.run(quiet=True)) == _figures(captured.run(quiet=True))


def test_header_slots_keep_the_queue_limits_of_full_frames():
    """Queues hold as many bytes with header slots as with full ones: an incast that queues
    far more than 1,024 header slots' worth (128 KiB) at a NIC and a switch gives the same run."""
    def incast(payload):
        sc = Scenario(Topology.star(4), payload=payload)
        for src in (1, 2, 3):
            sc.host_program(src).send(0, 800_000, qp=1)
        return sc
    stored, generated = run_scenario(incast("stored")), run_scenario(incast("generated"))
    assert max(l.max_queue_bytes for l in generated.links) > 1024 * 128
    assert _figures(generated) == _figures(stored)
