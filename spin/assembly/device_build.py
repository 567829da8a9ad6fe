"""Each device kind fills its own devices: the state builder groups the topology's devices by
kind (``Topology.device_kinds``, never by their place in the device order) and calls each
kind's ``build`` (``spin.engine.device_kinds.DeviceKind``) on its rows with a ``DeviceBuild``,
what every build may read."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..engine import state as S
from ..engine.device_kinds import DeviceKind, check_kind
from ..errors import ConfigError


@dataclass(frozen=True)
class DeviceBuild:
    """``scenario``: the Scenario being built; ``host_stride_bytes``: bytes of ``st.host_mem``
    per node (a node's memory starts at node id times this); ``generated``: payload is
    generated, hosts keep no memory (``Scenario.payload``)."""

    scenario: Any
    host_stride_bytes: int
    generated: bool


def build_function(kind: DeviceKind) -> Callable[[Any, np.ndarray, DeviceBuild], None]:
    """The kind's build function, imported from its ``module:function`` path."""
    module, _, name = kind.build.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"device kind {kind.name!r}: build = {kind.build!r}: {exc}") from None


def rows_by_kind(kinds: list[DeviceKind]) -> dict[DeviceKind, np.ndarray]:
    """Each kind of ``kinds`` (one per device) with the rows of its devices, ascending."""
    rows: dict[DeviceKind, list[int]] = {}
    for d, kind in enumerate(kinds):
        rows.setdefault(kind, []).append(d)
    return {kind: np.asarray(r, np.int64) for kind, r in rows.items()}


def build_devices(st, kinds: list[DeviceKind], build: DeviceBuild) -> None:
    """Every kind fills its own devices' columns (the order of the kinds does not matter:
    each writes only its rows); a device's ``D_KIND`` is the code of what it runs."""
    for kind, rows in rows_by_kind(kinds).items():
        check_kind(kind)
        build_function(kind)(st, rows, build)
        st.dev[rows, S.D_KIND] = kind.code
