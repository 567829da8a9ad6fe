"""Handler memory the in-switch allreduce needs on a fabric (figures, not a test; no engine run):
per switch of the job's tree, with float sums in child order (a row per child and slot) and
in arrival order (``SwitchMLJob(ordered=False)``, no rows).

    python bench/bench_switch_memory.py [--topology fat_tree:k=16] [--mtu 4096] [--window 128]
        [--dtype float32,float16,int32]

"largest" is the widest switch (the root of a fat tree: one child per pod); "total" sums the
tree's switches, which is what the run holds (a scenario pads every switch's array to the
largest, as untouched zero pages).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def tree_memory(topo, dtype: str, mtu: int, window: int, ordered: bool) -> list[tuple[int, int]]:
    """(bytes, children) per switch of the tree over all hosts of ``topo``."""
    from handlers.switchml import memory_words
    from spin.collectives.switch_tree import aggregation_tree
    from spin.wire import switchml as SW
    hosts = tuple(range(len(topo.hosts)))
    equal_cost = topo.equal_cost_ports() if len(topo.switches) > 1 else None
    _root, nodes = aggregation_tree(topo, hosts, equal_cost, None)
    op = SW.SUM_TYPES[dtype]
    k = mtu // SW.element_bytes(op)
    return [(4 * memory_words([{"job": 0, "op": op, "ordered": ordered, "slots": window,
                                "k": k, "children": node.children}], len(hosts)),
             len(node.children)) for node in nodes.values()]


def main() -> None:
    from spin.topologies import build_topology
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="fat_tree:k=16")
    ap.add_argument("--mtu", type=int, default=4096)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--dtype", default="float32,float16,int32")
    a = ap.parse_args()
    name, _, spec = a.topology.partition(":")
    params = {k: int(v) for k, v in (p.split("=") for p in spec.split(",") if p)}
    topo = build_topology(name, **params)
    print(f"{a.topology}: {len(topo.hosts)} hosts, MTU {a.mtu} B, window {a.window}")
    print(f"{'dtype':8s} {'order':8s} {'switches':>8s} {'children':>8s} {'largest (MiB)':>14s} "
          f"{'total (GiB)':>12s}")
    for dtype in a.dtype.split(","):
        for ordered in (True, False):
            per = tree_memory(topo, dtype, a.mtu, a.window, ordered)
            print(f"{dtype:8s} {'child' if ordered else 'arrival':8s} {len(per):8d} "
                  f"{max(c for _, c in per):8d} {max(b for b, _ in per) / 2**20:14.1f} "
                  f"{sum(b for b, _ in per) / 2**30:12.2f}")


if __name__ == "__main__":
    main()
