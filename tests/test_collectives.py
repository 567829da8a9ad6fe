"""Host-based allreduce baselines (spin.collectives): results against numpy for every algorithm,
rank count and awkward size; the same bits with 1 and 2 workers; the ring's emulated time
against the alpha-beta formula computed from the configs.

No handler programs: every scenario here shares one compiled engine.
"""
import numpy as np
import pytest

from spin.collectives import ALGORITHMS, algorithm
from spin.collectives.common import (Fold, block_counts, bf16_to_float32, float32_to_bf16,
                                     sum_bfloat16, sum_float16)
from spin.collectives.measure import (allreduce_scenario, check_result, evaluate, make_inputs,
                                      measure)
from spin.collectives.theory import ring_model
from spin.config import EngineConfig, HostConfig, LinkConfig, NicConfig, SwitchConfig
from spin.errors import ConfigError, HostMemoryError
from spin.testing import run, run_both
from spin.topology import Topology

ALGOS = ("ring", "rd", "rabenseifner")


def _run(name, n, count, dtype, seed=0, workers=1):
    sc, plan, inputs = allreduce_scenario(name, n, count, dtype, seed=seed)
    result = run(sc, workers, read=plan.reads())
    outputs = [result.read(*r) for r in plan.reads()]
    return evaluate(result, plan, inputs), inputs, outputs


@pytest.mark.parametrize("name", ALGOS)
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_int32_equals_numpy_exactly(name, n):
    """Integer sums (wrapping) are associative: every rank must hold numpy's sum bit for bit,
    whatever the split (1 element on 8 ranks leaves most blocks empty; 4099 is prime)."""
    for count in (1, 7, 1000, 4099):
        m, inputs, outputs = _run(name, n, count, "int32", seed=count)
        ref = np.sum(inputs, axis=0, dtype=np.int32)
        for out in outputs:
            np.testing.assert_array_equal(out, ref)
        assert m.correct and m.time_ps > 0


@pytest.mark.parametrize("name", ALGOS)
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_float32_within_rounding_of_numpy(name, n):
    """Floats: the order of additions differs by algorithm (the ring adds block b as b+1, b+2,
    ...; recursive doubling adds partial sums pairwise), so the result differs from numpy's
    in the last bits; it must stay within n-1 float32 roundings of the exact sum, and every
    rank must hold the same bits."""
    for count in (7, 4099):
        m, inputs, outputs = _run(name, n, count, "float32", seed=count)
        ref = inputs.astype(np.float64).sum(axis=0)
        scale = np.abs(inputs.astype(np.float64)).sum(axis=0)
        for out in outputs:
            assert out.tobytes() == outputs[0].tobytes()
            assert np.all(np.abs(out - ref) <= (n - 1) * 2.0 ** -24 * scale)
        np.testing.assert_allclose(outputs[0], inputs.sum(axis=0), rtol=1e-5, atol=1e-5)
        assert m.correct


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ALGOS)
def test_16_bit_types(name, dtype):
    for n in (3, 8):
        m, inputs, outputs = _run(name, n, 1001, dtype, seed=n)
        x = bf16_to_float32(inputs) if dtype == "bfloat16" else inputs.astype(np.float32)
        got = bf16_to_float32(outputs[0]) if dtype == "bfloat16" else outputs[0]
        u = 2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -11
        bound = (n - 1) * u * np.abs(x.astype(np.float64)).sum(axis=0) + 1e-7
        assert np.all(np.abs(got.astype(np.float64) - x.astype(np.float64).sum(axis=0)) <= bound)
        assert m.correct


