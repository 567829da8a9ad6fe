"""Write one training step of a data- and pipeline-parallel job as a GOAL schedule for
``spin train``: P pipeline stages times D data-parallel replicas, M micro-batches per step.

The model is stated so that compute and bytes follow from it: a stack of ``layers``
transformer layers of hidden size h, split over the P stages as evenly as they go (the first
stages take one more when P does not divide it); a micro-batch of t tokens; values of
``bytes_per_value`` bytes (2: bf16).

* forward FLOPs of one layer on one micro-batch: 24·t·h² (the layer's 12·h² weights, one
  multiply-add, 2 FLOPs, per weight and token; attention's t²-term is left out); backward:
  twice that (gradients of the inputs and of the weights). A calc takes
  FLOPs / (``achieved_tflops`` · 10³) ns.
* activation bytes a stage sends on per micro-batch: t·h·``bytes_per_value`` (every token's
  hidden state); the backward pass sends a gradient of the same size back.
* gradient bytes of a stage: its layers · 12·h² · ``bytes_per_value``, all-reduced across the
  stage's D replicas once every micro-batch's backward pass is done (as Megatron-LM does with
  pipelining), by a ring of send/recv (GOAL has no collective op; Schedgen writes collectives
  this way too): a reduce-scatter of D-1 steps then an all-gather of D-1 steps, each step a
  block of G/D to the next replica. ``reduce_gbytes_per_s`` > 0 adds a calc for each
  reduction (block bytes / rate); 0 (the default) leaves it out: on a GPU it is tens of ns.

Micro-batches run in GPipe order (every forward, then every backward) or 1F1B (PipeDream-
Flush, Megatron-LM's default: stage s runs P-s-1 warm-up forwards, then alternates one
forward and one backward, then drains the backwards). A rank's computes are chained in that
order (one accelerator); a receive is posted once the compute before it in that order has
started; a send follows its compute.

Ranks are numbered as Megatron-LM numbers them with no tensor parallelism: rank =
stage·D + replica, so a data-parallel group is D consecutive ranks. Tags: the forward
activation of micro-batch m has tag m, its backward gradient tag M + m, every ring step of
the all-reduce tag 2M (a pair's ring messages match in the order they were sent).

    python tools/make_training_step.py step.goal [--stages 8 --replicas 128 --micro-batches 8]
    spin train step.goal --topology fat_tree:k=16
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from spin.errors import ConfigError, SpinError
from spin.trace_formats.goal import max_ops
from spin.trace_formats.model import MAX_COMPUTE_NS, MAX_RANKS, MAX_TRANSFER_BYTES

SCHEDULES = ("1f1b", "gpipe")
WEIGHTS_PER_LAYER = 12          # per h^2: attention's four h x h, the MLP's two h x 4h


@dataclass(frozen=True)
class TrainingStep:
    """One step of a DP x PP job. ``activation_bytes`` and ``gradient_bytes`` (per stage)
    replace what the model gives when set; every other figure comes from the model."""

    stages: int = 8
    replicas: int = 128
    micro_batches: int = 8
    schedule: str = "1f1b"
    layers: int = 16
    hidden_size: int = 256
    micro_batch_tokens: int = 512
    bytes_per_value: int = 2
    achieved_tflops: float = 400.0
    reduce_gbytes_per_s: float = 0.0
    activation_bytes: int | None = None
    gradient_bytes: int | None = None

    def __post_init__(self) -> None:
        for name, low, high in (("stages", 1, MAX_RANKS), ("replicas", 1, MAX_RANKS),
                                ("micro_batches", 1, 100_000), ("layers", 1, 100_000),
                                ("hidden_size", 1, 1 << 20),
                                ("micro_batch_tokens", 1, 1 << 30),
                                ("bytes_per_value", 1, 16)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{name} = {value!r}: expected an integer {low}..{high:,}")
        if self.stages * self.replicas > MAX_RANKS:
            raise ConfigError(f"stages x replicas = {self.stages * self.replicas:,} ranks: at "
                              f"most {MAX_RANKS:,}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule = {self.schedule!r}; valid choices: "
                              f"{', '.join(SCHEDULES)}")
        if self.layers < self.stages:
            raise ConfigError(f"layers = {self.layers} < stages = {self.stages}: every stage "
                              f"needs a layer")
        if not 0 < self.achieved_tflops < 1e6:
            raise ConfigError(f"achieved_tflops = {self.achieved_tflops}: expected a rate "
                              f"> 0 and < 1,000,000 TFLOP/s")
        if not 0 <= self.reduce_gbytes_per_s < 1e9:
            raise ConfigError(f"reduce_gbytes_per_s = {self.reduce_gbytes_per_s}: expected "
                              f">= 0 (0: reductions not modelled)")
        for name in ("activation_bytes", "gradient_bytes"):
            value = getattr(self, name)
            if value is not None and not 1 <= value <= MAX_TRANSFER_BYTES:
                raise ConfigError(f"{name} = {value}: expected 1..{MAX_TRANSFER_BYTES:,} B")
        if self.replicas > 1 and min(map(self.stage_gradient_bytes,
                                         range(self.stages))) < self.replicas:
            smallest = min(map(self.stage_gradient_bytes, range(self.stages)))
            raise ConfigError(f"gradient_bytes = {smallest} B (a stage's) < replicas = "
                              f"{self.replicas}: the ring sends each replica a block of at "
                              f"least 1 B")
        for s in range(self.stages):
            if self.backward_ns(s) > MAX_COMPUTE_NS:
                raise ConfigError(f"a backward calc of stage {s} takes {self.backward_ns(s):.3g}"
                                  f" ns, beyond GOAL's limit of {MAX_COMPUTE_NS:.0e} ns")
        if self.ops > max_ops():
            raise ConfigError(f"the schedule would hold {self.ops:,} operations, more than the "
                              f"reader's limit of {max_ops():,}; use fewer --micro-batches, "
                              f"--replicas or --stages")

    @property
    def ranks(self) -> int:
        """Ranks of the job: stages x replicas."""
        return self.stages * self.replicas

    def rank(self, stage: int, replica: int) -> int:
        """Megatron-LM's order without tensor parallelism: data-parallel groups contiguous."""
        return stage * self.replicas + replica

    def stage_layers(self, stage: int) -> int:
        """Layers held by ``stage``."""
        base, extra = divmod(self.layers, self.stages)
        return base + (stage < extra)

    def forward_flops(self, stage: int) -> float:
        """FLOPs of ``stage``'s forward pass on one micro-batch: 24·t·h² per layer."""
        return (2 * WEIGHTS_PER_LAYER * self.micro_batch_tokens * self.hidden_size ** 2
                * self.stage_layers(stage))

    def forward_ns(self, stage: int) -> int:
        """Time of that forward pass at ``achieved_tflops`` (at least 1 ns)."""
        return max(1, round(self.forward_flops(stage) / (self.achieved_tflops * 1e3)))

    def backward_ns(self, stage: int) -> int:
        """The backward pass: twice the forward's FLOPs."""
        return max(1, round(2 * self.forward_flops(stage) / (self.achieved_tflops * 1e3)))

    @property
    def stage_activation_bytes(self) -> int:
        """Bytes one micro-batch's activation (and its gradient) takes between stages."""
        return self.activation_bytes or (self.micro_batch_tokens * self.hidden_size
                                         * self.bytes_per_value)

    def stage_gradient_bytes(self, stage: int) -> int:
        """Bytes of ``stage``'s weight gradients, all-reduced across its replicas."""
        return self.gradient_bytes or (self.stage_layers(stage) * WEIGHTS_PER_LAYER
                                       * self.hidden_size ** 2 * self.bytes_per_value)

    def ring_blocks(self, stage: int) -> list[int]:
        """Bytes of the D blocks ``stage``'s gradient is cut into for the ring."""
        base, extra = divmod(self.stage_gradient_bytes(stage), self.replicas)
        return [base + (i < extra) for i in range(self.replicas)]

    @property
    def ops(self) -> int:
        """Operations the schedule holds (what the GOAL reader's limit counts)."""
        p, d, m = self.stages, self.replicas, self.micro_batches
        transfers = 2 * m * (p - 1) * 2            # forward and backward, a send and a recv
        per_ring_rank = (d - 1) * (4 + (self.reduce_gbytes_per_s > 0)) if d > 1 else 0
        return d * (2 * m * p + transfers) + p * d * per_ring_rank

    def order(self, stage: int) -> list[tuple[str, int]]:
        """``stage``'s passes in order: ("f", m) forward and ("b", m) backward of
        micro-batch m."""
        m = self.micro_batches
        if self.schedule == "gpipe":
            return [("f", i) for i in range(m)] + [("b", i) for i in range(m)]
        warmup = min(self.stages - stage - 1, m)
        out = [("f", i) for i in range(warmup)]
        for i in range(m - warmup):
            out += [("f", warmup + i), ("b", i)]
        return out + [("b", i) for i in range(m - warmup, m)]

    def rank_lines(self, stage: int, replica: int) -> list[str]:
        """GOAL lines of one rank's block (without its braces)."""
        m, p = self.micro_batches, self.stages
        lines: list[str] = []
        previous = None                 # the compute before, in this rank's order
        act = self.stage_activation_bytes
        prev_rank = self.rank(stage - 1, replica) if stage > 0 else None
        next_rank = self.rank(stage + 1, replica) if stage < p - 1 else None
        for kind, i in self.order(stage):
            forward = kind == "f"
            src = prev_rank if forward else next_rank
            dst = next_rank if forward else prev_rank
            tag = i if forward else m + i
            calc = f"{kind}{i}"
            if src is not None:
                lines.append(f"{kind}r{i}: recv {act}b from {src} tag {tag}")
                if previous:
                    lines.append(f"{kind}r{i} irequires {previous}")
            ns = self.forward_ns(stage) if forward else self.backward_ns(stage)
            lines.append(f"{calc}: calc {ns}")
            if src is not None:
                lines.append(f"{calc} requires {kind}r{i}")
            if previous:
                lines.append(f"{calc} requires {previous}")
            if dst is not None:
                lines.append(f"{kind}s{i}: send {act}b to {dst} tag {tag}")
                lines.append(f"{kind}s{i} requires {calc}")
            previous = calc
        if self.replicas > 1:
            lines += self._ring_lines(stage, replica, previous)
        return lines

    def _ring_lines(self, stage: int, replica: int, after: str) -> list[str]:
        """The ring all-reduce of ``stage``'s gradient, started after compute ``after``."""
        d, tag = self.replicas, 2 * self.micro_batches
        right, left = self.rank(stage, (replica + 1) % d), self.rank(stage, (replica - 1) % d)
        blocks = self.ring_blocks(stage)
        lines: list[str] = []
        ready = after                   # what the next send waits for
        for k in range(2 * (d - 1)):
            out_blk, in_blk = (replica - k) % d, (replica - k - 1) % d
            lines += [f"as{k}: send {blocks[out_blk]}b to {right} tag {tag}",
                      f"as{k} requires {ready}",
                      f"ar{k}: recv {blocks[in_blk]}b from {left} tag {tag}",
                      f"ar{k} irequires as{k}"]
            ready = f"ar{k}"
            if k < d - 1 and self.reduce_gbytes_per_s > 0:      # reduce-scatter half
                ns = max(1, round(blocks[in_blk] / self.reduce_gbytes_per_s))
                lines += [f"ad{k}: calc {ns}", f"ad{k} requires ar{k}"]
                ready = f"ad{k}"
        return lines

    def header(self) -> list[str]:
        """Comment lines stating the job, the model and the figures derived from it."""
        s0 = 0
        return [f"// DP x PP training step: {self.stages} stages x {self.replicas} replicas "
                f"= {self.ranks} ranks, {self.micro_batches} micro-batches, {self.schedule}",
                f"// model: {self.layers} layers, hidden {self.hidden_size}, "
                f"{self.micro_batch_tokens} tokens per micro-batch, {self.bytes_per_value} B "
                f"per value, {self.achieved_tflops:g} TFLOP/s achieved",
                f"// stage 0: forward {self.forward_ns(s0)} ns, backward "
                f"{self.backward_ns(s0)} ns per micro-batch; activation "
                f"{self.stage_activation_bytes} B; gradient {self.stage_gradient_bytes(s0)} B",
                "// rank = stage * replicas + replica; written by tools/make_training_step.py"]

    def write(self, path: str | Path) -> Path:
        """The schedule in ``path``."""
        path = Path(path)
        with path.open("w") as out:
            out.write("\n".join(self.header()) + f"\n\nnum_ranks {self.ranks}\n")
            for stage in range(self.stages):
                for replica in range(self.replicas):
                    out.write(f"\nrank {self.rank(stage, replica)} {{\n")
                    out.write("\n".join(self.rank_lines(stage, replica)))
                    out.write("\n}\n")
        return path


