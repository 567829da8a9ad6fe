"""Write a small data- and tensor-parallel training step as a Chakra trace set, 4 ranks:

    embedding (roofline: FLOPs and bytes) -> all-gather in the tensor-parallel pair (pg tp0/tp1)
    -> forward -> backward of layer 2 -> all-reduce of its gradient (512 KiB, every rank)
                                      -> backward of layer 1 (independent of that all-reduce)
                                         -> all-reduce of its gradient -> optimizer
    plus a CPU-side data-loader node (is_cpu_op) as converted PyTorch traces have.

Run it to regenerate dp_step/ (the files are committed; tests check they are what this
writes), then replay:  spin train examples/training/dp_step/dp_step --algo switch"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from spin.trace_formats.chakra_writer import ChakraNode, write_rank

RANKS = 4
GRAD_BYTES = 512 << 10
GATHER_BYTES = 256 << 10


def rank_nodes(rank: int) -> list[ChakraNode]:
    coll = "COMM_COLL_NODE"
    return [
        ChakraNode(1, "COMP_NODE", "embedding_fwd",
                   attrs={"num_ops": 2_000_000_000, "tensor_size": 64 << 20}),
        ChakraNode(2, coll, "all_gather_tp", data_deps=(1,),
                   attrs={"comm_type": "all_gather", "comm_size": GATHER_BYTES,
                          "pg_name": f"tp{rank // 2}", "involved_dim": [True]}),
        ChakraNode(3, "COMP_NODE", "forward", data_deps=(2,), duration_micros=30),
        ChakraNode(4, "COMP_NODE", "backward_layer2", data_deps=(3,), duration_micros=40),
        ChakraNode(5, coll, "all_reduce_grad2", data_deps=(4,),
                   attrs={"comm_type": "all_reduce", "comm_size": GRAD_BYTES}),
        ChakraNode(6, "COMP_NODE", "backward_layer1", data_deps=(4,), duration_micros=40),
        ChakraNode(7, coll, "all_reduce_grad1", data_deps=(6,),
                   attrs={"comm_type": "all_reduce", "comm_size": GRAD_BYTES}),
        ChakraNode(8, "COMP_NODE", "optimizer", data_deps=(5, 7), duration_micros=10),
        ChakraNode(9, "COMP_NODE", "dataloader", duration_micros=25,
                   attrs={"is_cpu_op": True}),
    ]


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = [write_rank(directory / f"dp_step.{r}.et", rank_nodes(r)) for r in range(RANKS)]
    groups = directory / "dp_step.groups.json"
    groups.write_text(json.dumps({"tp0": [0, 1], "tp1": [2, 3]}) + "\n")
    return [*files, groups]


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "dp_step"
    for path in write(out):
        print(path)
