"""Every topology, with handlers in its switches, a link failure and captures on every link,
gives identical results and byte-identical pcaps for 1, 2 and 4 worker processes."""
from __future__ import annotations

import hashlib

import pytest

from handlers.switch_monitor import switch_monitor_program
from spin.config import EngineConfig
from spin.fabric import run_scenario
from spin.handler import ExecutionContext
from spin.topologies import build_topology

from .conftest import pattern, scenario

pytestmark = pytest.mark.slow

TOPOLOGIES = {
    "leaf_spine": dict(leaves=2, spines=2, hosts_per_leaf=2),
    "fat_tree": dict(k=4),
    "hamming_mesh": dict(board_rows=2, board_cols=2, rows=1, cols=2),
    "supernode": dict(gpus=4, planes=2, scale_out_gpus_per_leaf=4),
    "star": dict(hosts=4),
}
SIZE = 8192
COLD_COMPILE_S = 900   # the first run may compile the engine cold on busy shared cores


def _scenario(kind: str):
    topo = build_topology(kind, **TOPOLOGIES[kind])
    sc = scenario(topo, engine=EngineConfig(queue_sample_ns=250.0))
    n = len(topo.hosts)
    for h in range(n):
        sc.write_host_memory(h, 0, pattern(h, SIZE))
        dst = (h + n // 2) % n
        sc.host_program(h).send(dst, SIZE, qp=1, local_addr=0, remote_addr=SIZE)
        sc.host_program(h).send(dst, SIZE, qp=2, local_addr=0, remote_addr=2 * SIZE)
    for s in topo.switches:
        sc.install(ExecutionContext(node=s, program=switch_monitor_program(64, marker=0x5A),
                                    match_qp=2))
    inner = [i for i, l in enumerate(topo.links) if l.a in topo.switches and l.b in topo.switches]
    if inner:
        sc.link_down(inner[0], at_ns=300.0)
    sc.capture()
    return sc


def _pcap_digest(directory) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.glob("*.pcap"))}


@pytest.mark.timeout(3 * COLD_COMPILE_S)
@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_identical_for_1_2_4_workers(kind, tmp_path) -> None:
    sc = _scenario(kind)
    runs = {}
    for workers in (1, 2, 4):
        out = tmp_path / f"w{workers}"
        result = run_scenario(sc, workers=workers, pcap_dir=out, timeout_s=COLD_COMPILE_S)
        runs[workers] = (result.to_dict(include_wall=False), _pcap_digest(out))
    base, pcaps = runs[1]
    assert sum(s["handler_calls"]["header"] for s in base["switches"]) > 0
    assert base["queue_samples"]
    assert len(pcaps) == len(sc.topology.links)
    for workers in (2, 4):
        assert runs[workers][0] == base, f"{kind}: results differ with {workers} workers"
        assert runs[workers][1] == pcaps, f"{kind}: captures differ with {workers} workers"
