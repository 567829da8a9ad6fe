"""``EngineConfig.prefetch``: the engine prefetches the next event's rows only where that pays
(large fabrics, or when asked), and a run's results do not depend on it."""
import dataclasses

import pytest

from spin.config import EngineConfig
from spin.engine import state as S
from spin.engine.prefetch import PREFETCH_AUTO_HOSTS, prefetching
from spin.errors import ConfigError
from spin.loadbalancing import with_scheme
from spin.loadbalancing.compare import add_workload, fabric_scenario
from spin.runtime.simulation import Simulation


def _fat_tree_run(prefetch: str):
    """A k = 4 fat tree, a 256 KiB permutation over the Ultra-Ethernet-style transport, spray:
    every event kind the prefetch looks ahead to (arrivals, enqueues, transmissions done with
    their queue hints, transport steps)."""
    sc = fabric_scenario("fat_tree", {"k": 4}, transport="ue")
    sc.engine = EngineConfig.make(**{**sc.engine.model_dump(), "prefetch": prefetch})
    add_workload(sc, "permutation", message_bytes=256 * 1024, seed=3, fill=False)
    sim = Simulation(with_scheme(sc, "spray"), quiet=True)
    flag = int(sim.st.sc[S.SC_PREFETCH])
    return flag, sim.run(quiet=True)


def _records(result) -> dict:
    return {name: [dataclasses.asdict(r) for r in getattr(result, name)]
            for name in ("messages", "links", "nics", "hosts", "switches")}


def test_prefetching_changes_no_result():
    on_flag, on = _fat_tree_run("on")
    off_flag, off = _fat_tree_run("off")
    auto_flag, _ = _fat_tree_run("auto")
    assert (on_flag, off_flag, auto_flag) == (1, 0, 0)      # 16 hosts: auto does not prefetch
    assert on.events == off.events and on.packet_events == off.packet_events > 20_000
    assert len(on.messages) == 16
    assert _records(on) == _records(off)


def test_auto_prefetches_from_a_fabric_size():
    assert not prefetching("auto", PREFETCH_AUTO_HOSTS - 1)
    assert prefetching("auto", PREFETCH_AUTO_HOSTS)
    assert prefetching("on", 2) and not prefetching("off", 1 << 16)


def test_a_bad_prefetch_setting_names_the_choices():
    with pytest.raises(ConfigError) as info:
        EngineConfig.make(prefetch="sometimes")
    msg = str(info.value)
    assert "prefetch" in msg and "sometimes" in msg
    assert all(choice in msg for choice in ("auto", "on", "off"))
