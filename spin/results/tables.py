"""A run's results as pandas DataFrames, for notebooks (``RunResult.tables()``).

pandas is an optional extra (``pip install spin-emulator[pandas]``): the emulator itself never
needs it, so it is imported only here, when tables are asked for. Columns are the fields of the
result records (times in ps, sizes in bytes) plus a few derived ones, flattened so every cell is
a scalar: ``handler_calls_header``, ``drops_<reason>``, ``utilisation``, ``completion_ps``, and
the hosts' names as the topology gave them (``name`` of nics and hosts, ``src_name`` and
``dst_name`` of messages, next to the node ids).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import MissingExtraError
from .records import HostStats, LinkStats, MessageRecord, NicStats, SwitchStats

if TYPE_CHECKING:
    import pandas as pd

    from .run_result import RunResult

EXTRA = "pandas"


def _pandas():
    try:
        import pandas
    except ImportError as exc:
        raise MissingExtraError(f"RunResult.tables() needs pandas, which is not installed: "
                                f"pip install 'spin-emulator[{EXTRA}]' (or pip install pandas)"
                                ) from exc
    return pandas


@dataclass(frozen=True)
class RunTables:
    """One DataFrame per kind of record; ``spans`` is None unless the run was traced."""

    messages: pd.DataFrame
    links: pd.DataFrame
    nics: pd.DataFrame
    hosts: pd.DataFrame
    switches: pd.DataFrame
    spans: pd.DataFrame | None = None


def _flat(record: Any, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in asdict(record).items():
        if isinstance(value, dict):
            row.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            row[key] = value
    row.update(extra)
    return row


def _frame(pd, rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A DataFrame with the record's columns even when there are no rows."""
    return pd.DataFrame(rows, columns=columns if not rows else None)


def run_tables(result: RunResult) -> RunTables:
    """``result`` as DataFrames (``RunResult.tables()``); raises ``MissingExtraError`` without
    pandas."""
    pd = _pandas()

    def cols(cls) -> list[str]:   # the flattened columns, for tables without rows
        out = []
        for name in cls.__dataclass_fields__:
            if name == "handler_calls":
                out += [f"handler_calls_{k}" for k in ("header", "payload", "completion")]
            elif name != "drops":
                out.append(name)
        return out

    duration = result.end_time_ps
    names = {h.node: h.name for h in result.hosts}
    messages = _frame(pd, [_flat(m, completion_ps=m.completion_ps, src_name=names.get(m.src, ""),
                                 dst_name=names.get(m.dst, "")) for m in result.messages],
                      cols(MessageRecord) + ["completion_ps", "src_name", "dst_name"])
    links = _frame(pd, [_flat(l, utilisation=l.utilisation(duration),
                              mean_queue_bytes=l.mean_queue_bytes(duration))
                        for l in result.links],
                   cols(LinkStats) + ["utilisation", "mean_queue_bytes"])
    nics = _frame(pd, [_flat(n, pcie_bytes=n.pcie_bytes) for n in result.nics],
                  cols(NicStats) + ["pcie_bytes"])
    hosts = _frame(pd, [_flat(h) for h in result.hosts], cols(HostStats))
    switches = _frame(pd, [_flat(s) for s in result.switches], cols(SwitchStats))
    drop_cols = [c for c in switches.columns if c.startswith("drops_")]
    if drop_cols:   # switches that never dropped for a reason have no key for it
        switches[drop_cols] = switches[drop_cols].fillna(0).astype("int64")
    spans = None
    if result.trace is not None:
        spans = pd.DataFrame(
            [{"category": s.category, "device": s.device, "track": s.track, "name": s.name,
              "start_ps": s.start_ps, "end_ps": s.end_ps, "duration_ps": s.duration_ps,
              "args": s.args} for s in result.trace.spans()],
            columns=["category", "device", "track", "name", "start_ps", "end_ps",
                     "duration_ps", "args"])
    return RunTables(messages, links, nics, hosts, switches, spans)
