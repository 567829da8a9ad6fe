"""Every picture spin draws shows what the run counted: the plotted points are checked against
the run's own counters (busy time per link direction, completion time per message, marks and
bytes of an allreduce), and idle stretches are drawn at zero, not bridged by a line."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

from spin.cli import main
from spin.collectives.measure import allreduce_scenario, evaluate, with_speedup
from spin.collectives.plot import PANELS, allreduce_figure
from spin.config import EngineConfig
from spin.loadbalancing import plots
from spin.loadbalancing.metrics import utilisation_series
from spin.results import RunResult
from spin.runs import run
from spin.simulation import Scenario
from spin.topology import Topology
from spin.units import US

INTERVAL_PS = 1_000_000            # 1 µs samples


def _bursts_with_a_gap() -> RunResult:
    """Two 64 KiB writes from h0 to h1, 20 µs of host compute between them."""
    sc = Scenario(Topology.star(2), engine=EngineConfig(queue_sample_ns=INTERVAL_PS / 1000))
    sc.host_program(0).send(1, 65536, qp=1).compute(20_000).send(1, 65536, qp=1)
    sc.host_program(1).wait_recv(qp=1, count=2)
    return sc.run()


def _busy_by_tier(result: RunResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for link in result.links:
        out[link.tier] = out.get(link.tier, 0) + link.busy_ps
    return out


def _directions(result: RunResult, tier: str) -> int:
    return sum(1 for link in result.links if link.tier == tier)


def test_idle_intervals_are_zero_and_the_series_add_up_to_the_busy_counters():
    result = _bursts_with_a_gap()
    series = utilisation_series(result, INTERVAL_PS)
    times, mean, peak = series["host"]
    assert times == [k * INTERVAL_PS for k in range(len(times))]      # the whole grid
    assert times[-1] >= max(t for t, *_ in result.link_samples)
    longest_idle = run_of_zeros = 0
    for value in mean:
        run_of_zeros = run_of_zeros + 1 if value == 0 else 0
        longest_idle = max(longest_idle, run_of_zeros)
    assert longest_idle >= 15                          # the 20 µs of compute, at zero
    assert max(peak) <= 1.0 and max(peak) > 0.9        # a 400 Gb/s link saturated by a write
    for tier, busy_ps in _busy_by_tier(result).items():
        _, mean, _ = series[tier]
        assert sum(mean) * _directions(result, tier) * INTERVAL_PS == pytest.approx(busy_ps)


def test_the_utilisation_plot_draws_the_series_as_steps():
    result = _bursts_with_a_gap()
    fig = plots.utilisation_figure(result, INTERVAL_PS)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    busy = _busy_by_tier(result)
    for tier, (times, mean, peak) in utilisation_series(result, INTERVAL_PS).items():
        drawn_mean, drawn_peak = lines[f"{tier} mean"], lines[f"{tier} busiest"]
        assert list(drawn_mean.get_xdata()) == [t / US for t in times]
        assert list(drawn_mean.get_ydata()) == mean and list(drawn_peak.get_ydata()) == peak
        assert drawn_mean.get_drawstyle() == "steps-pre"    # a value holds over its interval
        plotted_busy = sum(drawn_mean.get_ydata()) * _directions(result, tier) * INTERVAL_PS
        assert plotted_busy == pytest.approx(busy[tier])


def test_spin_run_plots_show_the_runs_counters(tmp_path, monkeypatch):
    """``spin run --plots`` on the switch example (traffic at 3-5 µs and 54-56 µs): both
    pictures against the JSON results of the same run."""
    figures = {}

    def keep(fig, path):
        figures[path.name] = fig
        return path
    monkeypatch.setattr(plots, "_save", keep)
    out = tmp_path / "r.json"
    assert main(["run", "examples/switch_handlers.toml", "--plots", str(tmp_path / "pics"),
                 "--json", str(out), "--quiet"]) == 0
    result = RunResult.from_dict(json.loads(out.read_text()))
    interval_ps = 1_000_000                            # plots.DEFAULT_SAMPLE_NS
    assert plots.DEFAULT_SAMPLE_NS * 1000 == interval_ps

    cdf = figures["fct_cdf.png"].axes[0].get_lines()
    assert len(cdf) == 1
    expected = sorted(m.completion_ps / US for m in result.messages if m.completion_ps is not None)
    assert list(cdf[0].get_xdata()) == expected
    assert cdf[0].get_ydata()[-1] == 1.0 and len(cdf[0].get_ydata()) == len(expected)

    lines = {line.get_label(): line for line in
             figures["link_utilisation_switch_handlers.png"].axes[0].get_lines()}
    for tier, busy_ps in _busy_by_tier(result).items():
        y = lines[f"{tier} mean"].get_ydata()
        assert sum(y) * _directions(result, tier) * interval_ps == pytest.approx(busy_ps)
        x = list(lines[f"{tier} mean"].get_xdata())
        assert x == [k * interval_ps / US for k in range(len(x))]
        idle = [v for t, v in zip(x, y) if 10 < t < 50]       # nothing was sent then
        assert idle and all(v == 0 for v in idle)


def test_the_allreduce_plot_draws_each_runs_time_and_bytes():
    rows, results = [], {}
    for name in ("ring", "rd"):
        for nbytes in (4096, 16384):
            sc, plan, inputs = allreduce_scenario(name, 4, nbytes // 4)
            result = run(sc, 1, read=plan.reads())
            results[(name, nbytes)] = (result, plan)
            rows.append(evaluate(result, plan, inputs))
    fig = allreduce_figure(with_speedup(rows), "t")
    for ax, (key, _label, scale) in zip(fig.axes, PANELS):
        for line in ax.get_lines():
            name = line.get_label()
            for nbytes, y in zip(line.get_xdata(), line.get_ydata()):
                result, plan = results[(name, int(nbytes))]
                time_ps = (max(result.mark(plan.end_mark, h) for h in plan.hosts)
                           - min(result.mark(plan.start_mark, h) for h in plan.hosts))
                counted = {"time_ps": time_ps, "link_bytes": sum(l.tx_bytes for l in
                                                                 result.links),
                           "algbw_gbytes_per_s": nbytes / time_ps * 1000}[key]
                assert y == pytest.approx(counted * scale)
    assert sorted(line.get_label() for line in fig.axes[0].get_lines()) == ["rd", "ring"]
