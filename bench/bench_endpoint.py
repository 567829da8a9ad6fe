"""Frame rate of an external endpoint: RDMA WRITEs from a program attached to h3 of
examples/endpoint/pingpong_endpoint.toml, echoed by the ping-pong handlers of h0 and h1.

Figures are round trips per second of wall time (a frame out, its echo back, through the
fabric), measured in the program from its first send to its last reply (the run's start-up and
result collection excluded), with ``window`` writes
in flight (1: one at a time; more: a new write for each reply). The program runs in its own
process, with the ``spin.endpoint.Endpoint`` client and raw frames (``build_frame``), or with
frames built and replies dissected by scapy. Lockstep on 1 and 2 workers; real time at two
paces. Wall-clock figures: machine- and load-dependent.

    python bench/bench_endpoint.py [--frames 2000] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLE = ROOT / "examples" / "endpoint" / "pingpong_endpoint.toml"
SIZE = 256


def client(url: str, frames: int, window: int, use_scapy: bool) -> dict:
    """The attached program: ``frames`` round trips, ``window`` in flight."""
    from examples.endpoint.scapy_rdma_write import BASE_VA, rdma_write
    from spin.endpoint import Endpoint
    from spin.wire import build_frame
    from spin.wire.headers import OP_WRITE_ONLY
    payload = bytes(range(256)) * (SIZE // 256)

    def write(node: int, i: int):
        dst = i % 2
        if use_scapy:
            return rdma_write(node, dst, i % (1 << 24), payload, BASE_VA)
        return build_frame(node, dst, 49152 + i % 1024, OP_WRITE_ONLY, 1, i % (1 << 24), payload,
                           reth=(BASE_VA, 0, SIZE))

    with Endpoint(url) as ep:
        if use_scapy:
            from scapy.layers.l2 import Ether
        sent = got = 0
        started = time.perf_counter()
        for _ in range(min(window, frames)):
            ep.send(write(ep.node, sent))
            sent += 1
        seconds = 0.0
        if ep.mode == "realtime":
            while got < frames:
                data, _t = ep.recv(timeout_s=120)
                got += 1
                seconds = time.perf_counter() - started
                if use_scapy:
                    Ether(data)
                if sent < frames:
                    ep.send(write(ep.node, sent))
                    sent += 1
        else:
            for data, t in ep.frames():
                got += 1
                seconds = time.perf_counter() - started
                if use_scapy:
                    Ether(data)
                if sent < frames:
                    ep.send(write(ep.node, sent), at_ps=t)
                    sent += 1
    return {"frames": got, "seconds": seconds}


def free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def measure(mode: str, workers: int, frames: int, window: int, use_scapy: bool,
            factor: float = 1e4) -> dict:
    from spin.endpoint import EndpointSpec
    from spin.fabric import run_scenario
    from spin.scenario_file import load_scenario
    url = free_url()
    proc = subprocess.Popen([sys.executable, __file__, "--client", url, "--frames", str(frames),
                             "--window", str(window)] + (["--scapy"] if use_scapy else []),
                            stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    sc, _ = load_scenario(EXAMPLE)
    spec = EndpointSpec("h3", url, mode=mode, realtime_factor=factor, on_lag="warn")
    result = run_scenario(sc, workers, endpoints=[spec], timeout_s=600)
    out, _ = proc.communicate(timeout=600)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["frames"] == frames == result.endpoints[0].frames_to_endpoint, (got, result.endpoints)
    return {"mode": mode, "workers": workers, "window": window, "client": "scapy" if use_scapy
            else "Endpoint", "frames": frames, "seconds": got["seconds"],
            "round_trips_per_s": frames / got["seconds"], "rounds": result.wall.get("rounds"),
            "factor": factor if mode == "realtime" else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=2000)
    p.add_argument("--quick", action="store_true", help="fewer frames (400)")
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--window", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--scapy", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.client:
        print(json.dumps(client(args.client, args.frames, args.window, args.scapy)))
        return 0
    n = 400 if args.quick else args.frames
    runs = [("lockstep", 1, n, 1, False), ("lockstep", 1, n, 64, False),
            ("lockstep", 2, n, 1, False), ("lockstep", 2, n, 64, False),
            ("lockstep", 1, max(n // 4, 64), 64, True),
            ("realtime", 1, max(n // 10, 64), 1, False, 1e4),
            ("realtime", 1, n, 64, False, 1e3),
            ("realtime", 1, max(n // 10, 64), 64, True, 1e3)]
    print(f"{'mode':9} {'workers':>7} {'window':>6} {'client':9} {'pace (wall s/virtual s)':>23} "
          f"{'frames':>6} {'wall (s)':>8} {'round trips/s':>13}")
    for run in runs:
        r = measure(*run)
        pace = f"{r['factor']:.0e}" if r["factor"] else "-"
        print(f"{r['mode']:9} {r['workers']:>7} {r['window']:>6} {r['client']:9} {pace:>23} "
              f"{r['frames']:>6} {r['seconds']:>8.2f} {r['round_trips_per_s']:>13,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
