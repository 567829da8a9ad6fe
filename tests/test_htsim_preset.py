"""``spin lb --topo-file T --cm C --preset htsim``: htsim main_uec's defaults derived from the
topology (base RTT, BDP-sized queues, ECN at 20 %/80 %, window 1.5 x BDP), applied to the
switch and NIC configs, and the per-scheme JSON with FCT mean/p50/p99/max, completions, wall
times and packet-event counts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from spin.loadbalancing.htsim_preset import htsim_preset
from spin.loadbalancing.htsim_run import htsim_scenario
from spin.workloads import load_htsim_topo

from .test_cli import spin

HTSIM = Path(__file__).resolve().parents[1] / "examples" / "htsim"
TOPO_128 = HTSIM / "fat_tree_128_1os.topo"
CM_128 = HTSIM / "perm_128n_128c_2MB.cm"


def test_preset_of_htsims_128_host_fat_tree():
    p = htsim_preset(load_htsim_topo(TOPO_128))
    assert p.hops == 6 and p.rate_gbps == 100 and p.link_latency_ps == 1_000_000
    # 2 x 6 x 1 us + 6 x (one 4 KiB data packet + one 64 B ACK at 100 Gb/s): ~14.0 us
    assert 14.0e6 <= p.base_rtt_ps <= 14.1e6
    assert p.bdp_bytes == p.base_rtt_ps * 100 // 8000
    assert p.queue_bytes % p.packet_bytes == 0
    assert abs(p.queue_bytes - p.bdp_bytes) < p.packet_bytes
    assert p.ecn_low_bytes == int(0.2 * p.queue_bytes) and p.ecn_high_bytes == int(0.8 * p.queue_bytes)
    assert p.window_bytes == int(1.5 * p.bdp_bytes)


def test_preset_configures_switches_and_nics():
    sc, workload, p = htsim_scenario(TOPO_128, CM_128)
    assert len(workload.flows) == 128 and {f.nbytes for f in workload.flows} == {2_000_000}
    s, t = sc.switch, sc.nic.transport
    assert (s.port_buffer_bytes, s.ecn_threshold_bytes, s.ecn_high_bytes) == \
        (p.queue_bytes, p.ecn_low_bytes, p.ecn_high_bytes)
    assert s.ecn_at == "dequeue" and s.trim and s.header_priority and not s.pfc
    assert t.kind == "ue" and t.window_bytes == p.window_bytes and t.max_window_factor == 1
    assert t.congestion == "nscc" and t.min_rto_us == 100.0 and t.ack_on_ecn
    assert t.ack_every_packets == 4 and t.ev_set_size == 64      # 16 KiB per ACK; -paths 64
    assert sc.engine.mtu_bytes == 4096


def test_unknown_preset_and_missing_files_are_one_line_errors(tmp_path):
    r = spin("lb", "--topo-file", str(TOPO_128), "--cm", str(CM_128), "--preset", "ns3")
    assert r.returncode == 2 and "invalid choice: 'ns3'" in r.stderr
    r = spin("lb", "--topo-file", str(TOPO_128), "--preset", "htsim")
    assert r.returncode != 0 and "--cm" in r.stderr and "Traceback" not in r.stderr
    r = spin("lb", "--topo-file", str(tmp_path / "none.topo"), "--cm", str(CM_128),
             "--preset", "htsim")
    assert r.returncode != 0 and "none.topo" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_spin_lb_preset_htsim_writes_fct_per_scheme(tmp_path):
    out = tmp_path / "h.json"
    r = spin("lb", "--topo-file", str(TOPO_128), "--cm", str(CM_128), "--preset", "htsim",
             "--schemes", "ecmp,spray", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "htsim preset: 6 hops" in r.stdout and "FCT =" in r.stdout
    d = json.loads(out.read_text())
    assert d["percentiles"] == "nearest rank" and "FCT" in d["fct_definition"]
    for name in ("ecmp", "spray"):
        s = d["schemes"][name]
        f = s["fct_us"]
        assert s["completed"] == s["flows"] == 128
        assert 160 < f["p50"] <= f["p99"] <= f["max"] and f["mean"] <= f["max"]
        assert s["wall_s"] > 0 and s["run_s"] >= s["wall_s"]
        assert s["packet_events"] > s["data_packets"] >= 128 * 489
    # spraying beats per-flow hashing on the permutation's tail
    assert d["schemes"]["spray"]["fct_us"]["max"] < d["schemes"]["ecmp"]["fct_us"]["max"]
