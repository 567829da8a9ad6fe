"""Load-balancing schemes on a k = 4 fat tree with colliding flows: the adaptive schemes finish a
permutation sooner than per-flow ECMP and load the tiers evenly, where ECMP's hot links show;
every scheme routes around a failed link; all schemes (on different switches of one fabric)
give identical results for 1, 2 and 4 worker processes; ``spin lb`` prints its table; pictures are written.

Each host sends a flow of single-packet RDMA writes to its image under a permutation (drawn
with seed 0, where per-flow ECMP puts several flows on one link). Single-packet messages keep
the comparison about paths: a multi-packet message whose later packets overtake its first is
not placed by a receiver without out-of-order placement (``spin lb`` reports such losses).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spin.errors import ConfigError
from spin.fabric import run_scenario
from spin.loadbalancing import fabric_figures, scheme_names, with_scheme
from spin.loadbalancing.compare import fabric_scenario
from spin.loadbalancing.schemes import get_scheme
from spin.scenario_file import load_scenario
from spin.simulation import Simulation
from spin.workloads.permutation import derangement

from .test_cli import spin

SPRAY_GAIN = 0.9         # spraying finishes the colliding permutation in < 0.9x ECMP's time
MESSAGES = 24            # per flow, 4 KiB each (one packet at MTU 4 KiB)
SIZE = 4096
FAULT_NS = 60_000.0      # between the two phases of the failure scenario
PAUSE_NS = 80_000.0      # hosts compute this long between the phases
# port selection in the switches, over open-loop writes on PFC switches; the sender-side schemes
# (spray, reps) need the out-of-order transport and have their own test below
SCHEMES = [s for s in scheme_names() if not get_scheme(s).nic]


def _scenario(phases: int = 1, transport: str = "none"):
    sc = fabric_scenario("fat_tree", {"k": 4}, queue_sample_ns=1000.0, transport=transport)
    sc.host = sc.host.model_copy(update={"send_overhead_ns": 0.0, "recv_overhead_ns": 0.0,
                                         "memory_bytes": 2 * SIZE})
    n = len(sc.topology.hosts)
    dst = derangement(n, 0)
    for h in range(n):
        prog = sc.host_program(h)
        for phase in range(phases):
            if phase:
                prog.compute(PAUSE_NS).mark(f"start{phase}")
            for _ in range(MESSAGES):
                prog.send(dst[h], SIZE, qp=1, local_addr=0, remote_addr=SIZE)
            prog.wait_recv(qp=1, count=MESSAGES).mark(f"done{phase}")
    return sc


def _finish_ps(result, phase: int = 0) -> int:
    marks = result.marks.get(f"done{phase}", {})
    assert len(marks) == 16, f"{16 - len(marks)} hosts did not receive all their messages"
    return max(marks.values())


@pytest.fixture(scope="module")
def collisions():
    sc = _scenario()
    return {s: Simulation(with_scheme(sc, s)).run() for s in SCHEMES}


def test_adaptive_schemes_beat_colliding_ecmp(collisions):
    ecmp = collisions["ecmp"]
    for s in SCHEMES:
        r = collisions[s]
        assert r.drops == {} and len(r.messages) == 16 * MESSAGES, s
    t = {s: _finish_ps(collisions[s]) for s in SCHEMES}
    for s in ("flowlet", "adaptive", "drill"):
        assert t[s] < 0.75 * t["ecmp"], f"{s} {t[s]} ps vs ecmp {t['ecmp']} ps"
    # ECMP's collisions show as hot links: the most uneven tier between switches
    fig = {s: fabric_figures(collisions[s]) for s in SCHEMES}
    assert fig["ecmp"].imbalance > 3.0
    for s in ("adaptive", "drill"):
        assert fig[s].imbalance < 0.5 * fig["ecmp"].imbalance, s
    assert fig["flowlet"].flowlets > 0 and fig["ecmp"].flowlets == 0
    # a hot link under ECMP carries several flows: more bytes than a host sends
    hottest = max((l for l in ecmp.links if l.tier != "host"), key=lambda l: l.tx_bytes)
    assert hottest.tx_bytes > 2 * MESSAGES * SIZE
    # utilisation over time: the samples add up to the links' busy time
    busy = {}
    for _t, link, d, b in ecmp.link_samples:
        busy[(link, d)] = busy.get((link, d), 0) + b
    assert sum(busy.values()) == sum(l.busy_ps for l in ecmp.links)


@pytest.fixture(scope="module")
def failed_link(collisions):
    """ECMP's hottest link between switches in the collision scenario."""
    ecmp = collisions["ecmp"]
    return max((l for l in ecmp.links if l.tier != "host"), key=lambda l: l.tx_bytes).link


@pytest.fixture(scope="module")
def failure_scenario(failed_link):
    sc = _scenario(phases=2)
    sc.link_down(failed_link, at_ns=FAULT_NS)
    return sc


@pytest.fixture(scope="module")
def failures(failure_scenario):
    return {s: Simulation(with_scheme(failure_scenario, s)).run() for s in SCHEMES}


