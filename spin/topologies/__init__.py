"""Ready-made topologies, one readable builder per module, looked up by name in a registry.

``build_topology("fat_tree", k=8)`` from Python, ``[topology] kind = "fat_tree"`` in a scenario
file, ``spin topo fat_tree --param k=8`` on the command line. ``topology_inventory`` counts
switches, ports and links by tier and computes the bisection bandwidth.
"""
from .declare import ParamError, TopologyKind, TopologyParams, builder
from .catalog import TOPOLOGIES, build_topology, topology_kinds
from .inventory import Inventory, topology_inventory

__all__ = ["TOPOLOGIES", "Inventory", "ParamError", "TopologyKind", "TopologyParams",
           "build_topology", "builder", "topology_inventory", "topology_kinds"]
