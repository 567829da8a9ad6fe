"""The offload demo: two workloads, each run host-based and offloaded on the same star fabric.

* **ping-pong**: host 0 sends ``rounds`` pings of ``ping_bytes`` to host 1 and waits for each
  pong. Baseline: host 1's CPU receives the ping and posts the pong. Offload: a payload handler
  on host 1's NIC (``handlers.ping_pong``) echoes every packet, host 1's CPU never sees it.
* **reduce**: ``hosts - 1`` contributors RDMA-write an int32 vector of ``reduce_bytes`` to the
  root (host 0), which must end with the element-wise sum of all ``hosts`` vectors. Baseline: the
  root receives every vector and adds them on its CPU. Offload: payload handlers on the root's
  NIC (``handlers.reduce``) accumulate in handler memory and DMA the sum once.

* **allreduce**: every host ends with the element-wise sum of all hosts' float32 vectors:
  ``ring`` (host-based) against every in-network algorithm registered in
  ``spin.collectives`` among ``DEMO_ALLREDUCE`` (the NIC ring of sPIN handlers, and switch
  aggregation when that is registered), in the nccl-tests table of ``spin allreduce``.

Every run checks its data (pong bytes equal the ping bytes; the sum equals numpy's int32 sum
exactly) and raises ``DataCheckError`` otherwise. Figures are virtual-time results of the cost
model, so ``run_demo`` returns the same numbers on every run (wall-clock time is kept apart).

All scenarios share one ``engine_programs`` list, so the demo compiles a single engine.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np

from ..collectives import ALGORITHMS
from ..collectives.measure import measure, with_speedup
from ..collectives.allreduce_table import allreduce_table, shared_programs
from ..results.compare import OffloadComparison
from ..errors import ConfigError, SpinError
from ..handler import ExecutionContext, HandlerProgram
from ..results import RunResult
from ..describe.scenario import Scenario
from ..runtime.simulation import Simulation
from ..results.report import comparison_table, ratio
from ..topology import Topology

PING_QP, PONG_QP, REDUCE_QP = 1, 2, 3
PING_SRC_ADDR = 0x0            # ping r is sent from host 0's [r * size, (r+1) * size)
PONG_ADDR = 0x40000            # ping r lands on host 1 (and its pong on host 0) at PONG_ADDR + r * size
REDUCE_RESULT_ADDR = 0x10000   # offload: contributors all write here; the NIC DMAs the sum here
DONE_MARK = "done"
DEMO_ALLREDUCE = ("ring", "nic", "switch")   # shown when registered, in this order


class DataCheckError(SpinError):
    """A demo run produced wrong data (the emulator moved or reduced bytes incorrectly)."""


def demo_programs(reduce_elems: int = 16384, reduce_contributors: int = 7) -> list[HandlerProgram]:
    """The engine programs every demo scenario is compiled with (one shared engine)."""
    from handlers.ping_pong import ping_pong_program
    from handlers.reduce import reduce_program
    return [ping_pong_program(reply_qp=PONG_QP), reduce_program(reduce_elems, reduce_contributors)]


# --- ping-pong ------------------------------------------------------------------------------------
def ping_data(rounds: int, size: int, seed: int = 1) -> np.ndarray:
    """The bytes of every ping, round after round (deterministic from ``seed``)."""
    return np.random.default_rng(seed).integers(0, 256, rounds * size, dtype=np.uint8)


def build_pingpong(offload: bool, rounds: int = 8, size: int = 512,
                   programs: list[HandlerProgram] | None = None) -> Scenario:
    """The ping-pong scenario, host-based (host 1 answers) or offloaded (host 1's NIC does)."""
    if rounds < 1 or size < 1:
        raise ConfigError(f"ping-pong needs rounds >= 1 and size >= 1 B, got rounds={rounds}, "
                          f"size={size}")
    sc = Scenario(Topology.star(2), engine_programs=programs or demo_programs())
    if PONG_ADDR + rounds * size > sc.host.memory_bytes or rounds * size > PONG_ADDR:
        raise ConfigError(f"ping-pong of rounds={rounds} x size={size} B does not fit in "
                          f"HostConfig.memory_bytes={sc.host.memory_bytes}")
    sc.write_host_memory(0, PING_SRC_ADDR, ping_data(rounds, size))
    h0, h1 = sc.host_program(0), sc.host_program(1)
    h0.mark("start")
    for r in range(rounds):
        addr = PONG_ADDR + r * size
        h0.send(1, size, qp=PING_QP, local_addr=PING_SRC_ADDR + r * size, remote_addr=addr)
        h0.wait_recv(qp=PONG_QP)
        if not offload:
            h1.wait_recv(qp=PING_QP)
            h1.send(0, size, qp=PONG_QP, local_addr=addr, remote_addr=addr)
    h0.mark(DONE_MARK)
    if offload:
        from handlers.ping_pong import ping_pong_program
        sc.install(ExecutionContext(1, ping_pong_program(reply_qp=PONG_QP), match_qp=PING_QP))
    return sc


def check_pingpong(sim: Simulation, rounds: int, size: int) -> str:
    """Every pong equals its ping in host 0's memory, or ``DataCheckError``."""
    expect = ping_data(rounds, size)
    got = sim.host_memory(0)[PONG_ADDR:PONG_ADDR + rounds * size]
    bad = np.flatnonzero(got != expect)
    if bad.size:
        i = int(bad[0])
        raise DataCheckError(f"ping-pong: pong payload differs from the ping at byte {i} "
                             f"(round {i // size}): got {got[i]}, expected {expect[i]} "
                             f"({bad.size} of {expect.size} bytes differ)")
    return f"{rounds} pongs x {size} B equal their pings"


# --- reduce ---------------------------------------------------------------------------------------
def reduce_vectors(hosts: int, n_elems: int, seed: int = 2) -> list[np.ndarray]:
    """Each host's int32 vector, spanning the whole int32 range so sums wrap."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.int32)
    return [rng.integers(info.min, info.max, n_elems, dtype=np.int64, endpoint=True).astype(np.int32)
            for _ in range(hosts)]


def build_reduce(offload: bool, hosts: int = 8, nbytes: int = 65536,
                 programs: list[HandlerProgram] | None = None) -> Scenario:
    """The reduce scenario: the root sums every vector on its CPU, or its NIC does."""
    if hosts < 2 or nbytes < 4 or nbytes % 4:
        raise ConfigError(f"reduce needs hosts >= 2 and a positive multiple of 4 B, got "
                          f"hosts={hosts}, nbytes={nbytes}")
    n = nbytes // 4
    sc = Scenario(Topology.star(hosts), engine_programs=programs or demo_programs(n, hosts - 1))
    top = (REDUCE_RESULT_ADDR * hosts) if not offload else 2 * REDUCE_RESULT_ADDR
    if nbytes > REDUCE_RESULT_ADDR or top > sc.host.memory_bytes:
        raise ConfigError(f"reduce of hosts={hosts} x nbytes={nbytes} B does not fit in "
                          f"HostConfig.memory_bytes={sc.host.memory_bytes}")
    for i, v in enumerate(reduce_vectors(hosts, n)):
        sc.write_host_memory(i, 0, v)
    root = sc.host_program(0)
    root.mark("start")
    for i in range(1, hosts):
        dst = REDUCE_RESULT_ADDR if offload else REDUCE_RESULT_ADDR * i
        sc.host_program(i).send(0, nbytes, qp=REDUCE_QP, local_addr=0, remote_addr=dst)
    if offload:
        from handlers.reduce import reduce_program
        sc.install(ExecutionContext(0, reduce_program(n, hosts - 1), match_qp=REDUCE_QP))
        root.wait_event(1)                                  # the NIC wrote the contributors' sum
        root.reduce(REDUCE_RESULT_ADDR, 0, n, "int32")      # add the root's own vector
    else:
        root.wait_recv(qp=REDUCE_QP, count=hosts - 1)
        for i in range(1, hosts):
            root.reduce(0, REDUCE_RESULT_ADDR * i, n, "int32")
    root.mark(DONE_MARK)
    return sc


def check_reduce(sim: Simulation, offload: bool, hosts: int, nbytes: int) -> str:
    """The root's result equals numpy's int32 sum exactly, or ``DataCheckError``."""
    n = nbytes // 4
    expect = np.sum(np.stack(reduce_vectors(hosts, n)), axis=0, dtype=np.int32)
    addr = REDUCE_RESULT_ADDR if offload else 0
    got = sim.host_memory(0)[addr:addr + nbytes].view(np.int32)
    bad = np.flatnonzero(got != expect)
    if bad.size:
        i = int(bad[0])
        raise DataCheckError(f"reduce ({'offload' if offload else 'baseline'}): element {i} is "
                             f"{got[i]}, numpy int32 sum is {expect[i]} ({bad.size} of {n} "
                             f"elements differ)")
    return f"{n} int32 elements equal numpy's int32 sum of {hosts} vectors"


# --- running --------------------------------------------------------------------------------------
def _run(sc: Scenario, check) -> tuple[RunResult, dict[str, Any], float]:
    """Run, verify the data; return the result, the run's own figures, and the wall time (s)."""
    t0 = time.perf_counter()
    sim = Simulation(sc)
    result = sim.run()
    wall = time.perf_counter() - t0
    unfinished = [h.node for h in result.hosts if not h.finished]
    if unfinished:
        raise DataCheckError(f"host programs of nodes {unfinished} did not finish "
                             f"(drops: {result.drops or 'none'})")
    return result, {"events": result.events, "packet_events": result.packet_events,
                    "messages": len(result.messages),
                    "messages_handled_by_nic": sum(1 for m in result.messages if m.handled_by_nic),
                    "check": check(sim), "digest": result.deterministic_digest()}, wall


def _workload(out: dict[str, Any], title: str, build, check) -> OffloadComparison:
    """Run ``build(offload)`` both ways into ``out`` (baseline, offload, comparison, wall_s)."""
    results, runs, wall = {}, {}, {}
    for variant, off in (("baseline", False), ("offload", True)):
        results[variant], runs[variant], wall[variant] = _run(build(off),
                                                              lambda sim, o=off: check(sim, o))
    cmp = OffloadComparison.of(results["baseline"], results["offload"], done=DONE_MARK, title=title)
    out["baseline"] = {**asdict(cmp.baseline), **runs["baseline"]}
    out["offload"] = {**asdict(cmp.offload), **runs["offload"]}
    out["comparison"] = cmp.to_dict()
    out["wall_s"] = wall
    return cmp


def run_pingpong(rounds: int = 8, size: int = 512,
                 programs: list[HandlerProgram] | None = None) -> dict[str, Any]:
    """Ping-pong both ways, checked and compared (plus the round-trip time of each)."""
    out: dict[str, Any] = {"workload": "ping-pong",
                           "params": {"rounds": rounds, "size_bytes": size, "hosts": 2,
                                      "topology": "star(2)"}}
    title = f"ping-pong: {rounds} rounds x {size:,} B, host 0 <-> host 1 on star(2)"
    _workload(out, title, lambda off: build_pingpong(off, rounds, size, programs),
              lambda sim, off: check_pingpong(sim, rounds, size))
    out["round_trip_ps"] = {v: out[v]["completion_ps"] / rounds for v in ("baseline", "offload")}
    return out


def run_reduce(hosts: int = 8, nbytes: int = 65536,
               programs: list[HandlerProgram] | None = None) -> dict[str, Any]:
    """Reduce both ways, checked and compared (plus algbw as nccl-tests defines it)."""
    out: dict[str, Any] = {"workload": "reduce",
                           "params": {"hosts": hosts, "vector_bytes": nbytes, "dtype": "int32",
                                      "topology": f"star({hosts})", "root": 0}}
    title = (f"reduce: {hosts - 1} hosts -> root, {nbytes:,} B int32 vectors, on star({hosts})")
    _workload(out, title, lambda off: build_reduce(off, hosts, nbytes, programs),
              lambda sim, off: check_reduce(sim, off, hosts, nbytes))
    for variant in ("baseline", "offload"):
        # algbw as in nccl-tests: data size / time (bytes per ns = GB/s)
        out[variant]["algbw_gbytes_per_s"] = nbytes / (out[variant]["completion_ps"] / 1000)
    return out


def run_allreduce(hosts: int = 8, nbytes: int = 262144) -> dict[str, Any]:
    """The registered algorithms of DEMO_ALLREDUCE on a star, float32, checked against numpy
    (rows of ``spin.collectives.measure.with_speedup``, without their wall-clock time)."""
    algs = [ALGORITHMS.get(a, "DEMO_ALLREDUCE") for a in DEMO_ALLREDUCE if a in ALGORITHMS]
    programs = shared_programs(algs)
    results = [measure(a.name, hosts, nbytes, "float32", topology=Topology.star(hosts),
                       **({"engine_programs": programs} if a.programs is not None else {}))
               for a in algs]
    wrong = [r.algorithm for r in results if not r.correct]
    if wrong:
        raise DataCheckError(f"allreduce: {', '.join(wrong)} did not produce numpy's sum on "
                             f"every rank")
    rows = [{k: v for k, v in r.items() if k != "wall_s"} for r in with_speedup(results)]
    return {"workload": "allreduce",
            "params": {"hosts": hosts, "vector_bytes": nbytes, "dtype": "float32",
                       "topology": f"star({hosts})"},
            "rows": rows,
            "check": f"every rank of {', '.join(a.name for a in algs)} equals numpy's sum"}


def run_demo(rounds: int = 8, ping_bytes: int = 512, hosts: int = 8,
             reduce_bytes: int = 65536, allreduce_bytes: int = 262144) -> dict[str, Any]:
    """Run every workload host-based and offloaded; return structured, JSON-serialisable
    results. Everything except the ``wall_s`` entries is deterministic virtual-time output."""
    programs = demo_programs(reduce_bytes // 4, hosts - 1)
    return {"pingpong": run_pingpong(rounds, ping_bytes, programs),
            "reduce": run_reduce(hosts, reduce_bytes, programs),
            "allreduce": run_allreduce(hosts, allreduce_bytes),
            "units": {"*_ps": "picoseconds (virtual time)", "*_bytes": "bytes",
                      "algbw_gbytes_per_s": "GB/s (1e9 B/s)", "speedup": "x (baseline / offload)",
                      "wall_s": "seconds (wall clock, not deterministic)"}}


def without_wall(demo: dict[str, Any]) -> dict[str, Any]:
    """The deterministic part of a ``run_demo`` result (for comparing runs)."""
    return {k: ({kk: vv for kk, vv in v.items() if kk != "wall_s"} if isinstance(v, dict) else v)
            for k, v in demo.items()}


def demo_table(demo: dict[str, Any]) -> str:
    """Side-by-side tables of a ``run_demo()`` result, with each run's data check."""
    blocks = []
    for key in ("pingpong", "reduce"):
        w = demo[key]
        cmp = OffloadComparison.from_dict(w["comparison"])
        b, o = w["baseline"], w["offload"]
        extra = []
        if "algbw_gbytes_per_s" in b:
            extra.append(["algbw (GB/s)", f"{b['algbw_gbytes_per_s']:.3f}",
                          f"{o['algbw_gbytes_per_s']:.3f}",
                          ratio(o["algbw_gbytes_per_s"] / b["algbw_gbytes_per_s"])])
        blocks.append(comparison_table(cmp, extra))
        blocks.append(f"data check: baseline: {b['check']}; offload: {o['check']}")
    if "allreduce" in demo:
        a = demo["allreduce"]
        blocks.append(allreduce_table(a["rows"], a["params"]["hosts"], a["params"]["topology"]))
        blocks.append(f"data check: {a['check']}")
    return "\n\n".join(blocks)
