"""Fidelity against htsim on its own 128-host scenario (``examples/htsim``: uet-htsim's k = 8
fat tree, 1:1, 100 Gb/s, 1 us links, a permutation of 2 MB flows), with the htsim preset: FCT
mean, p99 and max per scheme next to htsim's figures (``htsim_uec`` with NSCC and trimming, MTU
4150, seed 1; ``../shared/reference/loadbalancing-anchors.md``), printed side by side.

Virtual time is deterministic, so the figures are asserted exactly where they are within 15 %
of htsim's, and bounded where a known model difference keeps them outside (``GAPS``, each with
its cause); a change that moves a figure out of its band fails.

One run is one draw of the switches' hash seeds, and ECMP's tail moves by a third between draws
(htsim's own ECMP max ranges 632-1016 us over ``-seed`` 1..20). ``test_over_switch_seeds``
therefore compares like with like: each figure averaged over the switches' seeds 1..20 in spin
against htsim run with ``-seed`` 1..20 (``tests/data/htsim_uec_seeds.csv``, how it was made in
its header), within 15 %, for every scheme.
"""
from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from spin.loadbalancing.htsim_run import htsim_scenario, run_over_seeds, run_scheme
from spin.simulation import Simulation

HTSIM = Path(__file__).resolve().parents[1] / "examples" / "htsim"
HTSIM_SEEDS = Path(__file__).resolve().parent / "data" / "htsim_uec_seeds.csv"
SEEDS = 20

# htsim_uec on fat_tree_128_1os.topo + perm_128n_128c_2MB.cm: FCT mean / p99 / max, us
HTSIM_FCT_US = {"ecmp": (391.7, 711.1, 734.3), "spray": (204.6, 244.7, 250.9),
                "reps": (198.9, 211.3, 211.9)}
HTSIM_SPRAY_ACKS = 26_182
HTSIM_ECMP_SPRAY_MAX_RATIO = 2.93
TOLERANCE = 0.15
RATIO_TOLERANCE = 0.20

# figures that stay outside 15 %, the model difference that keeps them there, and the band
# (relative to htsim) they must stay in
GAPS = {
    ("ecmp", "p99"): (("one draw of the hash seeds against another: ECMP's tail is set by "
                      "which flows hash onto the same link; spin's seed 0 puts 5 of this "
                      "permutation's flows on each of two agg-core links (5 x 164 us of "
                      "serialisation), htsim's seed 1 at most 4. Averaged over 20 seeds each "
                      "the two agree within 4 % (test_over_switch_seeds)"), (1.0, 1.4)),
    ("ecmp", "max"): (("as ecmp p99: the worst hash collision of one draw; over 20 seeds "
                      "each, within 2 %"), (1.0, 1.4)),
}
RATIO_GAP = (("the ecmp max above: spray's max is within 10 % of htsim's, so the ratio "
             "inherits one draw's worst hash collision; over 20 seeds each the ratios agree "
             "within 1 %"), (1.0, 1.6))
ACK_GAP = (("both acknowledge every ECN-marked packet at once on top of one ACK per 16 KiB; "
           "spin's RED draws mark more sprayed packets than htsim's run did (htsim's mark "
           "count is not in the reference)"), (1.0, 1.4))


@pytest.fixture(scope="module")
def runs():
    sc, workload, _ = htsim_scenario(HTSIM / "fat_tree_128_1os.topo",
                                     HTSIM / "perm_128n_128c_2MB.cm")
    Simulation(sc, quiet=True).compile()
    return {s: run_scheme(sc, workload, s) for s in HTSIM_FCT_US}


def _us(ps: float) -> float:
    return ps / 1e6


