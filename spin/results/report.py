"""Plain-text tables of results. Every figure carries its unit (in the column header or the cell).

Pure formatting: functions take structured results (``RunResult``, ``OffloadComparison``, bench
figures) and return strings; nothing here runs a simulation or imports what does (the demo's
table, which also needs the collectives' tables, is ``spin.tools.demo.demo_table``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

from ..units import US


def shown(text: str) -> str:
    """``text`` with control and format characters escaped: names and labels come from the
    scenario, and an escape sequence or a newline in one must not drive the terminal or break
    a table."""
    return text if text.isprintable() else "".join(
        c if c.isprintable() else repr(c)[1:-1] for c in text)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """Left-align the first column, right-align the others."""
    rows = [[shown(str(c)) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [title] if title else []
    out += [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def us(ps: float) -> str:
    """Picoseconds as microseconds with 3 decimals (nanosecond resolution)."""
    return f"{ps / US:,.3f}"


def count(n: float) -> str:
    """An integer count with thousands separators."""
    return f"{int(n):,}"


def ratio(x: float) -> str:
    """A factor, as ``3.91x``."""
    return f"{x:.2f}x"


# --- offload comparison --------------------------------------------------------------------------
COMPARISON_ROWS = (
    ("completion time (µs)", "completion_ps", us),
    ("host CPU time (µs)", "host_cpu_ps", us),
    ("PCIe bytes (B)", "pcie_bytes", count),
    ("link bytes (B)", "link_bytes", count),
    ("HPU busy (µs)", "hpu_busy_ps", us),
    ("drops (frames)", "drops", count),
)


def comparison_table(cmp, extra_rows: Sequence[Sequence[Any]] = ()) -> str:
    """Side-by-side table of a ``spin.results.compare.OffloadComparison``; the gain column is how
    many times lower the offload's figure is (baseline / offload)."""
    rows = []
    for label, metric, fmt in COMPARISON_ROWS:
        bv, ov = getattr(cmp.baseline, metric), getattr(cmp.offload, metric)
        rows.append([label, fmt(bv), fmt(ov), ratio(bv / ov) if (ov and bv) else "-"])
    rows += [list(r) for r in extra_rows]
    rows.append(["speedup (x)", "1.00x", ratio(cmp.speedup), ""])
    text = table(["", "host baseline", "NIC offload", "offload gain"], rows, cmp.title or None)
    b, o = cmp.baseline.measure, cmp.offload.measure
    if b or o:   # what "completion" means here: which marks, on which host
        text += (f"\ncompletion measured: {b}" if b == o else
                 f"\ncompletion measured: baseline {b or '?'}; offload {o or '?'}")
    return text


# --- spin run -------------------------------------------------------------------------------------
LINK_ROWS_SHOWN = 24   # rows of per-flow and per-link tables before they summarise


def _percentile(sorted_vals: list[int], q: float) -> int:
    if not sorted_vals:
        return 0
    k = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


def _host_names(result) -> dict[int, str]:
    """Node id -> the host's name in the topology, for results that carry names."""
    return {h.node: h.name for h in result.hosts if h.name}


def message_table(result) -> str:
    """Per (src, dst, qp) flow: message count, bytes, completion time stats."""
    groups: dict[tuple[int, int, int], list] = defaultdict(list)
    names = _host_names(result)
    for m in result.messages:
        groups[(m.src, m.dst, m.qp)].append(m)
    rows = []
    for (src, dst, qp), ms in sorted(groups.items()):
        comp = sorted(m.completion_ps for m in ms if m.completion_ps is not None)
        nic = sum(1 for m in ms if m.handled_by_nic)
        stats = ([us(min(comp)), us(sum(comp) / len(comp)), us(_percentile(comp, 0.99)),
                  us(max(comp))] if comp else ["-"] * 4)
        rows.append([f"{names.get(src, src)}->{names.get(dst, dst)} qp{qp}", count(len(ms)), count(sum(m.bytes for m in ms)),
                     count(nic)] + stats + [(src, dst, qp)])
    if not rows:
        return "messages: none delivered"
    title = "messages (completion = delivery or NIC handling - post)"
    summary = ""
    if len(rows) > LINK_ROWS_SHOWN:
        every = sorted(m.completion_ps for m in result.messages if m.completion_ps is not None)
        rows = sorted(rows, key=lambda r: -max((m.completion_ps or 0) for m in groups[r[-1]]))
        rows = rows[:LINK_ROWS_SHOWN]
        title += f": the {LINK_ROWS_SHOWN} slowest of {len(groups)} flows"
        if every:
            summary = (f"\n  all {count(len(every))} messages: mean {us(sum(every) / len(every))} µs,"
                       f" p50 {us(_percentile(every, 0.5))} µs, p99 {us(_percentile(every, 0.99))}"
                       f" µs, max {us(every[-1])} µs")
    return table(["flow", "messages", "bytes (B)", "NIC-handled", "min (µs)", "mean (µs)",
                  "p99 (µs)", "max (µs)"], [r[:-1] for r in rows], title) + summary


