"""How long a rank's compute nodes take: the trace's measured duration, else a roofline of its
operation count and tensor bytes at the rank's rate; per-rank speed factors and start delays
model stragglers (astra-sim#292, #73 ask for both)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..trace_formats.model import TraceOp

CPU_OP_POLICIES = ("skip", "serial")
MAX_SLOWDOWN = 1_000_000.0     # a straggler this slow already takes the whole step
MAX_DELAY_US = 1e9             # 1,000 s, the engine's longest compute time


@dataclass(frozen=True)
class ComputeModel:
    """Compute speed of the ranks.

    ``peak_tflops`` and ``memory_gbytes_per_s``: the roofline for nodes without a measured
    duration, time = max(flops / peak, bytes / memory bandwidth); defaults are an H100 SXM's
    dense BF16 peak (989 TFLOP/s) and HBM3 bandwidth (3350 GB/s), NVIDIA's datasheet.
    ``rank_tflops``: rank -> its own peak (a mixed cluster); measured durations keep theirs.
    ``slowdown``: rank -> factor >= 1 multiplying every compute time of that rank (a slower
    accelerator, a thermally throttled one). ``delay_us``: rank -> idle time before the
    rank's first node (a late arrival). ``cpu_ops``: what CPU-side nodes of converted PyTorch
    traces (``is_cpu_op``) cost: ``skip`` (no time: ASTRA-sim runs them on a CPU queue apart
    from the accelerator's) or ``serial`` (their duration, on the rank's one timeline)."""

    peak_tflops: float = 989.0
    memory_gbytes_per_s: float = 3350.0
    rank_tflops: dict[int, float] = field(default_factory=dict)
    slowdown: dict[int, float] = field(default_factory=dict)
    delay_us: dict[int, float] = field(default_factory=dict)
    cpu_ops: str = "skip"

    def __post_init__(self) -> None:
        # finite and bounded: an infinite factor or a 1e30 us delay reached the host program
        # as a compute time out of range, blamed on an op instead of on the option
        if not 0 < self.peak_tflops < math.inf or not 0 < self.memory_gbytes_per_s < math.inf:
            raise ConfigError(f"compute peak_tflops={self.peak_tflops}, memory_gbytes_per_s="
                              f"{self.memory_gbytes_per_s}: both must be finite numbers > 0")
        for rank, peak in self.rank_tflops.items():
            if not 0 < peak < math.inf:
                raise ConfigError(f"peak of rank {rank} (--rank-tflops): {peak} TFLOP/s must be "
                                  f"a finite number > 0")
        for rank, factor in self.slowdown.items():
            if not 0 < factor <= MAX_SLOWDOWN:
                raise ConfigError(f"slowdown of rank {rank} (--slow): factor={factor} must be "
                                  f"a number in (0, {MAX_SLOWDOWN:,.0f}]")
        for rank, delay in self.delay_us.items():
            if not 0 <= delay <= MAX_DELAY_US:
                raise ConfigError(f"delay of rank {rank} (--delay): {delay} us must be in "
                                  f"0..{MAX_DELAY_US:,.0f} us (1,000 s)")
        if self.cpu_ops not in CPU_OP_POLICIES:
            raise ConfigError(f"cpu_ops={self.cpu_ops!r}; valid choices: "
                              f"{', '.join(CPU_OP_POLICIES)}")

    def check_ranks(self, n_ranks: int) -> None:
        """Refuse straggler settings naming ranks the trace does not have."""
        for what, table in (("slowdown", self.slowdown), ("delay", self.delay_us),
                            ("peak", self.rank_tflops)):
            bad = [r for r in table if not 0 <= r < n_ranks]
            if bad:
                raise ConfigError(f"{what} of rank {bad[0]}: the trace has ranks "
                                  f"0..{n_ranks - 1}")

    def duration_ns(self, rank: int, op: TraceOp) -> float:
        """Time of compute node ``op`` on ``rank``."""
        if op.cpu_op and self.cpu_ops == "skip":
            return 0.0
        if op.duration_ns is not None:
            base = op.duration_ns
        else:
            peak = self.rank_tflops.get(rank, self.peak_tflops)
            base = max(op.flops / (peak * 1e3),                       # 1 TFLOP/s = 1e3 FLOP/ns
                       op.tensor_bytes / self.memory_gbytes_per_s)    # 1 GB/s = 1 B/ns
        return base * self.slowdown.get(rank, 1.0)

    def start_delay_ns(self, rank: int) -> float:
        """How late ``rank`` starts."""
        return self.delay_us.get(rank, 0.0) * 1000.0
