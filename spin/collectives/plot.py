"""``spin allreduce --plot FILE``: the table as a figure (time, algbw and bytes on the wire per
size and algorithm). matplotlib is an optional dependency (``pip install
'spin-emulator[plots]'``), imported only when a plot is asked for."""
from __future__ import annotations

from ..errors import ConfigError


def require_matplotlib():
    """The pyplot module (non-interactive backend), or a ConfigError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("--plot needs matplotlib, which is not installed: pip install "
                          "'spin-emulator[plots]' (or pip install 'matplotlib>=3.7')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


# (row key, axis label, scale): the panels of the figure, left to right
PANELS = (("time_ps", "time (µs)", 1e-6), ("algbw_gbytes_per_s", "algbw (GB/s)", 1.0),
          ("link_bytes", "bytes on the wire (B)", 1.0))


def plot_allreduce(rows: list[dict], path: str, title: str) -> None:
    """Three panels over the message size: time (µs), algbw (GB/s), link bytes (B), one line
    (or marker, for a single size) per algorithm. Rows from ``measure.with_speedup``."""
    plt = require_matplotlib()
    fig = allreduce_figure(rows, title)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def allreduce_figure(rows: list[dict], title: str):
    """The figure of ``plot_allreduce``: a panel per entry of ``PANELS``, a line per
    algorithm labelled with its name, through (bytes per rank, the row's figure x scale)."""
    plt = require_matplotlib()
    names = list(dict.fromkeys(r["algorithm"] for r in rows))
    panels = PANELS
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6),
                             constrained_layout=True)
    for ax, (key, label, scale) in zip(axes, panels):
        for name in names:
            pts = sorted((r["nbytes"], r[key] * scale) for r in rows if r["algorithm"] == name)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log", base=2)
        if key != "algbw_gbytes_per_s":
            ax.set_yscale("log")
        ax.set_xlabel("bytes per rank (B)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return fig