def test_16_bit_adds_are_correctly_rounded():
    """float32 is wide enough (24 >= 2p + 2) that add-then-round equals a correctly rounded
    16-bit add: compare with float64 adds on random and extreme operands."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(20000) * 2.0 ** rng.integers(-20, 15, 20000)).astype(np.float16)
    b = (rng.standard_normal(20000) * 2.0 ** rng.integers(-20, 15, 20000)).astype(np.float16)
    exact = (a.astype(np.float64) + b.astype(np.float64)).astype(np.float16)
    assert sum_float16(a, b).tobytes() == exact.tobytes()
    # bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: round to even (1.0)
    one, half_ulp = float32_to_bf16(np.float32([1.0])), float32_to_bf16(np.float32([2.0 ** -8]))
    assert bf16_to_float32(sum_bfloat16(one, half_ulp))[0] == 1.0
    three_q = float32_to_bf16(np.float32([1.0 + 2.0 ** -7]))
    assert bf16_to_float32(sum_bfloat16(three_q, half_ulp))[0] == 1.0 + 2.0 ** -6
    big = float32_to_bf16(np.float32([3.0e38]))
    assert np.isinf(bf16_to_float32(sum_bfloat16(big, big))[0])
    assert np.isnan(bf16_to_float32(float32_to_bf16(np.float32([np.nan])))[0])


def test_checker_rejects_a_wrong_or_diverging_result():
    inputs = make_inputs(4, 100, "float32", seed=3)
    good = inputs.sum(axis=0)
    assert check_result(inputs, [good, good.copy()], "float32")[0]
    bad = good.copy()
    bad[17] += 1e-3
    assert not check_result(inputs, [bad, bad], "float32")[0]
    assert not check_result(inputs, [good, bad], "float32")[0]
    ints = make_inputs(3, 10, "int32", seed=3)
    wrong = np.sum(ints, axis=0, dtype=np.int32)
    wrong[0] ^= 1
    assert not check_result(ints, [wrong], "int32")[0]


@pytest.mark.parametrize("name", ALGOS)
def test_one_and_two_workers_identical(name):
    """n = 5 folds into 4 (the non-power-of-two path); bfloat16 sends its reductions as Python
    calls, which must run in the worker that owns the host."""
    for dtype in ("int32", "bfloat16") if name == "rabenseifner" else ("float32",):
        sc, plan, inputs = allreduce_scenario(name, 5, 1000, dtype, seed=9)
        result = run_both(sc, 2, read=plan.reads())
        assert evaluate(result, plan, inputs).correct


def test_plans_describe_layout_and_refuse_bad_input():
    sc, plan, _ = allreduce_scenario("ring", 3, 10, "float32")
    assert plan.hosts == (0, 1, 2) and plan.count == 10 and plan.nbytes == 40
    assert plan.memory_bytes <= sc.host.memory_bytes
    with pytest.raises(ConfigError, match="valid choices: ring, rd, rabenseifner"):
        algorithm("tree")
    with pytest.raises(ConfigError, match="dtype='int8'.*valid choices"):
        measure("ring", 2, 8, "int8")
    with pytest.raises(ConfigError, match="multiple of the 4 B"):
        measure("ring", 2, 6, "float32")
    from spin.simulation import Scenario
    small = Scenario(Topology.star(4))
    with pytest.raises(HostMemoryError, match="HostConfig.memory_bytes >= ") as short:
        ALGORITHMS.get("rd", "algorithm").build(small, 1 << 18, "float32")
    assert f"memory_bytes >= {short.value.needed_bytes};" in str(short.value)
    assert Fold(6).p == 4 and [Fold(6).new_rank(r) for r in range(6)] == [-1, 0, -1, 1, 2, 3]
    assert block_counts(7, 3) == [3, 2, 2]


# -- validation against theory ---------------------------------------------------------------
# On a one-switch star nothing is shared between ring steps (rank r -> r+1 uses its own uplink
# and r+1's own downlink), so each of the 2(n-1) steps costs one message end to end and
#     T = 2(n-1) alpha + 2(n-1)/n * S/B + (n-1) gamma S/n
# alpha: send overhead, PCIe read latency both ways and the first packet's read, one frame time
# and the RETH's, two link latencies, the switch pipeline, the last frame again on link 2,
# the receiver's packet match, the last packet's and the 16 B completion entry's PCIe writes
# and PCIe latency, and the receive overhead; B: link rate x MTU / (MTU + 58 B headers + 24 B
# wire overhead); gamma: HostConfig.reduce_ps_per_byte, on reduce-scatter steps. Every term
# comes from the configs (spin.collectives.theory has the derivation); nothing is fitted.

OTHER_MODEL = dict(nic=NicConfig(pcie_rate_gbytes_per_s=25.0, pcie_latency_ns=250.0,
                                 match_packet_cycles=30),
                   host=HostConfig(send_overhead_ns=700.0, recv_overhead_ns=900.0,
                                   reduce_ps_per_byte=80.0),
                   switch=SwitchConfig(latency_ns=300.0), engine=EngineConfig(mtu_bytes=4096))


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("kib_per_step", [64, 1024])   # alpha-heavy and bandwidth-heavy
@pytest.mark.parametrize("other", [False, True])
def test_ring_time_matches_alpha_beta_within_2_percent(n, kib_per_step, other):
    nbytes = n * kib_per_step * 1024
    configs = dict(OTHER_MODEL) if other else {}
    topo = Topology.star(n, link=LinkConfig(rate_gbps=100, latency_ns=500.0)) if other else None
    m = measure("ring", n, nbytes, "float32", topology=topo, **configs)
    sc, _, _ = allreduce_scenario("ring", n, nbytes // 4, "float32", topology=topo, **configs)
    model = ring_model(sc)
    theory = model.time_ps(n, nbytes)
    assert m.correct
    assert abs(m.time_ps - theory) <= 0.02 * theory, (m.time_ps, theory, model)
    if kib_per_step == 64:      # the latency term matters here: without it the model is off
        assert abs(m.time_ps - (theory - 2 * (n - 1) * model.alpha_ps)) > 0.02 * theory


def test_cli_prints_the_table_and_refuses_bad_sizes(capsys):
    from spin.cli import main
    assert main(["allreduce", "--hosts", "3", "--size", "4KiB,12", "--dtype", "int32"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["4,096"], ["12"])]
    assert [r[1] for r in rows] == ["ring", "rd", "rabenseifner", "nic", "switch"] * 2
    assert all(r[-1] == "yes" for r in rows) and [r[-2] for r in rows][0] == "1.00x"
    assert main(["allreduce", "--size", "64XB"]) == 2
    assert "--size '64XB'" in capsys.readouterr().err
    assert main(["allreduce", "--algo", "tree"]) == 2      # unknown names are skipped: none left
    err = capsys.readouterr().err
    assert "skipping 'tree'" in err and "registered: ring, rd, rabenseifner" in err
    assert main(["allreduce", "--algo", ""]) == 2          # not the default set, silently
    assert "--algo '' names no algorithm; valid: ring, rd" in capsys.readouterr().err


def test_cli_refuses_inputs_beyond_the_memory_limit_before_drawing_them(capsys, monkeypatch):
    """--size 4GiB once drew 32 GiB of inputs and ended in numpy's MemoryError traceback."""
    from spin.cli import main
    monkeypatch.setenv("SPIN_MEMORY_LIMIT", "1GiB")
    assert main(["allreduce", "--size", "64MiB", "--algo", "ring"]) == 2
    assert ("the inputs of an allreduce of 16,777,216 float32 elements per rank on 8 ranks need "
            "about 1.5 GiB; the memory limit is 1.0 GiB (SPIN_MEMORY_LIMIT)"
            in capsys.readouterr().err)


