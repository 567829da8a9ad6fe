"""`spin.tools.demo.run_demo`: the offload beats the host baseline, data is checked, runs are identical."""
from __future__ import annotations

import json

import pytest

from spin.tools.demo import DataCheckError, check_reduce, run_demo, without_wall


@pytest.fixture(scope="module")
def demo_pair():
    return run_demo(), run_demo()


@pytest.mark.parametrize("workload", ["pingpong", "reduce"])
def test_offload_beats_baseline(demo_pair, workload):
    w = demo_pair[0][workload]
    base, off = w["baseline"], w["offload"]
    assert off["completion_ps"] < base["completion_ps"]
    assert w["comparison"]["speedup"] > 1.0
    assert w["comparison"]["speedup"] == pytest.approx(base["completion_ps"] / off["completion_ps"])
    assert off["host_cpu_ps"] < base["host_cpu_ps"]
    assert off["pcie_bytes"] < base["pcie_bytes"]
    assert off["hpu_busy_ps"] > 0 and base["hpu_busy_ps"] == 0
    assert base["drops"] == off["drops"] == 0
    assert off["messages_handled_by_nic"] > 0 and base["messages_handled_by_nic"] == 0


def test_data_checks_passed(demo_pair):
    d = demo_pair[0]
    assert "equal their pings" in d["pingpong"]["baseline"]["check"]
    assert "equal their pings" in d["pingpong"]["offload"]["check"]
    for v in ("baseline", "offload"):
        assert "equal numpy's int32 sum of 8 vectors" in d["reduce"][v]["check"]


def test_deterministic(demo_pair):
    a, b = demo_pair
    assert without_wall(a) == without_wall(b)
    for w in ("pingpong", "reduce"):
        for v in ("baseline", "offload"):
            assert a[w][v]["digest"] == b[w][v]["digest"]


def test_json_serialisable(demo_pair):
    back = json.loads(json.dumps(demo_pair[0]))
    assert back["reduce"]["params"]["vector_bytes"] == 65536


def test_wrong_data_fails_loudly():
    class FakeSim:
        def host_memory(self, node):
            import numpy as np
            return np.zeros(1 << 20, np.uint8)
    with pytest.raises(DataCheckError, match="element 0 is 0, numpy int32 sum is"):
        check_reduce(FakeSim(), True, 8, 65536)
