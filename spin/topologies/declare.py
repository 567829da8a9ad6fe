"""How a topology builder is declared: ``@builder("name", Params)`` on a function that builds a
``Topology`` (Mininet's ``Topo.build`` as one function) makes it a ``TopologyKind``;
``spin.topologies.catalog`` lists every kind once in ``TOPOLOGIES`` and ``build_topology(name,
**params)`` calls one by name from Python, a scenario file or the CLI.

Each builder declares its parameters as a frozen pydantic model with units in the field names;
the kind validates them and names the parameter, the value and the valid range or choices
in every error. A builder may also give its analytic bisection bandwidth, which the inventory
reports next to the max-flow figure (tests hold the two equal).
"""
from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Callable

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from ..config import LinkConfig
from ..describe.limits import check_topology_size
from ..errors import ConfigError, TopologyError
from ..suggest import did_you_mean, misspelt_key
from ..topology import Topology


class TopologyParams(BaseModel):
    """Base of every builder's parameters: frozen, unknown keys are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True,
                              defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic takes ``true`` for 1 and ``false`` for 0: ``hosts = true`` built one host."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if bool not in (typing.get_args(annotation) or (annotation,)):
                raise ValueError("a boolean is not a count or a number")
        return value


Builder = Callable[[Any, LinkConfig], Topology]
Bisection = Callable[[Any, LinkConfig], float | None]
Counts = Callable[[Any, LinkConfig], tuple[int, int, int]]


@dataclass(frozen=True)
class TopologyKind:
    """A topology builder declared by ``@builder``: its name, parameters, build function,
    analytic bisection (None: not known), the first sentence of its docstring and, where the
    parameters give them, its (hosts, switches, links) counts, so that a topology too large for
    memory is refused before any of it is built."""

    name: str
    params: type[TopologyParams]
    build: Builder
    bisection_gbps: Bisection | None
    summary: str
    counts: Counts | None = None

    def validated(self, params: dict[str, Any], where: str = "topology") -> TopologyParams:
        """Validate ``params``; errors name parameter, value and valid range."""
        try:
            return self.params(**params)
        except ValidationError as exc:
            raise _param_error(self, exc, where) from None

    def refuse_reserved(self, params: dict[str, Any], where: str = "topology") -> None:
        """A parameter named like one of ``build_topology``'s own arguments (``link``, ``where``,
        ``name``) that this kind does not take: refused as any unknown parameter is, before it
        reaches ``build_topology(name, **params)`` as a keyword (a TypeError there)."""
        for key in ("link", "where", "name"):
            if key in params and key not in self.params.model_fields:
                raise TopologyError(
                    f"{where}.{key} = {params[key]!r}: unknown parameter {key!r} of kind = "
                    f"{self.name!r}; valid parameters: {', '.join(self.params.model_fields) or 'none'}")

    def make(self, *, link: LinkConfig | None = None, where: str = "topology",
             **params: Any) -> Topology:
        """Build, validate and label the topology (``kind`` and ``params`` recorded on it)."""
        p = self.validated(params, where)
        link = link or LinkConfig()
        self._check_size(p, link, params, where)
        try:
            topo = self.build(p, link)
            topo.validate()
        except ParamError as exc:
            raise TopologyError(f"{where}.{exc.param} = {exc.value!r}: {exc.why}") from None
        except TopologyError as exc:
            raise TopologyError(f"{where} (kind = {self.name!r}): {exc}") from None
        except ConfigError as exc:   # a config the builder made from its parameters
            text = " ".join(str(exc).removeprefix("invalid configuration:").split())
            raise TopologyError(f"{where} (kind = {self.name!r}): {text}") from None
        topo.kind = self.name
        topo.params = {k: v for k, v in p.model_dump().items() if _plain(v)}
        topo.params["link"] = link
        return topo

    def _check_size(self, p: TopologyParams, link: LinkConfig, given: dict[str, Any],
                    where: str) -> None:
        """Refuse, before building, a topology whose counts (from its parameters) need more
        memory than the limit; parameters the counts reject are left to the builder's errors."""
        if self.counts is None:
            return
        try:
            counts = self.counts(p, link)
        except ParamError:
            return
        shown = ", ".join(f"{k} = {v!r}" for k, v in given.items() if k != "link")
        try:
            check_topology_size(*counts, what=f"{where}.kind = {self.name!r}"
                                + (f" ({shown})" if shown else ""))
        except ConfigError as exc:
            raise TopologyError(str(exc)) from None

    def bisection_of(self, topo: Topology) -> float | None:
        """The analytic bisection bandwidth of ``topo``, built by this kind (None when not
        known)."""
        if self.bisection_gbps is None:
            return None
        fields = {k: v for k, v in topo.params.items() if k in self.params.model_fields}
        return self.bisection_gbps(self.params(**fields), topo.params.get("link") or LinkConfig())


def builder(name: str, params: type[TopologyParams], bisection_gbps: Bisection | None = None,
            counts: Counts | None = None) -> Callable[[Builder], TopologyKind]:
    """Declare the decorated function as topology kind ``name`` (its module's attribute becomes
    the ``TopologyKind``; ``spin.topologies.catalog`` lists it in ``TOPOLOGIES``)."""
    def deco(fn: Builder) -> TopologyKind:
        return TopologyKind(name, params, fn, bisection_gbps, first_sentence(fn.__doc__),
                            counts)
    return deco


def first_sentence(doc: str | None) -> str:
    """A docstring's first sentence, on one line, for listings."""
    text = " ".join((doc or "").split())
    return text.split(". ")[0].rstrip(".") + "." if text else ""


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
            why = (f"unknown parameter {name!r} of kind = {spec.name!r}"
                   f"{did_you_mean(name, spec.params.model_fields)}; valid parameters: "
                   f"{', '.join(spec.params.model_fields) or 'none'}")
        elif err["type"] == "missing":
            if misspelt_key(name, value or {}, spec.params.model_fields) is not None:
                continue   # the misspelt key's own line names the mistake
            why, value = f"required by kind = {spec.name!r}", None
        else:
            why = f"{err['msg'].removeprefix('Value error, ')}; valid: {valid_range(spec.params, name)}"
        line = f"{where}.{name} = {value!r}: {why}"
        if line not in lines:
            lines.append(line)
    return TopologyError("\n".join(lines))


class ParamError(TopologyError):
    """Raised by a builder for a parameter value the model cannot rule out on its own (an odd
    k, ratios that do not divide); its kind prefixes the parameter's path."""

    def __init__(self, param: str, value: Any, why: str):
        super().__init__(f"{param} = {value!r}: {why}")
        self.param, self.value, self.why = param, value, why


def link_config(link: LinkConfig, rate_gbps: int | None = None,
                latency_ns: float | None = None) -> LinkConfig:
    """``link`` with a tier's own rate and latency where given."""
    over = {k: v for k, v in (("rate_gbps", rate_gbps), ("latency_ns", latency_ns))
            if v is not None}
    return LinkConfig.make(**{**link.model_dump(), **over}) if over else link
