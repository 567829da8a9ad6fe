"""Record PyTorch execution traces of one data-parallel training step, one JSON file per rank,
as ``torch.profiler.ExecutionTraceObserver`` writes them, for ``spin train`` to replay.

A small MLP (Linear(64, 128), ReLU, Linear(128, 16); batch 32) is trained with
``torch.distributed`` on CPU (the gloo backend, one process per rank): after one unrecorded
warm-up step, one step is recorded: forward, backward, an all-reduce of every gradient, an
optimizer step. Run: ``python tools/record_torch_trace.py OUTDIR --ranks 2`` writes
``OUTDIR/dp.<rank>.json``; ``--kineto`` also the profiler's trace, ``dp.<rank>.kineto.json``.
Needs torch (not a dependency of spin)."""
from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path


def free_port() -> int:
    """A free TCP port on the loopback for the rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step(rank: int, world: int, out: str, port: int, name: str, kineto: bool) -> None:
    """One rank: set up gloo, record one training step under the observer (and under the
    Kineto profiler with ``kineto``, whose events carry the ET nodes' ``rf_id`` as their
    "Record function id")."""
    import contextlib

    import torch
    import torch.distributed as dist
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)    # one core per rank: ranks sharing a machine do not contend
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64), torch.randn(32, 16)

    def train_step() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()

    train_step()    # warm-up, unrecorded: the recorded step is a steady-state one
    et = ExecutionTraceObserver()
    et.register_callback(str(Path(out) / f"{name}.{rank}.json"))
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True) if kineto else \
        contextlib.nullcontext()
    with prof:
        et.start()
        train_step()
        et.stop()
    et.unregister_callback()
    if kineto:
        prof.export_chrome_trace(str(Path(out) / f"{name}.{rank}.kineto.json"))
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """Spawn ``--ranks`` processes and record their step."""
    import torch.multiprocessing as mp
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="directory for <name>.<rank>.json")
    p.add_argument("--ranks", type=int, default=2, help="processes (default 2)")
    p.add_argument("--name", default="dp", help="file prefix (default dp)")
    p.add_argument("--kineto", action="store_true",
                   help="also write the Kineto trace of each rank, <name>.<rank>.kineto.json")
    args = p.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    mp.spawn(step, args=(args.ranks, args.out, free_port(), args.name, args.kineto),
             nprocs=args.ranks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
