"""PsPIN ``filtering``: Jenkins one-at-a-time hash of each record's key, lookup in a hash table
in handler memory; hits go to the host as (key, value), misses are dropped on the NIC."""
from __future__ import annotations

import numpy as np

from nic_emulator.pcie import CQE_BYTES  # each host notification is one PCIe write

from handlers.filtering import (KEY_BYTES, RECORD_BYTES, _one_at_a_time, filtering_completion,
                                filtering_payload, filtering_program)
from spin.config import EngineConfig
from spin.handler import ExecutionContext
from spin.simulation import Scenario, Simulation
from spin.topology import Topology

MTU, N_RECORDS, N_KEYS, QP = 256, 40, 64, 10
RESULTS, STAGING = 0x100, 0x10000


def test_one_at_a_time_reference_values():
    # Published values of Jenkins' one-at-a-time hash.
    for text, h in ((b"a", 0xCA2E9442), (b"The quick brown fox jumps over the lazy dog",
                                          0x519E91F5)):
        data = np.frombuffer(text, np.uint8)
        assert _one_at_a_time(data, 0, len(data)) == h


def _workload():
    rng = np.random.default_rng(6)
    keys = rng.choice(2**40, N_KEYS, replace=False).astype(np.int64)
    table = {int(k): int(k) * 7 + 1 for k in keys}
    hit = rng.random(N_RECORDS) < 0.5
    misses = rng.choice(2**40, N_RECORDS, replace=False).astype(np.int64) + 2**41
    stream_keys = np.where(hit, rng.choice(keys, N_RECORDS), misses)
    records = rng.integers(0, 256, (N_RECORDS, MTU), np.uint8)
    records[:, :KEY_BYTES] = stream_keys.view(np.uint8).reshape(N_RECORDS, KEY_BYTES)
    return table, stream_keys, hit, records


def build(offload: bool, library, table, records) -> Scenario:
    sc = Scenario(Topology.star(2), engine=EngineConfig(mtu_bytes=MTU), engine_programs=library)
    sc.write_host_memory(0, 0, records)
    sc.host_program(0).send(1, records.nbytes, qp=QP, local_addr=0, remote_addr=STAGING)
    host = sc.host_program(1).wait_recv(qp=QP)
    if offload:
        sc.install(ExecutionContext(1, filtering_program(table, RESULTS), match_qp=QP))
    else:  # the host scans every record it received (HostConfig.reduce_ps_per_byte per byte)
        host.compute(ns=records.nbytes * sc.host.reduce_ps_per_byte / 1000)
    host.mark("done")
    return sc


def test_filtering(library, model):
    table, keys, hit, records = _workload()
    n_hits = int(hit.sum())
    sim = Simulation(build(True, library, table, records))
    off = sim.run()
    mem = sim.host_memory(1)
    assert int(mem[RESULTS:RESULTS + 8].view(np.int64)[0]) == n_hits
    got = mem[RESULTS + 8:RESULTS + 8 + RECORD_BYTES * n_hits].view(np.int64).reshape(-1, 2)
    expect = [(int(k), table[int(k)]) for k in keys[hit]]  # handlers run in arrival order
    assert [tuple(map(int, r)) for r in got] == expect
    assert off.drops == {"handler_drop": N_RECORDS - n_hits}
    assert not mem[STAGING:STAGING + records.nbytes].any()
    # Only hits (16 B each) and the count (8 B) cross PCIe, instead of every record.
    assert off.nics[1].dma_write_bytes == RECORD_BYTES * n_hits + 8 + CQE_BYTES
    base = Simulation(build(False, library, table, records)).run()
    assert base.nics[1].dma_write_bytes == records.nbytes + CQE_BYTES
    # Saved: the host's scan. Added: the last record's lookup (worst case: a miss probing
    # the whole run of used slots) and the completion handler.
    saved = model.host_stream_ps(records.nbytes)
    nic_extra = (model.handler_ps(filtering_payload, MTU, extra_cycles=8 * (N_KEYS + 1))
                 + model.handler_ps(filtering_completion))
    gain = base.mark("done", 1) - off.mark("done", 1)
    assert saved - nic_extra <= gain <= saved
