"""What a topology costs to buy and to power: switches priced by radix, NIC ports, and every link
by its cable class (on-board trace, copper DAC, active optical cable, or two transceivers and a
fibre), so topologies can be set side by side by cost per unit of bandwidth, as the HammingMesh
paper does (Hoefler et al., "HammingMesh: A Network Topology for Large-Scale Deep Learning",
SC22).

The cable class of a link follows from its kind (the tier its builder gave it):

* ``internal`` (a NIC to its own accelerator router): on the package, no cable, no port.
* ``mesh`` (HammingMesh board links) and ``nvlink`` (a GPU to its server's NVSwitch): traces
  on the board, ``pcb``.
* ``host`` (a host to its first switch): in the rack, a copper DAC (<= 3 m).
* first switch tier (``edge-agg``, ``leaf-spine``, ``row``, ``column``, ``plane``,
  ``scale-out``) and ``rail`` (a GPU's NIC to its rail leaf, racks away in a SuperPOD): across
  a row of racks, an active optical cable (<= 30 m).
* higher tiers (``agg-core``, ``spine``, ``spine-superspine``, ``spine-core``,
  ``*-leaf-spine`` of row/column/plane networks): across the hall, two transceivers and a
  fibre (<= 500 m).

``CostModel.link_classes`` overrides any of these by kind; a kind it does not know is priced
as ``default_link_class``.

Prices are list-price-class figures for 400 Gb/s parts (the defaults below, all configurable):
neither the HammingMesh paper's cost table nor a public price list was reachable, so they are
the model's stated assumptions, not the paper's numbers. The cable and optics powers come from
datasheets (``docs/reference/topology-cost.md`` cites each). A port of a switch is priced as
its share of the smallest radix class that holds the switch's ports (a 20-port switch is
bought as a 32-port one).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field, model_validator

from ..config import _Frozen
from ..errors import ConfigError
from ..suggest import close_match, did_you_mean
from ..topology import Topology
from .inventory import ACCELERATOR, INTERNAL, bisection_gbps

LinkClass = Literal["none", "pcb", "dac", "aoc", "optical"]
LINK_CLASSES: tuple[str, ...] = ("none", "pcb", "dac", "aoc", "optical")

DEFAULT_LINK_CLASSES: dict[str, str] = {
    "internal": "none", "mesh": "pcb", "host": "dac",
    "edge-agg": "aoc", "leaf-spine": "aoc", "row": "aoc", "column": "aoc", "plane": "aoc",
    "scale-out": "aoc",
    "agg-core": "optical", "spine": "optical", "row-leaf-spine": "optical",
    "column-leaf-spine": "optical", "plane-leaf-spine": "optical",
    "nvlink": "pcb", "rail": "aoc", "spine-superspine": "optical", "spine-core": "optical",
}


MAX_PART_FIGURE = 1e12   # USD or W of one part: far above any, and sums of millions stay finite


class CostModel(_Frozen):
    """Prices (USD) and powers (W) of the parts a fabric is built from."""

    # Switch price by radix (ports at the link rate): a 64-port 400G switch of the 25.6 Tb/s
    # class at about $40k, smaller radices at a similar price per port.
    switch_usd_by_radix: dict[int, float] = Field(
        default_factory=lambda: {16: 12_000.0, 32: 22_000.0, 64: 40_000.0, 128: 90_000.0})
    switch_watts_per_port: float = Field(8.0, ge=0)      # ~500 W for a 64-port 25.6T switch
    nic_port_usd: float = Field(1_500.0, ge=0)           # a 400G NIC port
    nic_port_watts: float = Field(20.0, ge=0)
    dac_usd: float = Field(150.0, ge=0)                  # passive copper, <= 3 m, <= 0.1 W
    aoc_usd: float = Field(900.0, ge=0)                  # active optical cable, <= 30 m
    aoc_watts: float = Field(12.0, ge=0)                 # both ends, ~6 W each (NVIDIA)
    transceiver_usd: float = Field(1_000.0, ge=0)        # 400G DR4-class module
    transceiver_watts: float = Field(10.0, ge=0)         # 400G modules: 8-12 W maximum
    fibre_usd: float = Field(100.0, ge=0)                # <= 500 m of fibre, patching
    pcb_link_usd: float = Field(0.0, ge=0)               # board traces come with the board
    link_classes: dict[str, LinkClass] = Field(default_factory=dict)
    default_link_class: LinkClass = "aoc"

    @model_validator(mode="before")
    @classmethod
    def _finite(cls, data):
        """Prices and powers are finite and at most MAX_PART_FIGURE: ``inf`` printed "$infM",
        and ``1e308`` overflowed the sums to inf."""
        if isinstance(data, dict):
            for name, value in data.items():
                values = value.values() if name == "switch_usd_by_radix" and \
                    isinstance(value, dict) else [value]
                for v in values:
                    if isinstance(v, (int, float)) and not isinstance(v, bool) \
                            and not -MAX_PART_FIGURE <= v <= MAX_PART_FIGURE:
                        raise ValueError(f"{name} = {v}: expected a finite figure of at most "
                                         f"{MAX_PART_FIGURE:.0e} (USD or W per part)")
        return data

    @model_validator(mode="after")
    def _radices(self) -> CostModel:
        if not self.switch_usd_by_radix:
            raise ValueError("switch_usd_by_radix must price at least one radix")
        for radix, usd in self.switch_usd_by_radix.items():
            if radix < 2 or usd < 0:
                raise ValueError(f"switch_usd_by_radix {{{radix}: {usd}}}: need radix >= 2 "
                                 f"and a price >= 0")
        return self

    def link_class(self, kind: str) -> str:
        """The cable class of a link of ``kind``."""
        if kind in self.link_classes:
            return self.link_classes[kind]
        return DEFAULT_LINK_CLASSES.get(kind, self.default_link_class)

    def switch_usd(self, ports: int) -> float:
        """Price of a switch with ``ports`` ports in use: its share of the smallest radix class
        that holds them (several switches of the largest class beyond it)."""
        radices = sorted(self.switch_usd_by_radix)
        fit = next((r for r in radices if r >= ports), radices[-1])
        return self.switch_usd_by_radix[fit] * ports / fit

    def link_usd_watts(self, link_class: str) -> tuple[float, float]:
        """(USD, W) of one link of ``link_class`` (cable or modules, not the ports)."""
        return {"none": (0.0, 0.0), "pcb": (self.pcb_link_usd, 0.0), "dac": (self.dac_usd, 0.0),
                "aoc": (self.aoc_usd, self.aoc_watts),
                "optical": (2 * self.transceiver_usd + self.fibre_usd,
                            2 * self.transceiver_watts)}[link_class]


@dataclass(frozen=True)
class Cost:
    """A topology's bill of materials and power; USD and W."""

    switches_usd: float
    nic_ports_usd: float
    links_usd: float
    watts: float
    nic_ports: int
    links_by_class: tuple[tuple[str, int], ...]
    bisection_gbps: float

    @property
    def total_usd(self) -> float:
        return self.switches_usd + self.nic_ports_usd + self.links_usd

    @property
    def usd_per_bisection_gbps(self) -> float:
        """USD per Gb/s of bisection bandwidth (inf without a bisection)."""
        return self.total_usd / self.bisection_gbps if self.bisection_gbps > 0 else float("inf")

    def to_dict(self) -> dict:
        return {**asdict(self), "total_usd": self.total_usd,
                "usd_per_bisection_gbps": self.usd_per_bisection_gbps}