def test_side_by_side_with_htsim(runs, capsys):
    rows = []
    outside = []
    for s, ref in HTSIM_FCT_US.items():
        f = runs[s].fct
        assert f is not None and runs[s].completed == 128, s
        got = (_us(f.mean_ps), _us(f.p99_ps), _us(f.max_ps))
        for name, g, h in zip(("mean", "p99", "max"), got, ref):
            ratio = g / h
            rows.append(f"{s:6s} {name:5s} htsim {h:7.1f}  spin {g:7.1f}  "
                        f"{100 * (ratio - 1):+6.1f} %")
            if abs(ratio - 1) > TOLERANCE:
                outside.append((s, name, ratio))
    ratio = runs["ecmp"].fct.max_ps / runs["spray"].fct.max_ps
    rows.append(f"ecmp/spray max ratio: htsim {HTSIM_ECMP_SPRAY_MAX_RATIO:.2f}  spin {ratio:.2f}")
    rows.append(f"spray ACKs: htsim {HTSIM_SPRAY_ACKS:,}  spin {runs['spray'].acks_sent:,}")
    with capsys.disabled():
        print("\n" + "\n".join(rows))
        for (s, name), (why, _) in GAPS.items():
            print(f"  outside 15 %: {s} {name}: {why}")
        print(f"  outside 20 %: ecmp/spray max ratio: {RATIO_GAP[0]}")
        print(f"  outside 15 %: spray ACKs: {ACK_GAP[0]}")
    for s, name, r in outside:
        assert (s, name) in GAPS, f"{s} {name} is {100 * (r - 1):+.1f} % from htsim"
        lo, hi = GAPS[(s, name)][1]
        assert lo <= r <= hi, f"{s} {name}: {r:.2f} x htsim, outside its band {lo}-{hi}"
    r = ratio / HTSIM_ECMP_SPRAY_MAX_RATIO
    assert abs(r - 1) <= RATIO_TOLERANCE or RATIO_GAP[1][0] <= r <= RATIO_GAP[1][1]


def test_ack_count_close_to_htsims_coalescing(runs):
    r = runs["spray"].acks_sent / HTSIM_SPRAY_ACKS
    assert abs(r - 1) <= TOLERANCE or ACK_GAP[1][0] <= r <= ACK_GAP[1][1]
    # coalescing: far fewer ACKs than data packets (one per packet before)
    assert runs["spray"].acks_sent < runs["spray"].data_packets / 1.5


def test_reps_cuts_the_tail_below_spraying(runs):
    """htsim: REPS cuts the max 15 % below oblivious spraying."""
    assert runs["reps"].fct.max_ps <= runs["spray"].fct.max_ps * 1.05


def _htsim_over_seeds() -> dict[str, dict[str, list[float]]]:
    """htsim's FCT mean, p99 and max (us) per scheme, one value per -seed."""
    rows = csv.DictReader(line for line in HTSIM_SEEDS.read_text().splitlines()
                          if not line.startswith("#"))
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        assert int(r["completed"]) == 128
        figs = out.setdefault(r["scheme"], {"mean": [], "p99": [], "max": []})
        for name in figs:
            figs[name].append(float(r[f"fct_{name}_us"]))
    return out


def test_over_switch_seeds(capsys):
    """Each FCT figure averaged over the switches' seeds 1..20 within 15 % of htsim's average
    over -seed 1..20, for ECMP, spraying and REPS; the ECMP/spray max ratio within 20 %."""
    htsim = _htsim_over_seeds()
    assert all(len(v["mean"]) == SEEDS for v in htsim.values())
    sc, workload, _ = htsim_scenario(HTSIM / "fat_tree_128_1os.topo",
                                     HTSIM / "perm_128n_128c_2MB.cm")
    Simulation(sc, quiet=True).compile()
    spin = {s: run_over_seeds(sc, workload, s, SEEDS) for s in htsim}
    rows, outside = [], []
    for s, figs in htsim.items():
        assert all(r.completed == 128 for r in spin[s].runs), s
        for name, values in figs.items():
            h, g = statistics.fmean(values), spin[s].average_us(name)
            got = spin[s].figure_us(name)
            rows.append(f"{s:6s} {name:5s} htsim {h:7.1f} [{min(values):4.0f}-{max(values):4.0f}]"
                        f"  spin {g:7.1f} [{min(got):4.0f}-{max(got):4.0f}]  "
                        f"{100 * (g / h - 1):+6.1f} %")
            if abs(g / h - 1) > TOLERANCE:
                outside.append(rows[-1])
    h_ratio = statistics.fmean(htsim["ecmp"]["max"]) / statistics.fmean(htsim["spray"]["max"])
    s_ratio = spin["ecmp"].average_us("max") / spin["spray"].average_us("max")
    rows.append(f"ecmp/spray max ratio over seeds: htsim {h_ratio:.2f}  spin {s_ratio:.2f}")
    with capsys.disabled():
        print(f"\naverages over seeds 1..{SEEDS} [range]:\n" + "\n".join(rows))
    assert not outside, outside
    assert abs(s_ratio / h_ratio - 1) <= RATIO_TOLERANCE
