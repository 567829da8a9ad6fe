"""A RETH whose DMA length no RDMA WRITE can have (over IBTA's 2^31 B message limit, an ONLY
frame not carrying exactly its length, a FIRST frame carrying all of it or more) is refused when
the frame is parsed and counted as ``bad_dma_length``: it never opens a message that would wait
for millions of packets."""
import numpy as np
import pytest

from spin.engine import state as S
from spin.engine.ports import inject_frames
from spin.errors import WireError
from spin.simulation import Scenario, Simulation
from spin.topology import Topology
from spin.wire import build_frame, parse

FIRST, ONLY = 0x06, 0x0A
ABSURD = [(FIRST, 1024, 0xFFFF_FFFF), (FIRST, 1024, (1 << 31) + 1024), (FIRST, 1024, 1024),
          (FIRST, 1024, 10), (ONLY, 64, 65), (ONLY, 64, 0), (ONLY, 64, (1 << 31) + 64)]
SANE = [(FIRST, 1024, 4096), (FIRST, 1024, 1 << 31), (ONLY, 64, 64), (ONLY, 0, 0)]


@pytest.mark.parametrize("opcode,payload,dma_len", ABSURD)
def test_refused_at_parse_time(opcode, payload, dma_len):
    frame = build_frame(0, 1, 0xC000, opcode, 1, 0, bytes(payload), reth=(0, 0, dma_len))
    with pytest.raises(WireError, match="bad_dma_length"):
        parse(frame)


@pytest.mark.parametrize("opcode,payload,dma_len", SANE)
def test_sane_lengths_still_parse(opcode, payload, dma_len):
    frame = build_frame(0, 1, 0xC000, opcode, 1, 0, bytes(payload), reth=(0, 0, dma_len))
    assert parse(frame).reth == (0, 0, dma_len)


def test_engine_counts_the_drop_and_keeps_running():
    sc = Scenario(Topology.pair())
    sc.host_program(0).send(1, 100, qp=1, remote_addr=0)
    sc.host_program(1).wait_recv(qp=1).mark("got")
    sim = Simulation(sc)
    frames = [build_frame(0, 1, 0xC000, op, 1, 77 + i, bytes(n), reth=(0, 0, d))
              for i, (op, n, d) in enumerate(ABSURD)]
    buf = np.zeros((len(frames), sim.st.pool.shape[1]), np.uint8)
    for i, f in enumerate(frames):
        buf[i, :len(f)] = np.frombuffer(f, np.uint8)
    port = int(sim.st.dev[1, S.D_PORT0])
    inject_frames(sim.st, np.arange(len(frames), dtype=np.int64) * 1000 + 1000,
                  np.full(len(frames), port, np.int32), np.arange(len(frames), dtype=np.int64),
                  np.array([len(f) for f in frames], np.int32), buf)
    result = sim.run()
    assert result.drops == {"bad_dma_length": len(ABSURD)}
    assert "got" in result.marks and result.unfinished_hosts() == []
