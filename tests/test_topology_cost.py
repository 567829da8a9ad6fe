"""Topologies priced per bandwidth: the cost model's bill of materials on known topologies, its
configuration and errors, and ``spin topo --compare`` with measured collective bandwidth."""
import json

import pytest

from spin.cli import main
from spin.errors import ConfigError
from spin.topologies import build_topology
from spin.topologies.cost import CostModel, load_cost_model, topology_cost


def test_fat_tree_bill_of_materials():
    """k = 4: 20 four-port switches (a quarter of a 16-port switch each), 16 NIC ports, 16
    DACs to the hosts, 16 AOCs edge-aggregation, 16 optical links aggregation-core."""
    c = topology_cost(build_topology("fat_tree", k=4))
    assert c.switches_usd == pytest.approx(20 * 12_000 * 4 / 16)
    assert c.nic_ports == 16 and c.nic_ports_usd == 16 * 1_500
    assert dict(c.links_by_class) == {"dac": 16, "aoc": 16, "optical": 16}
    assert c.links_usd == pytest.approx(16 * 150 + 16 * 900 + 16 * (2 * 1_000 + 100))
    assert c.total_usd == pytest.approx(134_400)
    assert c.watts == pytest.approx(80 * 8 + 16 * 12 + 16 * 20 + 16 * 20)
    assert c.bisection_gbps == 3_200 and c.usd_per_bisection_gbps == pytest.approx(42.0)


def test_hamming_mesh_board_links_are_traces_and_router_ports_are_nic_ports():
    topo = build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2, cols=2)
    c = topology_cost(topo)
    classes = dict(c.links_by_class)
    assert classes["none"] == 16 and classes["pcb"] == 16      # package links, board meshes
    network = sum(1 for l in topo.links if l.kind in ("row", "column"))
    assert c.nic_ports == network                               # accelerator network ports
    cheap_optics = topology_cost(topo, CostModel(aoc_usd=0.0))
    assert cheap_optics.total_usd == pytest.approx(c.total_usd - classes["aoc"] * 900)


def test_every_price_is_a_parameter():
    topo = build_topology("leaf_spine", leaves=4, hosts_per_leaf=4)
    base = topology_cost(topo)
    dac_everywhere = topology_cost(topo, CostModel(link_classes={"leaf-spine": "dac"}))
    assert dict(dac_everywhere.links_by_class) == {"dac": 32}
    assert dac_everywhere.total_usd < base.total_usd
    # 8 ports: priced as a share of the smallest class that holds them (16 ports)
    assert CostModel().switch_usd(8) == pytest.approx(6_000)
    assert CostModel(switch_usd_by_radix={64: 64_000}).switch_usd(8) == pytest.approx(8_000)


def test_bad_cost_models_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="default_link_class"):
        CostModel.make(default_link_class="copper")
    with pytest.raises(ConfigError, match="dac_usd"):
        CostModel.make(dac_usd=-1)
    f = tmp_path / "cost.toml"
    f.write_text("dac_usd = 99.0\n[switch_usd_by_radix]\n32 = 10000.0\n")
    m = load_cost_model(str(f))
    assert m.dac_usd == 99.0 and m.switch_usd_by_radix == {32: 10_000.0}
    f.write_text("dac_price = 1\n")
    with pytest.raises(ConfigError, match="unknown field 'dac_price'; valid fields: "):
        load_cost_model(str(f))
    f.write_text("dac_usdd = 1\n")       # a typo names the field meant
    with pytest.raises(ConfigError, match=r"unknown field 'dac_usdd' \(did you mean 'dac_usd'\?\)"):
        load_cost_model(str(f))
    f.write_text('default_link_class = "opitcal"\n')
    with pytest.raises(ConfigError, match=rf"(?s)--cost {f}: .*default_link_class = 'opitcal'.* "
                                          r"\(did you mean 'optical'\?\)"):
        load_cost_model(str(f))
    f.write_text('[link_classes]\nedge_agg = "dac"\n')   # else priced as the default, silently
    with pytest.raises(ConfigError, match=r"link_classes key 'edge_agg' is no link kind of the "
                                          r"built-in topologies \(did you mean 'edge-agg'\?\)"):
        load_cost_model(str(f))
    f.write_text("[switch_usd_by_radix]\nbig = 1.0\n")
    with pytest.raises(ConfigError, match="key 'big': expected a port count"):
        load_cost_model(str(f))
    with pytest.raises(ConfigError, match="no such file"):
        load_cost_model(str(tmp_path / "missing.toml"))