def link_table(result, max_rows: int = LINK_ROWS_SHOWN) -> str:
    """Per link direction: traffic, utilisation and queue figures over the run. Large fabrics
    show the busiest directions and a fabric-wide summary line."""
    dur = result.end_time_ps
    used = [l for l in result.links if l.tx_frames or l.drops]
    ranked = sorted(used, key=lambda l: (-l.busy_ps, l.link, l.from_device))
    shown = ranked if len(ranked) <= max_rows else ranked[:max_rows]
    rows = [[f"{l.link}: {l.from_device}->{l.to_device}", count(l.tx_frames), count(l.tx_bytes),
             f"{100 * l.utilisation(dur):.1f}", count(round(l.mean_queue_bytes(dur))),
             count(l.max_queue_bytes), count(l.ecn_marks), count(l.trims),
             count(l.pauses_sent), count(l.drops)] for l in shown]
    title = "links" if len(shown) == len(ranked) else \
        f"links: the {len(shown)} busiest of {len(ranked)} directions that carried traffic"
    out = table(["link (direction)", "frames", "bytes (B)", "util (%)", "mean queue (B)",
                 "max queue (B)", "ECN marks", "trims", "pauses sent", "drops (frames)"],
                rows, title)
    if used:
        util = [l.utilisation(dur) for l in used]
        mean_bytes = sum(l.tx_bytes for l in used) / len(used)
        out += (f"\n  {len(used)} directions used of {len(result.links)}: utilisation mean "
                f"{100 * sum(util) / len(util):.1f} %, max {100 * max(util):.1f} %; bytes "
                f"max/mean {max(l.tx_bytes for l in used) / mean_bytes:.2f}; max queue "
                f"{count(max(l.max_queue_bytes for l in used))} B")
    return out


def tier_table(result) -> str:
    """Load per tier of links: how evenly the fabric carried the traffic."""
    rows = [[t.tier, t.directions, f"{t.mean_utilisation:.3f}", f"{t.max_utilisation:.3f}",
             f"{t.imbalance:.2f}", count(t.max_queue_bytes)] for t in result.tier_loads()]
    return table(["tier", "directions", "mean util", "max util", "imbalance (max/mean)",
                  "max queue (B)"], rows, "link tiers")


def switch_table(result) -> str:
    """Switches whose handlers ran or that dropped frames."""
    rows = []
    for sw in result.switches:
        c = sw.handler_calls
        if not (c.header or c.payload or c.completion or sw.drops):
            continue
        rows.append([sw.name, f"{count(c.header)}/{count(c.payload)}/{count(c.completion)}",
                     us(sw.hpu_busy_ps), ", ".join(f"{k} {count(v)}" for k, v in
                                                   sorted(sw.drops.items())) or "-"])
    if not rows:
        return "switches: no handler ran, nothing dropped"
    return table(["switch", "handlers hdr/pl/cpl (calls)", "HPU busy (µs)", "drops (frames)"],
                 rows, "switches")


def nic_table(result) -> str:
    """Per node: DMA bytes, HPU busy time, handler calls, host CPU time, messages, finished."""
    hosts = {h.node: h for h in result.hosts}
    rows = []
    for n in result.nics:
        h = hosts.get(n.node)
        c = n.handler_calls
        calls = "/".join(count(k) for k in (c.header, c.payload, c.completion))
        rows.append([n.name or f"node {n.node}", count(n.dma_write_bytes), count(n.dma_read_bytes),
                     us(n.hpu_busy_ps), calls,
                     us(h.cpu_busy_ps if h else 0), count(h.messages_received if h else 0),
                     "yes" if h and h.finished else "NO"])
    return table(["NIC/host", "DMA write (B)", "DMA read (B)", "HPU busy (µs)",
                  "handlers hdr/pl/cpl (calls)", "host CPU (µs)", "received (msgs)", "finished"],
                 rows, "NICs and hosts")


