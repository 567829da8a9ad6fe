"""One registry type for every set of named things a user picks by name: topologies, workloads,
allreduce algorithms, transports, load-balancing schemes.

A ``Registry`` is built once from a declaration tuple and never changes, so a name is written
once (in its entry) and everything else — config validation, CLI choices and help, the scenario
schema's text, error messages — reads it from there. Lookups that fail raise ``ConfigError``
naming where the name came from (a field or option), the value and the valid choices, in
declaration order (the order every listing shows).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Protocol, TypeVar

from .errors import ConfigError
from .suggest import did_you_mean


class Named(Protocol):
    """What an entry needs: its name."""

    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


@dataclass(frozen=True)
class Option:
    """A plain named setting with a one-line summary (a transport, an entropy mode), for
    registries whose entries carry nothing else."""

    name: str
    summary: str


@dataclass(frozen=True)
class Registry(Generic[T]):
    """Entries of one kind by name, in declaration order. ``name`` says what is registered
    ("topology", "transport") for messages; ``aliases`` are other names of some entries
    (accepted by ``get``, not listed by ``names``); ``error`` is the ConfigError subclass
    ``get`` raises (``TopologyError`` for topologies)."""

    name: str
    entries: tuple[T, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)
    error: type[ConfigError] = ConfigError
    others: str = ""      # what else is valid besides the names ("or ... by import path")
    _by_name: Mapping[str, T] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        by_name: dict[str, T] = {}
        for entry in self.entries:
            if not isinstance(entry.name, str) or not entry.name:
                raise ConfigError(f"{self.name} {entry!r}: a name must be a non-empty string")
            if entry.name in by_name:
                raise ConfigError(f"{self.name} {entry.name!r} is declared twice")
            by_name[entry.name] = entry
        for alias, target in self.aliases.items():
            if alias in by_name:
                raise ConfigError(f"{self.name} alias {alias!r} is also the name of a "
                                  f"{self.name}")
            if target not in by_name:
                raise ConfigError(f"{self.name} alias {alias!r} -> {target!r}: no such "
                                  f"{self.name}; valid choices: {', '.join(by_name)}")
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    def get(self, name: Any, where: str) -> T:
        """The entry ``name`` (or the one it is an alias of); a ConfigError naming ``where``,
        the value and the valid choices otherwise."""
        key = self.aliases.get(name, name) if isinstance(name, str) else name
        try:
            return self._by_name[key]
        except (KeyError, TypeError):
            raise self.error(f"{where} = {name!r}: {self.unknown_text()}"
                             f"{did_you_mean(name, self.names())}") from None

    def unknown_text(self) -> str:
        """The tail of an unknown-name message: what is unknown and the valid choices (for
        errors that are not raised here, such as pydantic's)."""
        text = f"unknown {self.name}; valid choices: {', '.join(self.names())}"
        if self.others:
            text += f", {self.others}"
        if self.aliases:
            text += f" (aliases: {', '.join(f'{a}={t}' for a, t in self.aliases.items())})"
        return text

    def names(self) -> tuple[str, ...]:
        """Every entry's name, in declaration order."""
        return tuple(self._by_name)

    def check(self, name: Any) -> str:
        """``name`` (an alias resolved) for a pydantic field validator, or a pydantic error
        whose message is ``unknown_text()``: the model's own error adds field and value."""
        if name not in self:
            from pydantic_core import PydanticCustomError   # not at import: `spin --help`
            raise PydanticCustomError("unknown_name", "{text}", {
                "text": self.unknown_text() + did_you_mean(name, self.names())})
        return self.aliases.get(name, name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.aliases.get(name, name) in self._by_name

    def __iter__(self) -> Iterator[T]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