def test_topo_compare_measures_allreduce_and_all_to_all(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["topo", "--compare", "--compare-hosts", "16", "--measure-bytes", "1MiB",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "$/Gb/s bis." in text and "all-to-all" in text and "GB/s" in text
    # the basis of the figures: bytes per host of each run, the host preset, the link rates
    assert text.splitlines()[0] == (
        "measured per host: allreduce of 1,048,576 B (nic-ring2d, int32, accelerator NICs), "
        "all-to-all of 1,048,576 B (to 15 peers); host preset cpu; link rates in the table")
    assert "400 Gb/s (internal 1600)" in text           # HammingMesh's accelerator links
    rows = json.loads(out.read_text())
    kinds = [r["kind"] for r in rows]
    assert {"fat_tree", "leaf_spine", "hamming_mesh", "supernode"} <= set(kinds)
    assert all(r["hosts"] == 16 for r in rows)
    for r in rows:
        bw = r["bandwidth"]
        assert bw["host_preset"] == "cpu" and bw["all_to_all_bytes"] == 1 << 20
        # measured, not a formula: below the allreduce's injection bound and a port's rate
        assert 0 < bw["allreduce_gbytes_per_s"] < bw["allreduce_bound_gbytes_per_s"]
        assert 0 < bw["all_to_all_gbytes_per_s"] < 50
        assert bw["all_to_all_peers"] == 15 and bw["allreduce_algorithm"] == "nic-ring2d"
        assert r["allreduce_bound_gbytes_per_s"] == bw["allreduce_bound_gbytes_per_s"]
        assert r["cost"]["total_usd"] > 0
    bound = {r["kind"]: r["allreduce_bound_gbytes_per_s"] for r in rows}
    assert bound["hamming_mesh"] == pytest.approx(4 * bound["fat_tree"])   # four ports
    over = {r["topology"]: r["bandwidth"]["all_to_all_gbytes_per_s"] for r in rows
            if r["kind"] == "leaf_spine"}
    full, thin = sorted(over.items(), key=lambda kv: "oversubscription" in kv[0])
    assert thin[1] < full[1]               # 4:1 oversubscription shows in the all-to-all


def test_topo_compare_without_runs(capsys):
    assert main(["topo", "--compare", "--no-measure"]) == 0
    text = capsys.readouterr().out
    assert "hamming_mesh" in text and "$" in text
    assert text.startswith("topology ") and "measured per host:" not in text   # nothing run
    head, fat_tree = text.splitlines()[:2]
    assert head.split()[:3] == ["topology", "hosts", "links"] and "400 Gb/s" in fat_tree


def test_all_to_all_on_hamming_mesh_is_lossless_with_fast_accelerator_links():
    """512 KiB per pair over HammingMesh, lossless: the accelerator's 1.6 Tb/s link into its
    router outlasts a full PFC pause (21 us) while the column network backs up, so the router
    renews its pauses; before it did, 455 frames were dropped and two hosts never finished."""
    from spin.collectives.measure import lossless
    from spin.config import HostConfig
    from spin.runs import run
    from spin.describe.scenario import Scenario
    from spin.topologies import build_topology
    from spin.workloads.catalog import build_workload
    from spin.workloads.metrics import collective_times_ps

    chunk = 512 * 1024
    topo = build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2, cols=2)
    n = len(topo.hosts)
    sc = Scenario(topo, host=HostConfig(memory_bytes=3 * n * chunk), switch=lossless())
    wl = build_workload(sc, "all_to_all", message_bytes=chunk, phases="dispatch")
    result = run(sc, 1)
    assert not result.unfinished_hosts() and not result.drops
    assert collective_times_ps(wl, result)[0] > 0
    internal = [l for l in result.links if l.tier == "internal" and l.pauses_sent]
    assert internal, "the routers paused their accelerators"


def test_a_pfc_deadlock_on_hamming_mesh_is_broken_by_the_watchdog():
    """Shortest-path routing on HammingMesh lets PFC pauses form a cycle: at 32 hosts and
    128 KiB per pair, ports pause each other and no data moves again. The switches' PFC
    watchdog drops the stuck queues (counted as pfc_watchdog) after pfc_watchdog_ns, so the run
    ends and says why hosts did not finish, instead of renewing pauses forever."""
    from spin.collectives.measure import lossless
    from spin.config import EngineConfig, HostConfig, SwitchConfig
    from spin.runs import run
    from spin.describe.scenario import Scenario
    from spin.workloads.catalog import build_workload

    chunk = 128 * 1024
    topo = build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2, cols=4)
    n = len(topo.hosts)

    def scenario(switch):
        sc = Scenario(build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2,
                                     cols=4),
                      host=HostConfig(memory_bytes=3 * n * chunk), switch=switch,
                      engine=EngineConfig.for_fabric(n))
        build_workload(sc, "all_to_all", message_bytes=chunk, phases="dispatch")
        return sc

    result = run(scenario(lossless()), 1)
    assert result.drops.get("pfc_watchdog", 0) > 0
    assert result.unfinished_hosts()          # the open-loop transport does not resend
    # without the watchdog the same run is still stuck 5 ms of virtual time later: every
    # port it paused stays paused, only the pauses' renewals move
    stuck = run(scenario(lossless(SwitchConfig(pfc_watchdog_ns=0))), 1, until_ps=5_000_000_000)
    assert not stuck.drops
    assert stuck.unfinished_hosts()


