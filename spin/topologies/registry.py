"""The registry of topology builders: ``@register("name", Params)`` on a function that builds a
``Topology`` (Mininet's ``Topo.build`` as one function), ``build_topology(name, **params)`` to
call one by name from Python, a scenario file or the CLI.

Each builder declares its parameters as a frozen pydantic model with units in the field names;
the registry validates them and names the parameter, the value and the valid range or choices
in every error. A builder may also give its analytic bisection bandwidth, which the inventory
reports next to the max-flow figure (tests hold the two equal).
"""
from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Callable

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, ValidationError

from ..config import LinkConfig
from ..errors import TopologyError
from ..topology import Topology


class TopologyParams(BaseModel):
    """Base of every builder's parameters: frozen, unknown keys are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


Builder = Callable[[Any, LinkConfig], Topology]
Bisection = Callable[[Any, LinkConfig], float | None]


@dataclass(frozen=True)
class TopologyKind:
    name: str
    params: type[TopologyParams]
    build: Builder
    bisection_gbps: Bisection | None
    summary: str


class TopologyRegistry:
    """Name -> builder. One instance, ``TOPOLOGIES``, is filled when ``spin.topologies`` is
    imported; tests or plug-ins may build their own."""

    def __init__(self) -> None:
        self._kinds: dict[str, TopologyKind] = {}

    def register(self, name: str, params: type[TopologyParams],
                 bisection_gbps: Bisection | None = None) -> Callable[[Builder], Builder]:
        def deco(fn: Builder) -> Builder:
            if name in self._kinds:
                raise TopologyError(f"topology kind {name!r} is registered twice")
            text = " ".join((fn.__doc__ or "").split())
            summary = text.split(". ")[0].rstrip(".") + "." if text else ""
            self._kinds[name] = TopologyKind(name, params, fn, bisection_gbps, summary)
            return fn
        return deco

    def kinds(self) -> list[str]:
        return sorted(self._kinds)

    def kind(self, name: str, where: str = "topology") -> TopologyKind:
        try:
            return self._kinds[name]
        except (KeyError, TypeError):
            raise TopologyError(f"{where}.kind = {name!r}: unknown topology; valid kinds: "
                                f"{', '.join(self.kinds())}") from None

    def params(self, name: str, params: dict[str, Any], where: str = "topology") -> TopologyParams:
        """Validate ``params`` for the builder ``name``; errors name parameter, value, range."""
        spec = self.kind(name, where)
        try:
            return spec.params(**params)
        except ValidationError as exc:
            raise _param_error(spec, exc, where) from None

    def build(self, name: str, *, link: LinkConfig | None = None, where: str = "topology",
              **params: Any) -> Topology:
        spec = self.kind(name, where)
        p = self.params(name, params, where)
        link = link or LinkConfig()
        try:
            topo = spec.build(p, link)
            topo.validate()
        except ParamError as exc:
            raise TopologyError(f"{where}.{exc.param} = {exc.value!r}: {exc.why}") from None
        except TopologyError as exc:
            raise TopologyError(f"{where} (kind = {name!r}): {exc}") from None
        topo.kind = name
        topo.params = {k: v for k, v in p.model_dump().items() if _plain(v)}
        topo.params["link"] = link
        return topo

    def bisection_gbps(self, topo: Topology) -> float | None:
        """The builder's analytic bisection bandwidth for ``topo`` (None when not known)."""
        spec = self._kinds.get(topo.kind)
        if spec is None or spec.bisection_gbps is None:
            return None
        fields = {k: v for k, v in topo.params.items() if k in spec.params.model_fields}
        return spec.bisection_gbps(spec.params(**fields), topo.params.get("link") or LinkConfig())


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def valid_range(model: type[BaseModel], field: str) -> str:
    """Human text for what a parameter accepts: ``4..16``, ``'a', 'b'``, ``> 0``."""
    info = model.model_fields.get(field)
    if info is None:
        return ", ".join(model.model_fields)
    lo = hi = None
    for m in info.metadata:
        if isinstance(m, Ge):
            lo = f"{m.ge}"
        elif isinstance(m, Gt):
            lo = f"> {m.gt}"
        elif isinstance(m, Le):
            hi = f"{m.le}"
        elif isinstance(m, Lt):
            hi = f"< {m.lt}"
    args = [a for a in typing.get_args(info.annotation) if a is not type(None)]
    lits = [x for a in args for x in typing.get_args(a)] if args else []
    if typing.get_origin(info.annotation) is typing.Literal:
        lits = list(typing.get_args(info.annotation))
    if lits and all(isinstance(x, (str, int)) for x in lits):
        return ", ".join(repr(x) for x in lits)
    if lo and hi and not lo.startswith(">") and not hi.startswith("<"):
        return f"{lo}..{hi}"
    if lo or hi:
        return " and ".join(x if x[0] in "<>" else (f">= {x}" if x == lo else f"<= {x}")
                            for x in (lo, hi) if x)
    types = args or [info.annotation]
    return " or ".join(_TYPE_TEXT.get(getattr(a, "__origin__", a), getattr(a, "__name__", str(a)))
                       for a in types)


_TYPE_TEXT = {bool: "true, false", int: "an integer", float: "a number", str: "a string",
              list: "a list", dict: "a table"}


def _param_error(spec: TopologyKind, exc: ValidationError, where: str) -> TopologyError:
    lines = []
    for err in exc.errors():
        name = str(err["loc"][0]) if err["loc"] else "(params)"
        value = err.get("input")
        if err["type"] == "extra_forbidden":
            why = (f"unknown parameter of kind = {spec.name!r}; valid parameters: "
                   f"{', '.join(spec.params.model_fields) or 'none'}")
        elif err["type"] == "missing":
            why, value = f"required by kind = {spec.name!r}", None
        else:
            why = f"{err['msg']}; valid: {valid_range(spec.params, name)}"
        line = f"{where}.{name} = {value!r}: {why}"
        if line not in lines:
            lines.append(line)
    return TopologyError("\n".join(lines))


class ParamError(TopologyError):
    """Raised by a builder for a parameter value the model cannot rule out on its own (an odd
    k, ratios that do not divide); the registry prefixes the parameter's path."""

    def __init__(self, param: str, value: Any, why: str):
        super().__init__(f"{param} = {value!r}: {why}")
        self.param, self.value, self.why = param, value, why


TOPOLOGIES = TopologyRegistry()
register = TOPOLOGIES.register


def build_topology(name: str, *, link: LinkConfig | None = None, **params: Any) -> Topology:
    """Build the registered topology ``name``; ``link`` is the default for every link whose tier
    has no rate or latency of its own."""
    return TOPOLOGIES.build(name, link=link, **params)


def topology_kinds() -> list[str]:
    return TOPOLOGIES.kinds()


def link_config(link: LinkConfig, rate_gbps: int | None = None,
                latency_ns: float | None = None) -> LinkConfig:
    """``link`` with a tier's own rate and latency where given."""
    over = {k: v for k, v in (("rate_gbps", rate_gbps), ("latency_ns", latency_ns))
            if v is not None}
    return LinkConfig.make(**{**link.model_dump(), **over}) if over else link
