"""Runs across network namespaces this file creates, so that no code path may assume loopback or
one host: the multi-machine recipe of docs/tutorials/multi-worker.md between two namespaces (a
coordinator listening on 0.0.0.0 with its local worker in one, a worker joining over a veth pair
from the other), and ``spin run --launcher hosts`` with the coordinator and each of three workers
in a namespace of its own, on a bridge, started through ``ip netns exec`` as the host file's
"ssh" - including a worker whose link goes down mid-run. Addresses are private subnets that
exist only inside these namespaces, and all traffic stays between them. Needs root and
iproute2; skips, saying which is missing, otherwise (fails under SPIN_REQUIRE_CLUSTER_TESTS=1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import pytest
from cluster_tools import (Namespaces, digest_of, job_env, kill_tagged, left_behind, need,
                           need_root, read_until, tagged, unavailable)
from conftest import HERE, REPO, child_env, wait_dead
from toy_program import make_program, merged_devices

from spin.parallel import run_single
from spin.parallel.auth import generate_keys

ADDR_A, ADDR_B = "10.213.77.1", "10.213.77.2"  # a /30 private to the namespaces below


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=False, capture_output=True, text=True, timeout=10)


@pytest.fixture()
def two_hosts():
    need_root()
    need("ip")
    tag = f"{os.getpid() % 100000}"
    ns_a, ns_b, veth_a, veth_b = f"spinA{tag}", f"spinB{tag}", f"spva{tag}", f"spvb{tag}"
    made = []
    try:
        for ns in (ns_a, ns_b):
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                unavailable(f"cannot create a network namespace here: {r.stderr.strip()}")
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
                unavailable(f"cannot set up the veth pair: ip {' '.join(step)}: {r.stderr.strip()}")
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


REDUCE = str(REPO / "examples" / "reduce_8hosts.toml")
LONG = str(HERE / "perm16.toml")
SUBNET = "10.213.78"  # a /24 on the bridge of the namespaces below, nowhere else


@pytest.fixture()
def four_hosts(tmp_path):
    """Rank 0 (the coordinator) and ranks 1..3 (the workers) in four namespaces on a bridge; the
    host file names their addresses. Everything is removed afterwards, on failure too."""
    need_root()
    need("ip")
    hosts = Namespaces(4, SUBNET)
    tag = uuid.uuid4().hex
    try:
        hosts.create()
        host_file = tmp_path / "hosts"
        host_file.write_text("".join(f"{a}  # rank {r}, namespace {n}\n"
                                     for r, (a, n) in enumerate(zip(hosts.addrs, hosts.names))))
        key = str(generate_keys(tmp_path / "keys"))
        yield hosts, host_file, key, tag, tmp_path
    finally:
        kill_tagged(tag)
        hosts.delete()


def _head(hosts: Namespaces, host_file, key: str, tag: str, tmp, scenario: str, *extra: str
          ) -> subprocess.Popen:
    prefix = hosts.names[0][:-1]  # "spin<n>r": ranks' namespaces are prefix + rank
    return subprocess.Popen(
        [*hosts.exec(0), sys.executable, "-m", "spin", "run", scenario, "--launcher", "hosts",
         "--hosts", str(host_file), "--ssh", f"ip netns exec {prefix}{{rank}}", "--key-file", key,
         *extra], env=job_env(tag, tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_hosts_launcher_puts_every_rank_in_its_own_namespace(four_hosts, tmp_path,
                                                              reduce_digest) -> None:
    hosts, host_file, key, tag, tmp = four_hosts
    out = tmp_path / "result.json"
    head = _head(hosts, host_file, key, tag, tmp, REDUCE, "--json", str(out))
    try:
        stdout, stderr = head.communicate(timeout=240)
    finally:
        if head.poll() is None:
            head.kill()
            head.wait()
    assert head.returncode == 0, stderr
    assert f"coordinates at tcp://{hosts.addrs[0]}:" in stdout, stdout
    running = next(line for line in stdout.splitlines() if "running on 3 workers" in line)
    for rank in (1, 2, 3):  # each worker on its own namespace's address, none on loopback
        assert f"rank {rank} on " in running and f"({hosts.addrs[rank]})" in running, running
    assert "127.0.0.1" not in running
    assert digest_of(out) == reduce_digest
    assert not left_behind(tag) and not hosts.pids()


def test_a_worker_whose_link_goes_down_is_named(four_hosts) -> None:
    hosts, host_file, key, tag, tmp = four_hosts
    head = _head(hosts, host_file, key, tag, tmp, LONG, "--silence-timeout-s", "5")
    try:
        read_until(head, "running on 3 workers")
        pid = next(p for p, env in tagged(tag).items() if "spin.parallel.worker_main" in
                   open(f"/proc/{p}/cmdline").read() and p in hosts_pids(hosts, 2))
        r = Namespaces.ip("-n", hosts.names[2], "link", "set", "eth0", "down")
        assert r.returncode == 0, r.stderr
        _, stderr = head.communicate(timeout=30)
    finally:
        if head.poll() is None:
            head.kill()
            head.wait()
    errors = [line for line in stderr.splitlines() if line.startswith("spin: error:")]
    assert len(errors) == 1, stderr
    assert re.search(rf"worker 1 \(rank 2, pid {pid} on \S+ \({re.escape(hosts.addrs[2])}\); "
                     rf"devices ", errors[0]), errors[0]
    # the coordinator hears no heartbeat from it (silence_timeout_s), or its process, a child
    # of `ip netns exec`, exits first since it hears none from the coordinator: either way the
    # line says in which round the run was
    assert ("sent no heartbeat for 5.0 s (silence_timeout_s) in round" in errors[0]
            or "it heard no heartbeat from the coordinator" in errors[0]), errors[0]
    assert re.search(r"in round \d+ at virtual time \d+ ps", errors[0]), errors[0]
    assert head.returncode == 2
    assert not wait_dead([pid], 5) and not left_behind(tag) and not hosts.pids()


def hosts_pids(hosts: Namespaces, rank: int) -> list[int]:
    r = Namespaces.ip("netns", "pids", hosts.names[rank])
    return [int(p) for p in r.stdout.split()]
