"""The pictures of the plots gallery (docs/guides/plots.md), drawn from tiny runs when the docs
are built, so the gallery always shows what the current code draws and no PNG is committed.

Each entry is the figure function spin itself uses for ``spin run --plots``, ``spin lb --plots``
and ``spin allreduce --plot``, fed by a run of a few microseconds of virtual time (seconds of
wall time once the engine is compiled). ``tests/test_plot_data.py`` checks the data each figure
plots against the run's own counters.
"""
from __future__ import annotations

import io
from collections.abc import Callable

GALLERY_DIR = "guides/plots"
INTERVAL_PS = 1_000_000                  # 1 µs utilisation samples


def _bursts_with_a_gap():
    """Two 64 KiB writes h0 -> h1 on a 2-host star, 20 µs of host compute between them."""
    from spin import EngineConfig, Scenario, Topology
    sc = Scenario(Topology.star(2), engine=EngineConfig(queue_sample_ns=INTERVAL_PS / 1000))
    sc.host_program("h0").send("h1", 65536, qp=1).compute(20_000).send("h1", 65536, qp=1)
    sc.host_program("h1").wait_recv(qp=1, count=2)
    return sc.run(quiet=True)


def utilisation_gap():
    from spin.loadbalancing.plots import utilisation_figure
    return utilisation_figure(_bursts_with_a_gap(), INTERVAL_PS,
                              "link utilisation: two writes, 20 µs apart (star of 2)")


def _scheme_runs():
    from spin.loadbalancing.compare import add_workload, fabric_scenario, run_schemes
    sc = fabric_scenario("leaf_spine", {"leaves": 2, "spines": 2, "hosts_per_leaf": 4},
                         queue_sample_ns=INTERVAL_PS / 1000, transport="ue")
    workload = add_workload(sc, "permutation", message_bytes=131072, seed=3)
    return workload, run_schemes(sc, workload, ["ecmp", "spray"])


def fct_cdf():
    from spin.loadbalancing.plots import fct_cdf_figure
    from spin.workloads import flow_messages
    workload, runs = _scheme_runs()
    fcts = {r.scheme: [m.completion_ps for m in flow_messages(workload, r.result)] for r in runs}
    return fct_cdf_figure(fcts, "permutation of 128 KiB, leaf-spine of 8 hosts, UE transport")


def allreduce_sizes():
    from spin.collectives.measure import allreduce_scenario, evaluate, with_speedup
    from spin.collectives.plot import allreduce_figure
    from spin.runs import run
    rows = []
    for name in ("ring", "rd", "switch"):
        for nbytes in (4096, 16384, 65536):
            sc, plan, inputs = allreduce_scenario(name, 4, nbytes // 4)
            rows.append(evaluate(run(sc, 1, read=plan.reads()), plan, inputs))
    return allreduce_figure(with_speedup(rows), "allreduce on a star of 4 hosts, float32")


# file name -> figure builder, in the gallery's order
FIGURES: dict[str, Callable] = {
    "link_utilisation.png": utilisation_gap,
    "fct_cdf.png": fct_cdf,
    "allreduce.png": allreduce_sizes,
}


def png(name: str) -> bytes:
    """The PNG bytes of gallery figure ``name``."""
    from spin.loadbalancing.plots import require_matplotlib
    plt = require_matplotlib()
    fig = FIGURES[name]()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()
