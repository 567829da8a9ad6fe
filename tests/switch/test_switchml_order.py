"""Float sums in the switch do not depend on arrival order: each switch adds its children in
child order (``handlers/switchml.py``), so random link loss, which delays contributions behind
their retransmissions, leaves every bit of a float32 or float16 result as in the lossless run,
on a star and on a leaf-spine, on 1 and 2 workers. The data are standard normal floats of
mixed magnitudes, whose float32 sums round: another order of the same additions gives other
bits (asserted), so arrival-order adds would fail these tests. One engine for the switch suite
(``SWITCH_LIBRARY``)."""
from __future__ import annotations

import numpy as np
import pytest

from handlers.switchml import G_ANSWERED, G_DEFERRED
from handlers.switchml_worker import G_RETRANSMITS
from spin.collectives import switch as SWC
from spin.collectives.measure import as_float64
from spin.collectives.switch_tree import aggregation_tree
from spin.config import HostConfig, LinkConfig
from spin.simulation import Scenario
from spin.testing import run, run_both
from spin.topologies import build_topology

from .conftest import SWITCH_LIBRARY

# (topology, its parameters, loss seed). The start message of a job is not retransmitted, so
# a lost one hangs the run (about half the seeds at 2% loss): seed 11 loses contributions,
# results and timer ticks on both fabrics, for both types, but no start message.
FABRICS = {"star": ("star", {"hosts": 4}, 11), "leaf_spine": ("leaf_spine", {}, 11)}
LOSS = 0.02
PACKETS = 24                       # per rank and job: a 24-slot window, reused


def _inputs(n: int, count: int, dtype: str) -> np.ndarray:
    """Standard normal values of mixed magnitudes whose float32 sums round: float32 times 2^0,
    2^3, ..., 2^18 by column; float16 times 2^-12 ... 2^8 at random, and in every third column
    rank 1 cancels rank 0, so a sum's float32 rounding is not hidden by the final 16-bit one."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, count), dtype=np.float32)
    if dtype == "float32":
        x *= np.exp2(np.arange(count) % 7 * 3.0).astype(np.float32)
    else:
        x *= np.exp2(rng.integers(-12, 9, (n, count))).astype(np.float32)
    x[1, ::3] = -x[0, ::3]
    return x.astype(dtype)


def _child_order_model(inputs: np.ndarray, nodes: dict, root: str, dtype: str,
                       reverse: bool = False) -> np.ndarray:
    """The tree's result with each switch adding its children's values one by one in float32,
    in child order (or the reverse), rounded once to ``dtype``."""
    by_hosts = {tuple(sorted(h for c in n.children for h in c[2])): s for s, n in nodes.items()}

    def partial(switch: str) -> np.ndarray:
        children = nodes[switch].children[::-1] if reverse else nodes[switch].children
        total = None
        for kind, node, hosts in children:
            x = inputs[node] if kind == "host" else partial(by_hosts[tuple(sorted(hosts))])
            x = x.astype(np.float32)
            total = x if total is None else total + x
        return total.astype(dtype)
    return partial(root)


def _run(fabric: str, dtype: str, loss: float, both: bool):
    """One allreduce: inputs, results per rank, tree root, tree, (run result, handler memory
    per installed context)."""
    name, params, seed = FABRICS[fabric]
    topo = build_topology(name, link=LinkConfig(loss_rate=loss, loss_seed=seed), **params)
    n = len(topo.hosts)
    k = 1024 // np.dtype(dtype).itemsize
    count = PACKETS * k - k // 3                       # the last packet is short
    inputs = _inputs(n, count, dtype)
    sc = Scenario(topo, engine_programs=SWITCH_LIBRARY, host=HostConfig(memory_bytes=1 << 20))
    plan = SWC.build(sc, count, dtype, inputs=inputs, window=8, timeout_us=15.0)
    result = (run_both(sc, 2, read=plan.reads()) if both        # raises unless 1 and 2 agree
              else run(sc, 1, read=plan.reads()))
    result.require_finished()
    out = np.array([result.read(h, plan.result_addr, count, plan.storage_dtype)
                    for h in plan.hosts])
    root, nodes = aggregation_tree(topo, plan.hosts, topo.equal_cost_ports() if len(
        topo.switches) > 1 else None)
    return inputs, out, root, nodes, (result, {c: result.handler_memory(c) for c in sc.contexts})


@pytest.fixture(scope="module", params=[(f, d) for f in FABRICS for d in ("float32", "float16")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def lossless_and_lossy(request):
    fabric, dtype = request.param
    lossless = _run(fabric, dtype, 0.0, both=False)
    lossy = _run(fabric, dtype, LOSS, both=True)
    return dtype, lossless, lossy


def test_loss_leaves_every_bit_as_without_loss(lossless_and_lossy) -> None:
    """Frames lost, contributions resent, completed slots answered again and contributions
    kept back for their turn: the bits of every rank are those of the lossless run."""
    dtype, (_, clean, *_), (_, lossy, _, _, (result, mems)) = lossless_and_lossy
    assert result.drops.get("random_loss", 0) > 0
    def total(program: str, word: int) -> int:
        return sum(int(m[word]) for c, m in mems.items() if c.program.name == program)
    assert total("switchml_worker", G_RETRANSMITS) > 0
    assert total("switchml", G_ANSWERED) > 0
    assert total("switchml", G_DEFERRED) > 0          # arrivals out of child order
    for rank in range(len(clean)):
        assert np.array_equal(clean[rank].view(np.uint8), clean[0].view(np.uint8)), rank
        assert np.array_equal(lossy[rank].view(np.uint8), clean[rank].view(np.uint8)), rank


def test_result_is_the_child_order_sum(lossless_and_lossy) -> None:
    """Bit for bit the model's child-order sums; the reverse order differs, so the data make
    the order visible."""
    dtype, _, (inputs, lossy, root, nodes, _) = lossless_and_lossy
    want = _child_order_model(inputs, nodes, root, dtype)
    other = _child_order_model(inputs, nodes, root, dtype, reverse=True)
    assert np.array_equal(lossy[0].view(np.uint8), want.view(np.uint8))
    assert not np.array_equal(other.view(np.uint8), want.view(np.uint8))


def test_within_the_error_bound(lossless_and_lossy) -> None:
    dtype, _, (inputs, lossy, root, nodes, _) = lossless_and_lossy
    err = np.abs(lossy[0].astype(np.float64) - as_float64(inputs, dtype).sum(axis=0))
    bound = SWC.switch_result_bound(inputs, dtype, levels=SWC.rounding_levels(nodes))
    assert np.all(err <= bound)
    assert err.max() > 0