_TRANSPORT_COLUMNS = (("retransmissions", "retx"), ("timeouts", "RTOs"), ("acks_sent", "ACKs"),
                      ("naks_sent", "NAKs"), ("cnps_sent", "CNPs"),
                      ("out_of_order", "out of order"), ("reorder_degree", "reorder (PSNs)"),
                      ("duplicates", "dups"), ("min_rate_mbps", "min rate (Mb/s)"))


def transport_table(result) -> str:
    """Per NIC running a reliable transport: what it resent, acknowledged and saw reordered
    ("" when no NIC acknowledged anything: transport "none")."""
    rows = [[n.name or f"node {n.node}"] + [count(getattr(n, f)) for f, _ in _TRANSPORT_COLUMNS]
            for n in result.nics if n.acks_sent or n.acks_received or n.retransmissions]
    if not rows:
        return ""
    return table(["NIC"] + [h for _, h in _TRANSPORT_COLUMNS], rows, "transport")


def run_summary(result, name: str = "") -> str:
    """Summary of a ``RunResult``: totals, messages, links, NICs/hosts, drops, marks."""
    tot = result.totals()
    head = [f"scenario {shown(name)}" if name else "scenario",
            f"  end time: {us(result.end_time_ps)} µs (virtual)",
            f"  events: {count(result.events)} ({count(result.packet_events)} packet events)",
            f"  totals: link {count(tot.link_bytes)} B, PCIe/DMA {count(tot.pcie_bytes)} B, "
            f"HPU busy {us(tot.hpu_busy_ps)} µs, host CPU {us(tot.host_cpu_ps)} µs, "
            f"drops {count(tot.drops)} frames"]
    wall = getattr(result, "wall", None) or {}
    if wall.get("seconds"):
        head.append(f"  wall: {wall['seconds']:.3f} s, {wall.get('events_per_s', 0):,.0f} events/s "
                    f"(wall clock, not deterministic)")
    parts = ["\n".join(head), message_table(result), link_table(result), tier_table(result),
             switch_table(result), nic_table(result)]
    if transport_table(result):
        parts.append(transport_table(result))
    if result.drops:
        parts.append(table(["drop reason", "frames"],
                           [[k, count(v)] for k, v in sorted(result.drops.items())], "drops"))
    else:
        parts.append("drops: none")
    if result.unlogged:
        parts.append(result.unlogged_note())
    if result.marks:
        parts.append(mark_table(result))
    return "\n\n".join(parts)


def mark_table(result) -> str:
    """Every mark by host while they fit a screen; beyond, one row per label (its hosts, first
    and last time), and beyond that the first and last labels (every mark is in --json)."""
    n_marks = sum(len(per) for per in result.marks.values())
    if n_marks <= LINK_ROWS_SHOWN:
        names = _host_names(result)     # once: host_name per row searched every host
        rows = [[label, names.get(node, f"node {node}"), us(t)]
                for label, per in result.marks.items() for node, t in sorted(per.items())]
        return table(["mark", "host", "time (µs)"], rows, "marks")
    rows = [[label, count(len(per)), us(min(per.values())), us(max(per.values()))]
            for label, per in result.marks.items() if per]
    title = f"marks ({count(n_marks)}, per label)"
    if len(rows) > LINK_ROWS_SHOWN:
        half = LINK_ROWS_SHOWN // 2
        title = (f"marks ({count(n_marks)}, per label): the first and last {half} of "
                 f"{count(len(rows))} labels (every mark: --json)")
        rows = rows[:half] + [["...", "", "", ""]] + rows[-half:]
    return table(["mark", "hosts", "first (µs)", "last (µs)"], rows, title)


# --- bench ----------------------------------------------------------------------------------------
def bench_lines(figures: list[dict[str, Any]]) -> str:
    """Figures as ``name  value unit  [target ...]`` lines."""
    rows = []
    for f in figures:
        v = f["value"]
        if v is None:
            val = "skipped"
        elif isinstance(v, float) and abs(v) < 100:
            val = f"{v:,.2f} {f['unit']}"
        else:
            val = f"{v:,.0f} {f['unit']}"
        target = f.get("target", "")
        if target and v is not None:
            target = f"target {target}: {'met' if f.get('met') else 'NOT met'}"
        elif target:
            target = f"target {target}"
        rows.append([f["name"], val, target + (f"  ({f['note']})" if f.get("note") else "")])
    return table(["figure", "value", "target"], rows)
