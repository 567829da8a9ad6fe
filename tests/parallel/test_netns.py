"""The multi-machine recipe of docs/tutorials/multi-worker.md, between two network namespaces
this test creates: a coordinator listening on 0.0.0.0 with its local worker in one, a worker
joining over a veth pair from the other. Addresses are a private /30 that exists only inside
the two namespaces, and all traffic stays between them. Needs root and iproute2; skips, saying
which is missing, otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import HERE, child_env
from toy_program import make_program, merged_devices

from spin.parallel import run_single
from spin.parallel.auth import generate_keys

ADDR_A, ADDR_B = "10.213.77.1", "10.213.77.2"  # a /30 private to the namespaces below


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=False, capture_output=True, text=True, timeout=10)


@pytest.fixture()
def two_hosts():
    if os.geteuid() != 0:
        pytest.skip("needs root to create network namespaces")
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2 ('ip') to create network namespaces")
    tag = f"{os.getpid() % 100000}"
    ns_a, ns_b, veth_a, veth_b = f"spinA{tag}", f"spinB{tag}", f"spva{tag}", f"spvb{tag}"
    made = []
    try:
        for ns in (ns_a, ns_b):
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                pytest.skip(f"cannot create a network namespace here: {r.stderr.strip()}")
            made.append(ns)
        steps = [
            ("link", "add", veth_a, "type", "veth", "peer", "name", veth_b),
            ("link", "set", veth_a, "netns", ns_a), ("link", "set", veth_b, "netns", ns_b),
            ("-n", ns_a, "addr", "add", f"{ADDR_A}/30", "dev", veth_a),
            ("-n", ns_b, "addr", "add", f"{ADDR_B}/30", "dev", veth_b),
            ("-n", ns_a, "link", "set", veth_a, "up"), ("-n", ns_b, "link", "set", veth_b, "up"),
            ("-n", ns_a, "link", "set", "lo", "up"), ("-n", ns_b, "link", "set", "lo", "up"),
        ]
        for step in steps:
            r = _ip(*step)
            if r.returncode != 0:
                pytest.skip(f"cannot set up the veth pair: ip {' '.join(step)}: {r.stderr.strip()}")
        yield ns_a, ns_b
    finally:
        for ns in made:
            _ip("netns", "del", ns)  # also removes the veth pair


def _in(ns: str, *cmd: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_bind_all_lets_a_worker_on_another_host_join(two_hosts, tmp_path) -> None:
    from drive_bind import SPEC

    ns_a, ns_b = two_hosts
    key = str(generate_keys(tmp_path / "keys"))
    drv = _in(ns_a, sys.executable, str(HERE / "drive_bind.py"), key, "2", "1")
    joiner = None
    try:
        line = drv.stdout.readline().split()
        assert line and line[0] == "ENDPOINT", (line, drv.stderr.read() if drv.poll() is not None else "")
        port = line[1].rsplit(":", 1)[1]
        joiner = _in(ns_b, sys.executable, "-m", "spin.parallel.worker_main", "--join",
                     f"tcp://{ADDR_A}:{port}", "--key-file", key, "--join-timeout-s", "30")
        out, err = drv.communicate(timeout=90)
        rc_joiner = joiner.wait(timeout=30)
    finally:
        for p in (drv, joiner):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert drv.returncode == 0, (out, err)
    ref = make_program(SPEC, 0, 1)
    run_single(ref)
    got = json.loads(out.split("RESULT", 1)[1])
    assert got == json.loads(json.dumps(merged_devices([ref.result()])))
    assert rc_joiner == 0, joiner.stderr.read()
