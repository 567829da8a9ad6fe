"""Topologies priced per bandwidth: fat tree, leaf-spine, HammingMesh and supernode at 16 hosts,
with their cost (switches by radix, NIC ports, cables by class, power), cost per Gb/s of
bisection, and the allreduce and all-to-all bandwidth each delivers per host, measured in short
runs. The same table as ``spin topo --compare --compare-hosts 16``, here with a cost model of
your own (optics twice as expensive) to show that every price is a parameter.

    PYTHONPATH=. python examples/topologies/cost_compare.py [--measure-bytes 1MiB]
"""
from __future__ import annotations

import argparse
import functools

from spin.collectives.fabric_bandwidth import measure_fabric
from spin.collectives.allreduce_table import parse_size
from spin.topologies import build_topology, topology_inventory
from spin.topologies.cost import CostModel, topology_cost
from spin.topologies.inventory_tables import COMPARE_16, compare_table, label


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure-bytes", default="1MiB")
    nbytes = parse_size(ap.parse_args().measure_bytes)
    model = CostModel(transceiver_usd=2_000.0, aoc_usd=1_800.0)
    rows = []
    for name, params in COMPARE_16:
        topo = build_topology(name, **params)
        inv = topology_inventory(topo)
        cost = topology_cost(topo, model, inv.bisection_gbps)
        bw = measure_fabric(functools.partial(build_topology, name, **params), nbytes)
        rows.append((label(name, params), inv, cost, bw))
    print(compare_table(rows))
    by_kind = {title.split()[0]: (inv, cost, bw) for title, inv, cost, bw in rows}

    def usd_per_allreduce(kind: str) -> float:
        inv, cost, bw = by_kind[kind]
        return cost.total_usd / (bw.allreduce_gbytes_per_s * inv.hosts)

    ratio = usd_per_allreduce("fat_tree") / usd_per_allreduce("hamming_mesh")
    print(f"\nfat tree / HammingMesh, cost per GB/s of allreduce: {ratio:.2f}x")


if __name__ == "__main__":
    main()
