"""PNG pictures of runs (``spin run --plots DIR``, ``spin lb --plots DIR``): the CDF of flow
completion times, one curve per scheme (or run), and per run the utilisation of each tier of
links over time (mean and busiest direction), from the run's link samples.

matplotlib is an optional dependency (``pip install 'spin-emulator[plots]'``), imported only
here and only when pictures are asked for.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import SpinError
from ..units import US
from .metrics import utilisation_series

# Sampling interval used when pictures are asked for and the scenario samples nothing.
DEFAULT_SAMPLE_NS = 1000.0


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise SpinError("pictures need matplotlib, which is not installed: pip install "
                        "'spin-emulator[plots]' (or 'matplotlib>=3.7')") from None
    matplotlib.use("Agg")            # files only, no display needed
    import matplotlib.pyplot as plt
    return plt


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)


def fct_cdf_figure(fcts_ps: dict[str, list[int]], title: str = ""):
    """The figure of ``fct_cdf``: one step curve per label through every flow completion time
    (x, µs) at the fraction of flows done by then (y); its lines carry exactly those points."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values in fcts_ps.items():
        v = sorted(values)
        if not v:
            continue
        ax.step([x / US for x in v], [(i + 1) / len(v) for i in range(len(v))], where="post",
                label=f"{label} ({len(v)} flows)")
    ax.set_xlabel("flow completion time (µs, virtual)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(title or "flow completion times")
    fig.tight_layout()
    return fig


def fct_cdf(path: Path, fcts_ps: dict[str, list[int]], title: str = "") -> Path:
    """One CDF curve per label of its flow completion times, written to ``path``."""
    return _save(fct_cdf_figure(fcts_ps, title), path)


def utilisation_figure(result, interval_ps: int, title: str = ""):
    """The figure of ``utilisation_over_time``: per tier of links, the mean utilisation (solid)
    and the busiest direction (dashed) of ``utilisation_series``, drawn as steps (each value
    holds over the sample interval that ends at its instant, idle intervals at zero)."""
    plt = require_matplotlib()
    series = utilisation_series(result, interval_ps)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (tier, (times, mean, peak)) in enumerate(series.items()):
        if not times:
            continue
        colour = f"C{i}"
        x = [t / US for t in times]
        ax.plot(x, mean, color=colour, drawstyle="steps-pre", label=f"{tier} mean")
        ax.plot(x, peak, color=colour, linestyle="--", alpha=0.6, drawstyle="steps-pre",
                label=f"{tier} busiest")
    ax.set_xlabel("time (µs, virtual)")
    ax.set_ylabel(f"link utilisation per {interval_ps / US:g} µs")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    ax.set_title(title or "link utilisation over time")
    fig.tight_layout()
    return fig


def utilisation_over_time(path: Path, result, interval_ps: int, title: str = "") -> Path:
    """Per tier of links: mean utilisation (solid) and busiest direction (dashed) per sample
    interval, written to ``path``."""
    return _save(utilisation_figure(result, interval_ps, title), path)


def _save(fig, path: Path) -> Path:
    plt = require_matplotlib()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(directory, runs: dict[str, tuple], interval_ps: int) -> list[Path]:
    """``runs``: label -> (RunResult, completion times in ps). Writes ``fct_cdf.png`` and one
    ``link_utilisation_<label>.png`` per run; returns the paths written."""
    require_matplotlib()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [fct_cdf(out / "fct_cdf.png", {k: v[1] for k, v in runs.items()})]
    for label, (result, _) in runs.items():
        if not result.link_samples:
            raise SpinError(f"{label}: the run has no link samples to plot (set [engine] "
                            f"queue_sample_ns > 0)")
        paths.append(utilisation_over_time(out / f"link_utilisation_{_safe(label)}.png", result,
                                           interval_ps, f"link utilisation: {label}"))
    return paths
