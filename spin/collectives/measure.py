"""Run one allreduce algorithm on a topology and report what nccl-tests reports, in virtual time:
time, algbw = S/t and busbw = algbw * 2(n-1)/n (S: bytes per rank), plus the modelled host CPU
time, the bytes on every link, and whether every rank's result equals numpy's.

Correctness is ``accuracy.check_result`` (re-exported here with its constants).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..config import HostConfig, SwitchConfig
from ..describe.limits import check_bytes_fit
from ..errors import ConfigError
from ..runs import run
from ..describe.scenario import Scenario
from ..topology import Topology
from . import algorithm
from .accuracy import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, as_float64, check_result  # noqa: F401
from .common import float32_to_bf16, itemsize

PAGE_BYTES = 4096


@dataclass(frozen=True)
class AllreduceMeasurement:
    """One algorithm at one size; times in ps, sizes in B, bandwidths in GB/s (1e9 B/s)."""

    algorithm: str
    hosts: int
    dtype: str
    count: int
    nbytes: int
    time_ps: int
    algbw_gbytes_per_s: float
    busbw_gbytes_per_s: float
    host_cpu_ps_per_rank: float
    link_bytes: int
    correct: bool
    max_abs_error: float
    wall_s: float
    packet_events: int

    def to_dict(self) -> dict:
        """The fields as plain JSON-ready values."""
        return asdict(self)


def make_inputs(n: int, count: int, dtype: str, seed: int = 0,
                density: float = 1.0) -> np.ndarray:
    """Rank i's vector in row i, in the storage dtype (bfloat16 as uint16 bits). Integers span
    the whole int32 range, so sums wrap and wrapping is checked too. With ``density`` < 1 each
    element is non-zero with that probability (sparse gradients), independently per rank."""
    if not 0 < density <= 1:
        raise ConfigError(f"allreduce input density={density}: must be in (0, 1]")
    # the float32 draw, the vectors in their dtype, and their copy in the hosts' memory
    check_bytes_fit(3 * n * count * 4, f"the inputs of an allreduce of {count:,} {dtype} "
                                       f"elements per rank on {n} ranks")
    rng = np.random.default_rng(seed)
    keep = rng.random((n, count)) < density if density < 1 else None
    if dtype == "int32":
        v = rng.integers(-2**31, 2**31, (n, count), dtype=np.int32)   # no int64 copy
        return v if keep is None else np.where(keep, v, np.int32(0))
    x = rng.standard_normal((n, count), dtype=np.float32)     # no float64 copy: 1024 x 4 MiB fit
    if keep is not None:
        x = np.where(keep, x, np.float32(0))
    if dtype == "float32":
        return x
    if dtype == "float16":
        return x.astype(np.float16)
    if dtype == "bfloat16":
        return float32_to_bf16(x)
    raise ConfigError(f"allreduce dtype={dtype!r}; valid choices: int32, float32, float16, "
                      f"bfloat16")


def allreduce_scenario(name: str, n_hosts: int, count: int, dtype: str = "float32", *,
                       seed: int = 0, topology=None, recover_loss: bool = False, **configs):
    """A Scenario on ``topology`` (default: a star of ``n_hosts``) with host memory sized for
    the layout; returns (scenario, plan, inputs). ``configs`` are Scenario fields (nic, host,
    switch, engine, engine_programs); ``host.memory_bytes`` is raised to what the algorithm
    needs, the algorithm's own configs (``Algorithm.configs``) apply unless given, and the
    engine is compiled for the algorithm's handler programs unless ``engine_programs`` names
    others (a superset lets several algorithms share one engine). ``recover_loss`` adds what
    the algorithm needs to survive random frame loss on the topology's links
    (``Algorithm.recovery``: the reliable transport for host algorithms, the handlers' per-hop
    NACK timer for the NIC ring; switch aggregation retransmits by itself)."""
    alg = algorithm(name)
    topo = topology if topology is not None else Topology.star(n_hosts)
    if len(topo.hosts) < n_hosts:
        raise ConfigError(f"allreduce hosts={n_hosts}: the topology has {len(topo.hosts)}")
    host = configs.pop("host", None) or HostConfig()
    need = -(-alg.plan_memory(n_hosts, count, dtype) // PAGE_BYTES) * PAGE_BYTES
    if host.memory_bytes < need:
        host = HostConfig.make(**{**host.model_dump(), "memory_bytes": need})
    build_options: dict = {}
    if recover_loss and alg.lossless_only:
        raise ConfigError(f"allreduce {alg.name}: it has no loss recovery and runs on lossless "
                          f"links only; drop the loss or pick another algorithm")
    if recover_loss and alg.recovery is not None:
        needed, build_options = alg.recovery(n_hosts, count * itemsize(dtype))
        for key, value in needed.items():
            configs.setdefault(key, value)
    for key, value in (alg.configs(n_hosts, count * itemsize(dtype)) if alg.configs is not None else {}).items():
        configs.setdefault(key, value)          # what the algorithm needs, unless given
    configs["switch"] = lossless(configs.get("switch"))
    if "engine_programs" not in configs and alg.programs is not None:
        configs["engine_programs"] = alg.programs()
    sc = Scenario(topo, host=host, **configs)
    inputs = make_inputs(n_hosts, count, dtype, seed, alg.input_density)
    plan = alg.build(sc, count, dtype, hosts=range(n_hosts), inputs=inputs, **build_options)
    return sc, plan, inputs


def lossless(switch=None):
    """``switch`` (default ``SwitchConfig()``) with PFC on unless it says otherwise: RDMA
    fabrics run lossless, and an incast (the fold of recursive doubling for n not a power of
    two sends two vectors to one rank at once) would otherwise tail-drop frames that the
    open-loop transport never resends."""
    switch = switch if switch is not None else SwitchConfig()
    if "pfc" in switch.model_fields_set or switch.pfc:
        return switch
    return SwitchConfig.make(**{**switch.model_dump(), "pfc": True})


def evaluate(result, plan, inputs) -> AllreduceMeasurement:
    """Time, bandwidths, host CPU, link bytes and correctness of a finished run."""
    result.require_finished()
    t = (max(result.mark(plan.end_mark, h) for h in plan.hosts)
         - min(result.mark(plan.start_mark, h) for h in plan.hosts))
    n = plan.n
    algbw = plan.nbytes / t * 1000 if t > 0 else float("inf")     # B/ps * 1000 = GB/s
    outputs = [result.read(h, plan.result_addr, plan.count, plan.storage_dtype)
               for h in plan.hosts]
    check = algorithm(plan.algorithm).check or check_result
    ok, err = check(inputs, outputs, plan.dtype)
    return AllreduceMeasurement(
        algorithm=plan.algorithm, hosts=n, dtype=plan.dtype, count=plan.count,
        nbytes=plan.nbytes, time_ps=int(t), algbw_gbytes_per_s=algbw,
        busbw_gbytes_per_s=algbw * 2 * (n - 1) / n,
        host_cpu_ps_per_rank=sum(result.host(h).cpu_busy_ps for h in plan.hosts) / n,
        link_bytes=result.totals().link_bytes, correct=ok, max_abs_error=err,
        wall_s=float(result.wall.get("seconds", 0.0)),
        packet_events=int(result.packet_events))


def measure(name: str, n_hosts: int, nbytes: int, dtype: str = "float32", *, workers: int = 1,
            seed: int = 0, topology=None, recover_loss: bool = False, quiet: bool = True,
            **configs) -> AllreduceMeasurement:
    """Run allreduce ``name`` of ``nbytes`` per rank on ``n_hosts`` and evaluate it
    (``quiet=False``: compile lines and a progress bar for long runs, on stderr)."""
    w = itemsize(dtype)
    if nbytes < w or nbytes % w:
        raise ConfigError(f"allreduce size={nbytes} B: must be a positive multiple of the "
                          f"{w} B {dtype} element")
    sc, plan, inputs = allreduce_scenario(name, n_hosts, nbytes // w, dtype, seed=seed,
                                          topology=topology, recover_loss=recover_loss,
                                          **configs)
    result = run(sc, workers, read=plan.reads(), quiet=quiet)
    return evaluate(result, plan, inputs)


def with_speedup(rows: list[AllreduceMeasurement], baseline: str = "ring") -> list[dict]:
    """Rows as dicts with ``speedup`` (time) and ``wire_vs_baseline`` (link bytes) against
    ``baseline`` at the same size (None without one)."""
    base = {(r.nbytes, r.dtype): r for r in rows if r.algorithm == baseline}
    out = []
    for r in rows:
        b = base.get((r.nbytes, r.dtype))
        out.append({**r.to_dict(),
                    "speedup": (b.time_ps / r.time_ps) if b and r.time_ps else None,
                    "wire_vs_baseline": (r.link_bytes / b.link_bytes) if b and b.link_bytes
                    else None})
    return out


__all__ = ["AllreduceMeasurement", "allreduce_scenario", "check_result", "evaluate",
           "make_inputs", "measure", "with_speedup"]
