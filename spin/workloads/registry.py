"""The registry of workload builders, shaped like the topologies' one: ``@register("name",
Params)`` on a function that adds host programs to a ``Scenario`` and returns the ``Workload``
it built, ``build_workload(scenario, "name", **params)`` to call one by name from Python, a
scenario file (``[workload] kind = ...``) or the command line.

Parameters are frozen pydantic models with units in the field names; errors name the
parameter, the value and the valid range or choices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from ..topologies.registry import valid_range
from .common import Workload


class WorkloadParams(BaseModel):
    """What every workload takes: message size, iterations, start skew and its seed, the first
    QP and whether send buffers get a per-host byte pattern (so delivered bytes can be checked;
    off saves the memory of large runs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    message_bytes: int = Field(65_536, ge=1)
    iterations: int = Field(1, ge=1, le=10_000)
    start_skew_ns: float = Field(0.0, ge=0, allow_inf_nan=False)
    seed: int = Field(0, ge=0)
    qp: int = Field(1, ge=0)
    fill: bool = True
    label: str = Field("", pattern=r"^[A-Za-z0-9_.-]*$")


Builder = Callable[[Any, Any], Workload]


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    params: type[WorkloadParams]
    build: Builder
    summary: str


class WorkloadRegistry:
    """Name -> builder. One instance, ``WORKLOADS``, is filled when ``spin.workloads`` is
    imported."""

    def __init__(self) -> None:
        self._kinds: dict[str, WorkloadKind] = {}

    def register(self, name: str, params: type[WorkloadParams]) -> Callable[[Builder], Builder]:
        def deco(fn: Builder) -> Builder:
            if name in self._kinds:
                raise ConfigError(f"workload kind {name!r} is registered twice")
            text = " ".join((fn.__doc__ or "").split())
            summary = text.split(". ")[0].rstrip(".") + "." if text else ""
            self._kinds[name] = WorkloadKind(name, params, fn, summary)
            return fn
        return deco

    def kinds(self) -> list[str]:
        return sorted(self._kinds)

    def kind(self, name: str, where: str = "workload") -> WorkloadKind:
        try:
            return self._kinds[name]
        except (KeyError, TypeError):
            raise ConfigError(f"{where}.kind = {name!r}: unknown workload; valid kinds: "
                              f"{', '.join(self.kinds())}") from None

    def params(self, name: str, params: dict[str, Any], where: str = "workload") -> WorkloadParams:
        spec = self.kind(name, where)
        try:
            return spec.params(**params)
        except ValidationError as exc:
            lines = []
            for err in exc.errors():
                field = str(err["loc"][0]) if err["loc"] else "(params)"
                if err["type"] == "extra_forbidden":
                    why = (f"unknown parameter of kind = {name!r}; valid parameters: "
                           f"{', '.join(spec.params.model_fields)}")
                elif err["type"] == "missing":
                    why = f"required by kind = {name!r}"
                else:
                    why = f"{err['msg']}; valid: {valid_range(spec.params, field)}"
                lines.append(f"{where}.{field} = {err.get('input')!r}: {why}")
            raise ConfigError("\n".join(dict.fromkeys(lines))) from None

    def build(self, scenario, name: str, *, where: str = "workload", **params: Any) -> Workload:
        spec = self.kind(name, where)
        p = self.params(name, params, where)
        try:
            return spec.build(scenario, p)
        except ConfigError as exc:
            raise ConfigError(f"{where} (kind = {name!r}): {exc}") from None


WORKLOADS = WorkloadRegistry()
register = WORKLOADS.register


def build_workload(scenario, name: str, **params: Any) -> Workload:
    """Add the registered workload ``name`` to ``scenario`` (its host programs and send
    buffers) and return what was added."""
    return WORKLOADS.build(scenario, name, **params)


def workload_kinds() -> list[str]:
    return WORKLOADS.kinds()