def _advantage(ref, other, model):
    from spin.topologies.cost import topology_cost
    return topology_cost(ref, model).total_usd / topology_cost(other, model).total_usd


def test_sensitivity_factors_halve_and_double_the_advantage():
    """Each factor the sensitivity table gives, applied to that price in the cost model,
    moves the cost advantage (hence the one per GB/s: the bandwidths cancel) by exactly 2x;
    every part's share comes from the same prices as the cost."""
    from spin.topologies.cost import CostModel, topology_cost
    from spin.topologies.sensitivity import parts, sensitivity
    ref = build_topology("fat_tree", k=4)
    others = [build_topology("hamming_mesh", board_rows=2, board_cols=2, rows=2, cols=2),
              build_topology("leaf_spine", leaves=4, hosts_per_leaf=4, oversubscription=4)]
    model = CostModel()
    scaled = {"switch": lambda m, f: {"switch_usd_by_radix": {r: u * f for r, u in
                                                               m.switch_usd_by_radix.items()}},
              "NIC": lambda m, f: {"nic_port_usd": m.nic_port_usd * f},
              "copper": lambda m, f: {"dac_usd": m.dac_usd * f},
              "active optical": lambda m, f: {"aoc_usd": m.aoc_usd * f},
              "transceiver": lambda m, f: {"transceiver_usd": m.transceiver_usd * f},
              "fibre": lambda m, f: {"fibre_usd": m.fibre_usd * f}}
    checked = 0
    for other in others:
        cost_r, cost_o = topology_cost(ref, model), topology_cost(other, model)
        assert sum(parts(cost_r, model).values()) == pytest.approx(cost_r.total_usd)
        base = _advantage(ref, other, model)
        for s in sensitivity(cost_r, cost_o, model):
            key = next((k for k in scaled if s.part.startswith(k)), None)
            for factor, target in ((s.halves_at, 0.5), (s.doubles_at, 2.0)):
                if key is None or factor is None:
                    continue
                moved = CostModel.make(**{**model.model_dump(), **scaled[key](model, factor)})
                assert _advantage(ref, other, moved) == pytest.approx(target * base, rel=1e-9)
                checked += 1
    assert checked >= 4
    # HammingMesh has no transceivers: dearer optics only widen its lead, and without bound
    hm = next(s for s in sensitivity(topology_cost(ref, model), topology_cost(others[0], model),
                                     model) if s.part.startswith("optical transceiver"))
    assert hm.share_other == 0 and hm.halves_at is None and hm.limit is None


def test_topo_compare_sensitivity_and_the_4096_set(capsys):
    """Without runs the table still gives the allreduce's bound and the cost per GB/s at it;
    --sensitivity adds the price factors; the 4,096-host set names the kinds a build lacks."""
    from spin.topologies.inventory_tables import COMPARE_4096, available
    assert main(["topo", "--compare", "--compare-hosts", "16", "--no-measure",
                 "--sensitivity"]) == 0
    text = capsys.readouterr().out
    assert "AR bound" in text and "24.7 GB/s" in text and "98.8 GB/s" in text   # 4 ports
    assert "halves at" in text and "NIC / accelerator network port" in text
    have, lacking = available(COMPARE_4096 + (("no_such_kind", {}),))
    assert "no_such_kind" in lacking and ("hamming_mesh", COMPARE_4096[2][1]) in have
    assert all(name == "hamming_mesh" or name in lacking or name in {n for n, _ in have}
               for name, _ in COMPARE_4096)


@pytest.mark.parametrize("line, message", [
    ("nic_port_usd = inf", "--cost {}: nic_port_usd = inf: expected a finite figure"),
    ("nic_port_usd = nan", "--cost {}: nic_port_usd = nan: expected a finite figure"),
    ("dac_usd = 1e308", "--cost {}: dac_usd = 1e+308: expected a finite figure of at most 1e+12"),
    ("nic_port_usd = -1.0", "--cost {}: CostModel.nic_port_usd = -1.0: Input should be greater"),
])
def test_cost_figures_that_are_not_finite_prices_are_refused(tmp_path, line, message):
    """inf printed '$infM' in the table; 1e308 overflowed the sums."""
    from spin.topologies.cost import load_cost_model
    path = tmp_path / "cost.toml"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError) as err:
        load_cost_model(str(path))
    assert str(err.value).startswith(message.format(path))
    with pytest.raises(ConfigError):
        CostModel.make(**{line.split(" = ")[0]: float(line.split(" = ")[1])})
