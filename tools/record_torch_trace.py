"""Record PyTorch execution traces of one data-parallel training step, one JSON file per rank,
as ``torch.profiler.ExecutionTraceObserver`` writes them, for ``spin train`` to replay.

A small MLP is trained for one step with ``torch.distributed`` on CPU (the gloo backend, one
process per rank): forward, backward, an all-reduce of every gradient, an optimizer step.
Run: ``python tools/record_torch_trace.py OUTDIR --ranks 2`` writes ``OUTDIR/dp.<rank>.json``.
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


def step(rank: int, world: int, out: str, port: int, name: str) -> None:
    """One rank: set up gloo, record one training step under the observer."""
    import torch
    import torch.distributed as dist
    from torch.profiler import ExecutionTraceObserver

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64), torch.randn(32, 16)
    et = ExecutionTraceObserver()
    et.register_callback(str(Path(out) / f"{name}.{rank}.json"))
    et.start()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    et.stop()
    et.unregister_callback()
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """Spawn ``--ranks`` processes and record their step."""
    import torch.multiprocessing as mp
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="directory for <name>.<rank>.json")
    p.add_argument("--ranks", type=int, default=2, help="processes (default 2)")
    p.add_argument("--name", default="dp", help="file prefix (default dp)")
    args = p.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    mp.spawn(step, args=(args.ranks, args.out, free_port(), args.name), nprocs=args.ranks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
