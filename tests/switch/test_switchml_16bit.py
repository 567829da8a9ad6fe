"""float16 and bfloat16 in the in-switch allreduce: 16-bit elements on the wire, float32 sums in
the switches, one rounding per switch that adds. Results against a numpy model of the tree
(bit for bit where the float32 sums are exact), within the derived bound for any data, the
same bits on every rank and on 1 and 2 workers, half the wire bytes of float32, and 1% random
link loss recovered to the lossless bits. One engine for the switch suite (``SWITCH_LIBRARY``).
"""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switchml import G_ANSWERED
from handlers.switchml_worker import G_RETRANSMITS
from spin.collectives import switch as SWC
from spin.collectives.common import float32_to_bf16
from spin.collectives.measure import as_float64, check_result
from spin.collectives.switch_tree import aggregation_tree
from spin.config import HostConfig, LinkConfig
from spin.simulation import Scenario
from spin.testing import run, run_both
from spin.topologies import build_topology
from spin.wire import switchml as SW

from .conftest import SWITCH_LIBRARY

K16 = 512                                 # 16-bit elements per packet at the default 1 KiB MTU
DTYPES = ("float16", "bfloat16")
EXACT_COLUMNS = K16                       # the first packet's columns: exact float32 sums


def _to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to the 16-bit type, as stored (bfloat16 as bits)."""
    return x.astype(np.float16) if dtype == "float16" else float32_to_bf16(x)


def _exact_inputs(rng, shape, dtype: str) -> np.ndarray:
    """Values whose float32 sums are exact (few significant bits, a narrow exponent range), so
    the result does not depend on the order contributions arrive in: float16 multiples of 2^-6
    up to 16, bfloat16 multiples of 2^-4 up to 8. Sums of 4+ of them need more bits than the
    16-bit type has, so every switch really rounds."""
    top, step = (1024, 2.0 ** -6) if dtype == "float16" else (128, 2.0 ** -4)
    return _to_storage((rng.integers(-top, top + 1, shape) * step).astype(np.float32), dtype)


def _tree_model(inputs: np.ndarray, nodes: dict, root: str, dtype: str) -> np.ndarray:
    """The tree's result when its float32 sums are exact: each switch rounds the exact sum of
    its children once to the 16-bit type (a child switch contributes its rounded partial)."""
    by_hosts = {tuple(sorted(h for c in n.children for h in c[2])): s for s, n in nodes.items()}

    def partial(switch: str) -> np.ndarray:
        total = np.zeros(inputs.shape[1])
        for kind, node, hosts in nodes[switch].children:
            total += (as_float64(inputs[node], dtype) if kind == "host"
                      else as_float64(partial(by_hosts[tuple(sorted(hosts))]), dtype))
        return _to_storage(total.astype(np.float32), dtype)
    return partial(root)


@pytest.fixture(scope="module", params=DTYPES)
def leaf_spine(request):
    """One allreduce per dtype on a leaf-spine (8 ranks, two leaves under a spine: every rank's
    values are rounded twice), on 1 and 2 workers. The first packet's columns hold exact-sum
    values, the rest float32 data of mixed scales rounded to the type."""
    dtype = request.param
    topo = build_topology("leaf_spine")
    n, count = len(topo.hosts), 2 * K16 + 100          # the last packet is short
    rng = np.random.default_rng(11)
    scale = np.exp2(np.arange(count) % 7 * 2.0 - 6).astype(np.float32)
    inputs = _to_storage(rng.standard_normal((n, count), dtype=np.float32) * scale, dtype)
    inputs[:, :EXACT_COLUMNS] = _exact_inputs(rng, (n, EXACT_COLUMNS), dtype)
    sc = Scenario(topo, engine_programs=SWITCH_LIBRARY)
    plan = SWC.build(sc, count, dtype, inputs=inputs)
    result = run_both(sc, 2, read=plan.reads())   # raises unless 1 and 2 workers agree
    result.require_finished()
    out = np.array([result.read(h, plan.result_addr, count, plan.storage_dtype)
                    for h in plan.hosts])
    root, nodes = aggregation_tree(topo, plan.hosts, topo.equal_cost_ports())
    return dtype, inputs, out, root, nodes


def test_every_rank_holds_the_same_bits(leaf_spine) -> None:
    dtype, inputs, out, *_ = leaf_spine
    assert out.dtype.itemsize == 2
    assert all(np.array_equal(o.view(np.uint16), out[0].view(np.uint16)) for o in out)
    assert SWC.check_result(inputs, list(out), dtype)[0]             # the registry's check


def test_exact_sums_are_rounded_once_per_switch(leaf_spine) -> None:
    """Where float32 adds exactly, the result is the tree model's, bit for bit: the leaves'
    16-bit partials, added and rounded again at the spine."""
    dtype, inputs, out, root, nodes = leaf_spine
    part = inputs[:, :EXACT_COLUMNS]
    want = _tree_model(part, nodes, root, dtype)
    assert np.array_equal(out[0, :EXACT_COLUMNS].view(np.uint16), want.view(np.uint16))
    flat = _to_storage(as_float64(part, dtype).sum(axis=0).astype(np.float32), dtype)
    assert not np.array_equal(want.view(np.uint16), flat.view(np.uint16))   # two roundings show


def test_mixed_scales_within_the_derived_bound(leaf_spine) -> None:
    dtype, inputs, out, root, nodes = leaf_spine
    levels = SWC.rounding_levels(nodes)
    assert levels == 2
    err = np.abs(as_float64(out[0], dtype) - as_float64(inputs, dtype).sum(axis=0))
    bound = SWC.switch_result_bound(inputs, dtype, levels=levels)
    assert np.all(err <= bound)
    assert err.max() > 0
    assert np.any(err > SWC.switch_result_bound(inputs, dtype, levels=0))   # roundings count


def test_wire_bytes_are_half_of_float32() -> None:
    """Same element count on a star of 4 (no retransmission timer, and the start messages loop
    back in the NICs: the link counters hold only the data): a 16-bit packet carries 512
    elements where a float32 one carries 256, so half the frames, each as long."""
    n, count = 4, 16 * K16
    frames, nbytes = {}, {}
    for dtype in ("float32", *DTYPES):
        sc = Scenario(build_topology("star", hosts=n), engine_programs=SWITCH_LIBRARY)
        rng = np.random.default_rng(2)
        x = rng.standard_normal((n, count), dtype=np.float32)
        inputs = x if dtype == "float32" else _to_storage(x, dtype)
        plan = SWC.build(sc, count, dtype, inputs=inputs, timeout_us=0.0)
        result = run(sc, 1, read=plan.reads())
        result.require_finished()
        out = [result.read(h, plan.result_addr, count, plan.storage_dtype) for h in plan.hosts]
        assert check_result(inputs, out, dtype)[0], dtype
        frames[dtype] = sum(link.tx_frames for link in result.links)
        nbytes[dtype] = result.totals().link_bytes
    frame = nbytes["float32"] // frames["float32"]          # every frame carries 1 KiB
    for dtype in DTYPES:
        assert frames["float32"] == 2 * frames[dtype] == 2 * n * count // 256
        assert nbytes[dtype] == frames[dtype] * frame
        assert 2 * nbytes[dtype] == nbytes["float32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_link_loss_gives_the_lossless_bits(dtype: str) -> None:
    """1% of the frames on every link lost (contributions and results): workers time
    out and resend, the switch answers completed slots from its 16-bit shadow copy, and every
    rank ends with the bits of the lossless run (exact float32 sums: the order in which
    retransmissions arrive cannot change them)."""
    n, count = 4, 64 * K16
    inputs = _exact_inputs(np.random.default_rng(5), (n, count), dtype)
    out = {}
    for loss in (0.0, 0.01):
        topo = build_topology("star", hosts=n, link=LinkConfig(loss_rate=loss, loss_seed=7))
        sc = Scenario(topo, engine_programs=SWITCH_LIBRARY, host=HostConfig(memory_bytes=1 << 20))
        for h in range(n):
            sc.write_host_memory(h, 0, inputs[h])
        job = SWC.SwitchMLJob(1, tuple(range(n)), count, 0, 2 * count, SW.SUM_TYPES[dtype],
                              window=32)
        setup = SWC.install_jobs(sc, [job], timeout_us=15.0)
        for h in range(n):
            setup.start(sc.host_program(h), job)
        reads = [(h, 0, count, "uint16") for h in range(n)]
        result = run(sc, 1, read=reads)
        result.require_finished()
        out[loss] = [result.read(*r) for r in reads]
        if loss:
            assert result.drops.get("random_loss", 0) > 0
            assert sum(result.handler_memory(setup.contexts[h])[G_RETRANSMITS]
                       for h in range(n)) > 0
            assert result.handler_memory(setup.contexts["s0"])[G_ANSWERED] > 0
    want = _to_storage(as_float64(inputs, dtype).sum(axis=0).astype(np.float32), dtype)
    for h in range(n):
        assert np.array_equal(out[0.0][h], want.view(np.uint16)), h
        assert np.array_equal(out[0.01][h], out[0.0][h]), h