class _OneLineParser(argparse.ArgumentParser):
    """Bad options end in one line, as every spin error does."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    """The command's options: a TrainingStep's fields with units in their names."""
    d = TrainingStep()
    p = _OneLineParser(prog="make_training_step.py",
                       description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("out", help="the GOAL file to write")
    p.add_argument("--stages", type=int, default=d.stages, help="pipeline stages P "
                   "(default %(default)s)")
    p.add_argument("--replicas", type=int, default=d.replicas, help="data-parallel replicas D "
                   "(default %(default)s)")
    p.add_argument("--micro-batches", type=int, default=d.micro_batches,
                   help="micro-batches M per step (default %(default)s)")
    p.add_argument("--schedule", choices=SCHEDULES, default=d.schedule,
                   help="pipeline order (default %(default)s)")
    p.add_argument("--layers", type=int, default=d.layers, help="transformer layers "
                   "(default %(default)s)")
    p.add_argument("--hidden-size", type=int, default=d.hidden_size, help="hidden size h "
                   "(default %(default)s)")
    p.add_argument("--micro-batch-tokens", type=int, default=d.micro_batch_tokens,
                   help="tokens t per micro-batch (default %(default)s)")
    p.add_argument("--bytes-per-value", type=int, default=d.bytes_per_value,
                   help="bytes of an activation or gradient value (default %(default)s: bf16)")
    p.add_argument("--achieved-tflops", type=float, default=d.achieved_tflops,
                   help="compute rate a rank achieves (TFLOP/s, default %(default)s)")
    p.add_argument("--reduce-gbytes-per-s", type=float, default=d.reduce_gbytes_per_s,
                   help="rate of the ring's reductions (GB/s of block; default 0: not "
                   "modelled)")
    p.add_argument("--activation-bytes", type=int, default=None,
                   help="bytes sent stage to stage per micro-batch (default: from the model)")
    p.add_argument("--gradient-bytes", type=int, default=None,
                   help="bytes of a stage's gradient all-reduce (default: from the model)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Write the schedule and say what it holds."""
    p = parser()
    args = p.parse_args(argv)
    names = {f.name for f in fields(TrainingStep)}
    try:
        step = TrainingStep(**{k: v for k, v in vars(args).items() if k in names})
        path = step.write(args.out)
    except SpinError as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")
    except OSError as exc:
        p.exit(2, f"{p.prog}: error: {args.out}: cannot write: {exc.strerror or exc}\n")
    print(f"{path}: {step.ranks} ranks, {step.ops:,} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