def topology_cost(topo: Topology, model: CostModel | None = None,
                  bisection: float | None = None) -> Cost:
    """Price ``topo`` with ``model`` (default CostModel()). NIC ports: every host linked to a
    switch directly, and every accelerator-router port on a link that leaves the package and
    the board (a network port of the accelerator). ``bisection`` (Gb/s) saves recomputing it."""
    model = model or CostModel()
    ports = topo.ports()
    switches_usd = watts = 0.0
    for s in topo.switches:
        used = [i for i, _ in ports[s] if topo.links[i].kind != INTERNAL]
        if topo.switch_role(s) == ACCELERATOR:
            continue
        switches_usd += model.switch_usd(len(used))
        watts += model.switch_watts_per_port * len(used)
    nic_ports = 0
    classes: Counter = Counter()
    links_usd = 0.0
    for link in topo.links:
        cls = model.link_class(link.kind or "host")
        classes[cls] += 1
        usd, w = model.link_usd_watts(cls)
        links_usd += usd
        watts += w
        for end in (link.a, link.b):
            host_port = end in topo.hosts and cls != "none"
            accelerator_port = end not in topo.hosts and cls not in ("none", "pcb") \
                and topo.switch_role(end) == ACCELERATOR
            if host_port or accelerator_port:
                nic_ports += 1
    watts += nic_ports * model.nic_port_watts
    return Cost(switches_usd=switches_usd, nic_ports_usd=nic_ports * model.nic_port_usd,
                links_usd=links_usd, watts=watts, nic_ports=nic_ports,
                links_by_class=tuple(sorted(classes.items())),
                bisection_gbps=bisection if bisection is not None else bisection_gbps(topo))


def load_cost_model(path: str | None) -> CostModel:
    """CostModel() updated by the TOML file at ``path`` (its keys are CostModel fields)."""
    if path is None:
        return CostModel()
    import tomllib
    from pathlib import Path
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"--cost {path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--cost {path}: not a UTF-8 text file ({exc.reason} at byte "
                          f"{exc.start})") from None
    except OSError as exc:   # a directory, no permission
        raise ConfigError(f"--cost {path}: cannot read it: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"--cost {path}: not TOML ({exc})") from None
    unknown = sorted(set(data) - set(CostModel.model_fields))
    if unknown:
        raise ConfigError(f"--cost {path}: unknown field {unknown[0]!r}"
                          f"{did_you_mean(unknown[0], CostModel.model_fields)}; valid fields: "
                          f"{', '.join(CostModel.model_fields)}")
    radices = data.get("switch_usd_by_radix")
    if isinstance(radices, dict):
        bad = [k for k in radices if not str(k).isdigit()]
        if bad:
            raise ConfigError(f"--cost {path}: switch_usd_by_radix key {bad[0]!r}: expected a "
                              f"port count such as 64")
        data["switch_usd_by_radix"] = {int(k): v for k, v in radices.items()}
    kinds = data.get("link_classes")
    if isinstance(kinds, dict):   # a misspelt kind would be priced as the default, silently
        for kind in kinds:
            match = close_match(kind, DEFAULT_LINK_CLASSES)
            if kind not in DEFAULT_LINK_CLASSES and match is not None:
                raise ConfigError(f"--cost {path}: link_classes key {kind!r} is no link kind "
                                  f"of the built-in topologies (did you mean {match!r}?)")
    for name, value in data.items():   # the model's own check, with the file's words
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            if isinstance(v, float) and not -MAX_PART_FIGURE <= v <= MAX_PART_FIGURE:
                raise ConfigError(f"--cost {path}: {name} = {v}: expected a finite figure of "
                                  f"at most {MAX_PART_FIGURE:.0e} (USD or W per part)")
    try:
        return CostModel.make(**data)
    except ConfigError as exc:
        text = " ".join(str(exc).removeprefix("invalid configuration:").lstrip(";").split())
        raise ConfigError(f"--cost {path}: {text}") from None
