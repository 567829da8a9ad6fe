"""Allreduce on the emulated fabric: builders that add host programs (or, for in-network
variants, handlers) to a ``Scenario``, a registry of them by name, and ``measure``, which runs
one on a topology and reports time, algbw/busbw, host CPU, bytes on the wire and correctness.

Host baselines: ``ring``, ``ring2d`` (two-dimensional rings over every port of a HammingMesh
accelerator), ``rd`` (recursive doubling), ``rabenseifner``, ``direct`` (every block straight
to its owner: two steps of latency), ``hierarchical`` (rings within each server, across the
rails, within each server again: ``spin.collectives.hierarchical``). NIC-offloaded (sPIN
handlers, ``spin.collectives.nic``): ``nic``, ``nic-int8``, ``nic-sparse``, ``nic-sparse-hash``;
``nic-ring2d`` (``spin.collectives.nic_ring2d``).
In the switches: ``switch`` (SwitchML-style aggregation, ``spin.collectives.switch``; floats
added natively) and ``switch-quantized`` (SwitchML's own float mode: block-exponent int32).
Another variant joins the table as one more ``Algorithm`` entry of ``ALGORITHMS``: a builder
``build(scenario, count, dtype, *, hosts, inputs, qp) -> AllreducePlan`` and the host memory its
layout needs;
optionally the handler programs it installs (so one engine is compiled for every algorithm of a
table), its own result check (lossy variants) and the density of the inputs it is measured on.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..registry import Registry
from . import (direct, hierarchical, nic, nic_ring2d, rabenseifner, recursive_doubling, ring,
               ring2d, switch)
from .common import DTYPES, AllreducePlan, reliable_transport

__all__ = ["ALGORITHMS", "DTYPES", "Algorithm", "AllreducePlan", "algorithm"]


@dataclass(frozen=True)
class Algorithm:
    """An allreduce of ``ALGORITHMS``: its table name, a title, its builder and its memory
    need."""

    name: str
    title: str
    build: Callable[..., AllreducePlan]
    plan_memory: Callable[[int, int, str], int]     # (n, count, dtype) -> host bytes needed
    programs: Callable[[], list] | None = None       # handler programs its scenarios install
    check: Callable | None = None    # (inputs, results, dtype) -> (ok, max error); default exact
    input_density: float = 1.0       # fraction of non-zero input elements measure() uses
    dtypes: tuple[str, ...] = tuple(DTYPES)          # element types it takes
    configs: Callable[[int, int], dict] | None = None  # (n, bytes per rank) -> Scenario configs
    # (n, bytes per rank) -> (Scenario configs, build options) with which it survives random
    # frame loss on the links; None: it needs nothing more (it recovers by itself)
    recovery: Callable[[int, int], tuple[dict, dict]] | None = None
    lossless_only: bool = False      # no loss recovery: refused on lossy links


def _nic_variant(name: str, mode: str) -> Algorithm:
    return Algorithm(name, f"NIC ring ({mode}; sPIN handlers)", nic.builder(name), nic.plan_memory,
                     programs=nic.programs, check=nic.check_int8 if mode == "int8" else None,
                     input_density=nic.SPARSE_DENSITY if mode.startswith("sparse") else 1.0,
                     dtypes=nic.MODE_DTYPES[mode], configs=nic.run_configs,
                     recovery=nic.loss_recovery)


ALGORITHMS: Registry[Algorithm] = Registry("allreduce algorithm", (
    Algorithm("ring", "ring (reduce-scatter + allgather)", ring.build, ring.plan_memory,
              recovery=reliable_transport),
    Algorithm("rd", "recursive doubling", recursive_doubling.build,
              recursive_doubling.plan_memory, recovery=reliable_transport),
    Algorithm("rabenseifner", "Rabenseifner (halving + doubling)", rabenseifner.build,
              rabenseifner.plan_memory, recovery=reliable_transport),
    Algorithm("direct", "direct (every block straight to its owner, both phases)",
              direct.build, direct.plan_memory, recovery=reliable_transport),
    Algorithm("hierarchical", "hierarchical rings (within servers, across rails, within servers)",
              hierarchical.build, hierarchical.plan_memory, recovery=reliable_transport),
    Algorithm("ring2d", "two-dimensional rings (HammingMesh; streams over every port)",
              ring2d.build, ring2d.plan_memory, recovery=reliable_transport),
    *(_nic_variant(name, mode) for name, mode in nic.VARIANTS.items()),
    Algorithm("nic-ring2d", "NIC two-dimensional rings (sPIN handlers; streams over every port)",
              nic_ring2d.build, nic_ring2d.plan_memory, programs=nic_ring2d.programs,
              dtypes=nic_ring2d.DTYPES, configs=nic_ring2d.run_configs, lossless_only=True),
    Algorithm("switch", "in-switch aggregation (SwitchML)", switch.build,
              switch.plan_memory, programs=switch.programs, check=switch.check_result,
              dtypes=switch.DTYPES, configs=lambda n, nbytes: switch.run_configs(n)),
    Algorithm("switch-quantized", "in-switch aggregation, SwitchML's float->int32 "
              "block-exponent quantization", switch.build_quantized,
              switch.plan_memory_quantized, programs=switch.programs,
              check=switch.check_quantized, dtypes=("float32",),
              configs=lambda n, nbytes: switch.run_configs(n)),
), aliases={"recursive_doubling": "rd", "rab": "rabenseifner"})


def algorithm(name: str, where: str = "algorithm") -> Algorithm:
    """The algorithm ``name`` (or an alias of one); a ConfigError naming ``where``, the value
    and the valid choices otherwise."""
    return ALGORITHMS.get(name, where)
