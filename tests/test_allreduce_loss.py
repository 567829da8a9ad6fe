"""Every registered allreduce under random frame loss on every link: integer sums stay exactly
numpy's, float results are bit for bit those of the lossless run (each variant adds in an order
that does not depend on timing), and the loss really happened.

How each recovers (``Algorithm.recovery``): host algorithms ride the RoCEv2 reliable connection;
the NIC ring's handlers NACK lost packets hop by hop; switch aggregation's workers retransmit on
timeout and the switch answers from its shadow copies. One engine (every algorithm's handler
programs) serves all runs."""
from __future__ import annotations

import numpy as np
import pytest

from spin.collectives import ALGORITHMS, algorithm
from spin.collectives.measure import allreduce_scenario, evaluate
from spin.collectives.allreduce_table import shared_programs
from spin.config import LinkConfig
from spin.errors import ConfigError
from spin.runs import run
from spin.topology import Topology

HOSTS, COUNT = 4, 6002                # blocks of unequal length
LOSS = LinkConfig(loss_rate=0.02, loss_seed=5)
PROGRAMS = shared_programs(list(ALGORITHMS))
CASES = [(name, dtype) for name in ALGORITHMS.names() for dtype in ("int32", "float32")
         if dtype in algorithm(name).dtypes and not algorithm(name).lossless_only]


def _outputs(name: str, dtype: str, link: LinkConfig | None):
    topo = Topology.star(HOSTS, link=link) if link is not None else Topology.star(HOSTS)
    sc, plan, inputs = allreduce_scenario(name, HOSTS, COUNT, dtype, seed=9, topology=topo,
                                          recover_loss=link is not None,
                                          engine_programs=PROGRAMS)
    result = run(sc, 1, read=plan.reads())
    return result, [result.read(*r) for r in plan.reads()], evaluate(result, plan, inputs)


def test_lossless_only_algorithms_are_refused_under_loss() -> None:
    lossless = [name for name in ALGORITHMS.names() if algorithm(name).lossless_only]
    assert lossless == ["nic-ring2d"]
    with pytest.raises(ConfigError, match="nic-ring2d: it has no loss recovery"):
        _outputs("nic-ring2d", "int32", LOSS)


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_loss_changes_no_bit_of_the_result(name: str, dtype: str) -> None:
    _, clean, clean_eval = _outputs(name, dtype, None)
    lossy_result, lossy, lossy_eval = _outputs(name, dtype, LOSS)
    assert lossy_result.drops.get("random_loss", 0) > 0          # frames were really lost
    assert clean_eval.correct and lossy_eval.correct     # int32: exactly numpy's sum
    for got, want in zip(lossy, clean):
        assert got.tobytes() == want.tobytes()
