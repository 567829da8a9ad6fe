"""The same scenario gives bit-identical results with 1, 2, 3 and 4 worker processes: every
metric, every delivered byte (host memory digests) and every captured pcap byte."""
import numpy as np
import pytest

from spin.fabric import run_scenario
from spin.simulation import Simulation

from .scenarios import ROOT_ADDR, N_ELEMS, eight_host_mix, expected_reduction


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    pcap = tmp_path_factory.mktemp("pcap1")
    sim = Simulation(eight_host_mix())      # also warms the engine cache for the workers
    result = sim.run(pcap_dir=pcap)
    return sim, result, pcap


def test_single_worker_run_is_correct(single):
    sim, result, _ = single
    got = sim.host_memory(0)[ROOT_ADDR:ROOT_ADDR + 4 * N_ELEMS].view(np.int32)
    np.testing.assert_array_equal(got, expected_reduction())
    assert set(result.marks) == {"reduced", "pingpong", "writes"}
    assert result.drops == {}
    assert sum(m.handled_by_nic for m in result.messages) >= 7 + 3


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3, 4])
def test_any_worker_count_gives_identical_results(single, workers, tmp_path):
    _, ref, ref_pcap = single
    sc = eight_host_mix()
    result = run_scenario(sc, workers=workers, pcap_dir=tmp_path, timeout_s=240)
    assert result.wall["rounds"] > 1
    assert result.to_dict(include_wall=False) == ref.to_dict(include_wall=False)
    # handler memory comes back from whichever worker owns each context, identical
    assert sorted(result.handler_memories) == sorted(ref.handler_memories) == [0, 1]
    for i, ctx in enumerate(sc.contexts):
        np.testing.assert_array_equal(result.handler_memory(ctx), ref.handler_memory(i))
    assert result.deterministic_digest() == ref.deterministic_digest()
    assert len(ref.host_memory_sha256) == 8          # the scenario asked for memory digests
    ref_files = sorted(p.name for p in ref_pcap.iterdir())
    assert ref_files == sorted(p.name for p in tmp_path.iterdir()) and ref_files
    for name in ref_files:
        assert (tmp_path / name).read_bytes() == (ref_pcap / name).read_bytes(), name
