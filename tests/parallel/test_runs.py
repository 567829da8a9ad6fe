"""Multi-process runs: determinism across worker counts, remote joiners, CurveZMQ."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import TOY, child_env, wait_dead
from toy_program import ToySpec, make_program, merged_devices

from spin.errors import ConfigError
from spin.parallel import Coordinator, CoordinatorConfig, run_fabric, run_single
from spin.parallel.auth import generate_keys

SPEC = ToySpec(n_devices=8, n_tokens=16, hops=80)


def _reference() -> dict:
    p = make_program(SPEC, 0, 1)
    run_single(p)
    return merged_devices([p.result()])


def test_identical_results_for_1_to_4_workers() -> None:
    ref = _reference()
    rounds = {}
    for n in (1, 2, 3, 4):
        out = run_fabric(TOY, SPEC, n_workers=n, timeout_s=60)
        assert merged_devices(out.results) == ref, f"{n} workers differ"
        assert sum(r["events"] for r in out.results) == SPEC.n_tokens * SPEC.hops
        assert len(out.results) == n and [w.worker_id for w in out.workers] == list(range(n))
        assert out.workers[0].description.startswith("toy devices")
        if n > 1:
            assert out.transport["frames_sent"] == out.transport["frames_received"] > 0
            assert out.transport["foreign_dropped"] == 0
        rounds[n] = out.rounds
    assert rounds[1] == 1 and rounds[2] > 1  # 1 worker: no crossing link, one window


def test_until_ps_stops_every_worker_at_the_same_round() -> None:
    out = run_fabric(TOY, SPEC, n_workers=2, until_ps=30_000, timeout_s=60)
    assert out.end_ps >= 30_000
    assert 0 < sum(r["events"] for r in out.results) < SPEC.n_tokens * SPEC.hops


def _start_worker(endpoint: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "spin.parallel.worker_main", "--join", endpoint, *extra],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_workers_started_elsewhere_join_over_tcp(tmp_path) -> None:
    key = str(generate_keys(tmp_path / "run"))
    cfg = CoordinatorConfig(allow_remote=2, timeout_s=60, join_timeout_s=30, key_file=key)
    with Coordinator(cfg) as coord:
        procs = [_start_worker(coord.endpoint, "--key-file", key) for _ in range(2)]
        try:
            out = coord.run(TOY, SPEC, n_workers=3)  # 1 local + 2 remote
        finally:
            codes = [p.wait(timeout=15) for p in procs]
    assert codes == [0, 0]
    assert merged_devices(out.results) == _reference()
    assert {w.pid for w in out.workers[1:]} == {p.pid for p in procs}


def test_non_loopback_bind_requires_keys() -> None:
    with pytest.raises(ConfigError, match="CurveZMQ"):
        Coordinator(CoordinatorConfig(bind="0.0.0.0"))


def test_curve_run_refuses_a_worker_without_the_key(tmp_path) -> None:
    key = generate_keys(tmp_path / "run")
    other = generate_keys(tmp_path / "intruder")
    cfg = CoordinatorConfig(bind="0.0.0.0", key_file=str(key), allow_remote=1, timeout_s=60)
    with Coordinator(cfg) as coord:
        endpoint = coord.endpoint.replace("0.0.0.0", "127.0.0.1")
        wrong = _start_worker(endpoint, "--key-file", str(other), "--join-timeout-s", "2")
        plain = _start_worker(endpoint, "--join-timeout-s", "2")
        time.sleep(0.3)  # the intruders knock first
        good = _start_worker(endpoint, "--key-file", str(key))
        try:
            out = coord.run(TOY, SPEC, n_workers=2)  # 1 local + 1 remote, all under CURVE
        finally:
            rc_good = good.wait(timeout=15)
            results = [(p.wait(timeout=15), p.stderr.read()) for p in (wrong, plain)]
    assert rc_good == 0
    assert merged_devices(out.results) == _reference()
    for rc, err in results:
        assert rc == 2, err
        assert endpoint in err and "key" in err, err
    assert not wait_dead([wrong.pid, plain.pid, good.pid], 5)


def test_zap_refuses_a_client_key_that_is_not_the_runs(tmp_path) -> None:
    """A client that knows the server's public key but holds another keypair is refused by ZAP."""
    import zmq
    import zmq.auth

    key = generate_keys(tmp_path / "run")
    run_public, _ = zmq.auth.load_certificate(str(key))
    other_public, other_secret = zmq.auth.load_certificate(str(generate_keys(tmp_path / "other")))
    with Coordinator(CoordinatorConfig(key_file=str(key))) as coord:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.SNDTIMEO, 1000)
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = run_public, other_public, other_secret
        sock.connect(coord.endpoint)
        try:
            with pytest.raises(zmq.Again):
                sock.send_multipart([b"hello", b"{}"])
        finally:
            sock.close(0)
            ctx.term()


def test_bad_factory_and_main_module_spec_are_reported() -> None:
    from spin.errors import WorkerError

    with pytest.raises(WorkerError, match="worker 0 .*ConfigError.*no_such_module"):
        run_fabric("no_such_module:make", SPEC, n_workers=1, timeout_s=30)
    main_cls = type("Local", (), {"__module__": "__main__"})
    import __main__
    __main__.Local = main_cls
    try:
        with pytest.raises(ConfigError, match="__main__"):
            run_fabric(TOY, main_cls(), n_workers=1, timeout_s=30)
    finally:
        del __main__.Local


def test_progress_bar_runs(capsys) -> None:
    out = run_fabric(TOY, SPEC, n_workers=2, timeout_s=60, quiet=False, until_ps=10**9)
    assert len(out.results) == 2


def test_a_deferred_spec_is_built_while_the_workers_start() -> None:
    from spin.parallel import Deferred

    out = run_fabric(TOY, Deferred(lambda: SPEC), n_workers=2, timeout_s=60)
    assert merged_devices(out.results) == _reference()

    def broken() -> ToySpec:
        raise ConfigError("no partition for this topology")

    with pytest.raises(ConfigError, match="no partition"):
        run_fabric(TOY, Deferred(broken), n_workers=2, timeout_s=60)