def test_cli_runs_on_another_topology_and_under_loss(capsys):
    """--topology picks the fabric (ranks: the first --hosts hosts) and --loss drops frames on
    every link; the host algorithms then ride the RC transport and still equal numpy's sum."""
    from spin.cli import main
    args = ["allreduce", "--topology", "fat_tree:k=4", "--hosts", "6", "--size", "8KiB",
            "--algo", "ring,rd", "--dtype", "int32"]
    assert main([*args, "--loss", "0.05", "--loss-seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "allreduce on 6 hosts (fat_tree k=4, 0.05 of frames lost)" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == ["8,192"]]
    assert [r[1] for r in rows] == ["ring", "rd"] and all(r[-1] == "yes" for r in rows)
    assert main(["allreduce", "--hosts", "1"]) == 2
    assert "--hosts 1: an allreduce needs at least 2 hosts" in capsys.readouterr().err
    assert main([*args[:3], "--hosts", "17"]) == 2
    assert "needs 2..16 hosts on fat_tree k=4" in capsys.readouterr().err


@pytest.mark.parametrize("n", (2, 5, 8))
def test_direct_allreduce_sums_exactly_in_two_steps_of_latency(n):
    """Every block straight to its owner and back: the exact int32 sum on every rank, and on
    64 ranks with hosts that post messages for free faster than Rabenseifner's 2 log2 n steps
    (measured 49.5 against 68.8 us at 1 MiB)."""
    m = measure("direct", n, 40_000, "int32")
    assert m.correct
    if n == 8:
        from spin.config import HostConfig
        host = HostConfig.preset("network")
        fast = measure("direct", 64, 1 << 20, "float32", host=host)
        slow = measure("rabenseifner", 64, 1 << 20, "float32", host=host)
        assert fast.correct and fast.time_ps < 0.8 * slow.time_ps
