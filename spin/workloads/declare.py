"""How a workload builder is declared, shaped like the topologies' one: ``@builder("name",
Params)`` on a function that adds host programs to a ``Scenario`` and returns the ``Workload``
it built makes it a ``WorkloadKind``; ``spin.workloads.catalog`` lists every kind once in
``WORKLOADS`` and ``build_workload(scenario, "name", **params)`` calls one by name from Python,
a scenario file (``[workload] kind = ...``) or the command line.

Parameters are frozen pydantic models with units in the field names; errors name the
parameter, the value and the valid range or choices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError, HostMemoryError
from ..suggest import did_you_mean, misspelt_key
from ..topologies.declare import first_sentence, valid_range
from .common import Workload


class WorkloadParams(BaseModel):
    """What every workload takes: message size, iterations, start skew and its seed, the first
    QP and whether send buffers get a per-host byte pattern (so delivered bytes can be checked;
    off saves the memory of large runs)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    message_bytes: int = Field(65_536, ge=1)
    iterations: int = Field(1, ge=1, le=10_000)
    start_skew_ns: float = Field(0.0, ge=0, allow_inf_nan=False)
    seed: int = Field(0, ge=0)
    qp: int = Field(1, ge=0)
    fill: bool = True
    label: str = Field("", pattern=r"^[A-Za-z0-9_.-]*$")
    # "generated": the scenario keeps no host memory; frames carry bytes generated from
    # (node, address) (spin.wire.payload); implies fill = false
    payload: Literal["stored", "generated"] = "stored"


Builder = Callable[[Any, Any], Workload]


@dataclass(frozen=True)
class WorkloadKind:
    """A workload builder declared by ``@builder``: its name, parameters, build function and
    the first sentence of its docstring."""

    name: str
    params: type[WorkloadParams]
    build: Builder
    summary: str

    def validated(self, params: dict[str, Any], where: str = "workload") -> WorkloadParams:
        """Validate ``params``; errors name parameter, value and valid range."""
        try:
            return self.params(**params)
        except ValidationError as exc:
            lines = []
            for err in exc.errors():
                field = str(err["loc"][0]) if err["loc"] else "(params)"
                if err["type"] == "extra_forbidden":
                    why = (f"unknown parameter {field!r} of kind = {self.name!r}"
                           f"{did_you_mean(field, self.params.model_fields)}; valid "
                           f"parameters: {', '.join(self.params.model_fields)}")
                elif err["type"] == "missing":
                    if misspelt_key(field, params, self.params.model_fields) is not None:
                        continue   # the misspelt key's own line names the mistake
                    why = f"required by kind = {self.name!r}"
                else:
                    why = f"{err['msg']}; valid: {valid_range(self.params, field)}"
                lines.append(f"{where}.{field} = {err.get('input')!r}: {why}")
            raise ConfigError("\n".join(dict.fromkeys(lines))) from None

    def add(self, scenario, *, where: str = "workload", **params: Any) -> Workload:
        """Add this workload to ``scenario`` and return what was added."""
        p = self.validated(params, where)
        if p.payload == "generated":
            if p.fill and "fill" in p.model_fields_set:
                raise ConfigError(f"{where}.fill = true with payload = 'generated': a generated "
                                  f"payload keeps no send buffers to fill; drop fill or use "
                                  f"payload = 'stored'")
            p = p.model_copy(update={"fill": False})
        try:
            workload = self.build(scenario, p)
        except HostMemoryError as exc:     # keeps the size that fits, for add_workload
            raise HostMemoryError(f"{where} (kind = {self.name!r}): {exc}",
                                  exc.needed_bytes) from None
        except ConfigError as exc:
            raise ConfigError(f"{where} (kind = {self.name!r}): {exc}") from None
        if p.payload == "generated":
            scenario.payload = "generated"
        return workload


def builder(name: str, params: type[WorkloadParams]) -> Callable[[Builder], WorkloadKind]:
    """Declare the decorated function as workload kind ``name`` (its module's attribute becomes
    the ``WorkloadKind``; ``spin.workloads.catalog`` lists it in ``WORKLOADS``)."""
    def deco(fn: Builder) -> WorkloadKind:
        return WorkloadKind(name, params, fn, first_sentence(fn.__doc__))
    return deco