def test_every_scheme_routes_around_a_failed_link(failures, failed_link):
    fault_ps = int(FAULT_NS * 1000)
    for s, r in failures.items():
        assert _finish_ps(r, 0) < fault_ps, f"{s}: phase 1 still running at the failure"
        assert min(r.marks["start1"].values()) > fault_ps + 10_000_000, s   # routes converged
        _finish_ps(r, 1)                                  # every flow of phase 2 completed
        assert r.drops == {} and len(r.messages) == 2 * 16 * MESSAGES, s
        after = [b for t, link, _d, b in r.link_samples if link == failed_link and t > fault_ps]
        assert after == [], f"{s}: the failed link still carried frames"
    before = [b for t, link, _d, b in failures["ecmp"].link_samples
              if link == failed_link and t <= fault_ps]
    assert sum(before) > 0


def test_identical_for_1_2_4_workers(failure_scenario):
    """Every scheme at once (each on switches that choose among ports), with a link failure and
    link sampling: one run per worker count covers them all."""
    from dataclasses import replace
    sc = replace(failure_scenario, switch_load_balancing={})
    topo = sc.topology
    edges = [s for s in topo.switches if topo.switch_role(s) == "edge"]
    aggs = [s for s in topo.switches if topo.switch_role(s) == "agg"]
    sc.load_balancing("flowlet", *edges[0::2])
    sc.load_balancing("adaptive", *edges[1::2])
    sc.load_balancing("drill", *aggs[0::2])                 # the other aggs keep ecmp
    base = Simulation(sc).run()
    _finish_ps(base, 1)
    assert sum(s.flowlets for s in base.switches) > 0
    assert base.link_samples and base.queue_samples
    for workers in (2, 4):
        r = run_scenario(sc, workers=workers, timeout_s=900)
        assert r.to_dict(include_wall=False) == base.to_dict(include_wall=False), \
            f"results differ with {workers} workers"


@pytest.fixture(scope="module")
def sprayed():
    """The colliding permutation over the Ultra-Ethernet-style transport (trimming switches):
    per-flow ECMP against the senders' spraying schemes."""
    sc = _scenario(transport="ue")
    return {s: Simulation(with_scheme(sc, s)).run() for s in ("ecmp", "spray", "reps")}


def test_spraying_beats_colliding_ecmp(sprayed):
    for s, r in sprayed.items():
        assert len(r.messages) == 16 * MESSAGES, s           # every message, exactly once
    t = {s: _finish_ps(r) for s, r in sprayed.items()}
    for s in ("spray", "reps"):
        assert t[s] < SPRAY_GAIN * t["ecmp"], f"{s} {t[s]} ps vs ecmp {t['ecmp']} ps"
        assert sum(n.reorder_degree for n in sprayed[s].nics) > 0, s   # paths really differ
    assert sum(n.reorder_degree for n in sprayed["ecmp"].nics) == 0


def test_sender_schemes_identical_for_1_2_4_workers():
    """Spraying and REPS draw entropy values from per-connection generators and ACK echoes:
    the same for any worker count (one fabric, half the hosts' NICs on each)."""
    sc = with_scheme(_scenario(transport="ue"), "spray")
    base = run_scenario(sc, workers=1)
    assert len(base.messages) == 16 * MESSAGES
    for workers in (2, 4):
        r = run_scenario(sc, workers=workers, timeout_s=900)
        assert r.to_dict(include_wall=False) == base.to_dict(include_wall=False), workers
    reps = with_scheme(_scenario(transport="ue"), "reps")
    assert run_scenario(reps, workers=2, timeout_s=900).to_dict(include_wall=False) \
        == run_scenario(reps, workers=1).to_dict(include_wall=False)


def test_spin_lb_prints_the_table(tmp_path):
    out = tmp_path / "lb.json"
    # over the out-of-order transport: the per-packet port schemes would be refused over
    # 'none' (multi-packet messages, test_reordering_refused.py)
    r = spin("lb", "--topology", "fat_tree:k=4", "--size", "64KiB", "--json", str(out),
             "--transport", "ue", "--schemes", ",".join(SCHEMES))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("scheme"))
    for col in ("FCT mean", "p99", "max util", "imbal", "drops", "ECN", "retx", "Mpkt ev/s"):
        assert col in lines[head]
    rows = [l.split()[0] for l in lines[head + 2:head + 2 + len(SCHEMES) + 1]]
    assert rows == [*SCHEMES, "ideal"]
    d = json.loads(out.read_text())
    assert [x["scheme"] for x in d["runs"]] == SCHEMES
    assert all(x["completed"] == x["flows"] == 16 for x in d["runs"])
    ecmp = d["runs"][0]
    assert ecmp["fct"]["max_ps"] >= ecmp["ideal_fct"]["max_ps"]


def test_spin_lb_wall_excludes_what_compiles_on_first_use(monkeypatch):
    """The scheduling helpers of a run compile on their first call after an engine recompile
    (1.3 s: the first row read 1.311 s and 0.00 M events/s). On a clock that only moves when
    they, or the progress bar's set-up, run, every scheme's wall time is zero."""
    import time

    from spin.engine import heap
    from spin.loadbalancing.compare import add_workload, run_schemes
    from spin.parallel import progress as progress_module
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def compiling(real):
        def first_use(*args, **kw):
            clock[0] += 1.0
            return real(*args, **kw)
        return first_use

    monkeypatch.setattr(heap, "push_event", compiling(heap.push_event))
    monkeypatch.setattr(progress_module.Progress, "__init__",
                        compiling(progress_module.Progress.__init__))
    sc = fabric_scenario("fat_tree", {"k": 4}, queue_sample_ns=1000.0)
    workload = add_workload(sc, "permutation", message_bytes=SIZE, seed=0, fill=False)
    runs = run_schemes(sc, workload, ["ecmp", "flowlet"], progress=lambda line: None)
    assert clock[0] > 0                            # the helpers and the bars did run
    assert [r.completed for r in runs] == [16, 16]
    assert [r.wall_s for r in runs] == [0.0, 0.0]


def test_spin_lb_rejects_an_unknown_scheme():
    r = spin("lb", "--topology", "fat_tree:k=4", "--schemes", "ecmp,bogus")
    assert r.returncode == 2
    assert "bogus" in r.stderr and f"valid choices: {', '.join(scheme_names())}" in r.stderr


@pytest.mark.parametrize("schemes, message", [
    ("", "--schemes '' names no scheme; valid choices: ecmp"),
    ("ecmp,,drill", "--schemes 'ecmp,,drill': an empty item between commas"),
    ("ecmp,ecmp", "--schemes 'ecmp,ecmp': ecmp named twice"),
])
def test_spin_lb_refuses_an_empty_or_repeated_scheme_list(schemes, message):
    """Each once ran something other than what was asked: an empty table, a row dropped, the
    same scheme twice (an htsim run took '' for its default set)."""
    from spin.loadbalancing.schemes import scheme_list
    with pytest.raises(ConfigError, match=re.escape(message)):
        scheme_list(schemes, ["ecmp"])
    assert scheme_list(None, ["ecmp", "spray"]) == ["ecmp", "spray"]
    r = spin("lb", "--preset", "htsim", "--topo-file", "examples/htsim/fat_tree_16.topo",
             "--cm", "examples/htsim/chains_8.cm", "--schemes", schemes)
    assert r.returncode == 2 and message in r.stderr


def test_plots_are_written(collisions, tmp_path):
    pytest.importorskip("matplotlib")
    from spin.loadbalancing.plots import write_plots
    runs = {s: (r, [m.completion_ps for m in r.messages]) for s, r in collisions.items()}
    paths = write_plots(tmp_path, runs, 1_000_000)
    assert sorted(p.name for p in paths) == sorted(
        ["fct_cdf.png"] + [f"link_utilisation_{s}.png" for s in SCHEMES])
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, p.name


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "loadbalancing"


def test_one_example_per_scheme():
    """Every scheme of the study's table has an example; a scheme added later needs none."""
    files = sorted(EXAMPLES.glob("*.toml"))
    assert {p.stem for p in files} <= set(scheme_names())
    assert {p.stem for p in files} >= {"ecmp", "adaptive", "drill", "flowlet", "random_spray",
                                       "spray", "reps"}
    for p in files:
        sc, opts = load_scenario(p)
        if p.stem in SCHEMES:
            assert sc.switch.load_balancing == p.stem and sc.switch.pfc
        else:   # senders spray over the out-of-order transport, switches trim
            assert sc.nic.transport.entropy == p.stem and sc.nic.transport.kind == "ue"
            assert sc.switch.trim and sc.switch.load_balancing == "ecmp"
        assert len(opts.workload.flows) == len(sc.topology.hosts) == 128


RUN_TOML = """
name = "lb-plots"
[topology]
kind = "fat_tree"
k = 4
[link]
rate_gbps = 100
[loadbalancing]
scheme = "flowlet"
[switch]
pfc = true
[engine]
mtu_bytes = 4096
[workload]
kind = "permutation"
message_bytes = 65536
"""


def test_spin_run_plots(tmp_path):
    toml = tmp_path / "lb.toml"
    toml.write_text(RUN_TOML)
    r = spin("run", str(toml), "--plots", str(tmp_path / "pics"), "--quiet")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.returncode == 2 and "matplotlib" in r.stderr
        return
    assert r.returncode == 0, r.stderr
    for name in ("fct_cdf.png", "link_utilisation_lb-plots.png"):
        data = (tmp_path / "pics" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_a_run_of_minutes_is_announced_with_an_estimate(capsys):
    """spin lb --size 100GB once ran for minutes without a word after its title."""
    from types import SimpleNamespace

    from spin.loadbalancing.compare import _announce_long_runs
    flow = SimpleNamespace(nbytes=100 * 10**9)
    _announce_long_runs(SimpleNamespace(flows=[flow] * 16), 4096, 1)
    assert "spin lb: about 390,625,008 packets, 6,250 M packet events per scheme" in \
        capsys.readouterr().err
    _announce_long_runs(SimpleNamespace(flows=[SimpleNamespace(nbytes=65536)] * 16), 4096, 7)
    assert capsys.readouterr().err == ""            # a second-long run says nothing more
