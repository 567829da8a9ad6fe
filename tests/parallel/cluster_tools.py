"""Real cluster tools for the launcher tests: a one-node Slurm (munged with its own key,
slurmctld, slurmd) in a scratch folder on non-default ports, network namespaces joined by a
bridge, and the processes of a launched job found by a tag in their environment.

Nothing here installs anything. A missing tool skips the test with one line saying which,
unless SPIN_REQUIRE_CLUSTER_TESTS=1 (set by .ci/run): then it fails, so CI cannot pass by
skipping. Every daemon, process and namespace is stopped by pid or name by whoever started it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, alive, wait_dead

REQUIRE = os.environ.get("SPIN_REQUIRE_CLUSTER_TESTS") == "1"
TAG_VAR = "SPIN_TEST_TAG"


def unavailable(reason: str) -> None:
    """Skip, or fail when CI requires the cluster tests (SPIN_REQUIRE_CLUSTER_TESTS=1)."""
    if REQUIRE:
        pytest.fail(f"SPIN_REQUIRE_CLUSTER_TESTS=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def need_root() -> None:
    if os.geteuid() != 0:
        unavailable("needs root (daemons, namespaces)")


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        unavailable(f"needs {', '.join(missing)} (apt-get install slurm-wlm munge openmpi-bin "
                    f"iproute2)")


def job_env(tag: str, tmp: Path, **extra: str) -> dict[str, str]:
    """Environment of a launched job: spin from this checkout, a tag to find its processes, and
    the test's own temporary folder (what a SIGKILLed process leaves there goes with it)."""
    env = dict(os.environ, TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env[TAG_VAR] = tag
    env.update(extra)
    return env


def tagged(tag: str) -> dict[int, dict[str, str]]:
    """pid -> environment of every live process (zombies excluded) whose environment has the tag."""
    out = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            raw = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"{TAG_VAR}={tag}".encode() not in raw.split(b"\0"):
            continue
        if alive(int(entry.name)):
            env = dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)
            out[int(entry.name)] = env
    return out


def left_behind(tag: str, timeout_s: float = 5.0) -> dict[int, str]:
    """pid -> command line of the tagged processes still alive after ``timeout_s`` (a job's
    processes take a moment to be reaped once its launcher has returned)."""
    survivors = wait_dead(list(tagged(tag)), timeout_s)
    out = {}
    for pid in survivors:
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            pass
    return out


def spin_ranks(tag: str, rank_var: str) -> dict[int, int]:
    """rank -> pid of the tagged spin processes (the python started by the launcher)."""
    ranks = {}
    for pid, env in tagged(tag).items():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"spin" in cmd and rank_var in env:
            ranks[int(env[rank_var])] = pid
    return ranks


def kill_tagged(tag: str) -> list[int]:
    """SIGKILL what a failed test left behind; returns the pids that had to be killed."""
    pids = list(tagged(tag))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_dead(pids, 5.0)
    return pids


def wait_for_line(path_or_proc, needle: str, timeout_s: float) -> str:
    """Wait until a file (a batch job's log) holds a line with ``needle``; returns it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            for line in Path(path_or_proc).read_text().splitlines():
                if needle in line:
                    return line
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no line with {needle!r} in {path_or_proc} within {timeout_s} s")


def read_until(proc: subprocess.Popen, needle: str) -> list[str]:
    """Lines of ``proc.stdout`` up to and including the first one with ``needle`` (the process's
    own timeout bounds the wait: it ends, and stdout with it)."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"{needle!r} never printed; output: {''.join(lines)}")


def digest_of(json_path: Path) -> str:
    from spin.results import RunResult
    return RunResult.from_dict(json.loads(Path(json_path).read_text())).deterministic_digest()


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def stop(proc: subprocess.Popen | None, grace_s: float = 5.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Slurm:
    """A one-node Slurm in ``scratch``: the node is this machine (its short host name, its CPU
    count), with OverSubscribe so 4 tasks run on 2 cores; ports are free ones, not 6817/6818."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.host = socket.gethostname().split(".")[0]
        self.procs: list[subprocess.Popen] = []
        self.conf = scratch / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def start(self) -> None:
        s = self.scratch
        for d in ("munge", "state", "spool", "log"):
            (s / d).mkdir(parents=True, exist_ok=True)
        os.chmod(s / "munge", 0o700)
        key = s / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = s / "munge" / "munge.socket"
        self._daemon(["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
                      f"--pid-file={s / 'munge' / 'munged.pid'}", f"--seed-file={s / 'munge' / 'seed'}",
                      f"--log-file={s / 'log' / 'munged.log'}"])
        self._wait(lambda: sock.exists(), "munged's socket", s / "log" / "munged.log")
        ctld_port, d_port = free_ports(2)
        self.conf.write_text("\n".join([
            "ClusterName=spintest", f"SlurmctldHost={self.host}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
            f"SlurmctldPort={ctld_port}", f"SlurmdPort={d_port}",
            f"StateSaveLocation={s / 'state'}", f"SlurmdSpoolDir={s / 'spool'}",
            f"SlurmctldPidFile={s / 'slurmctld.pid'}", f"SlurmdPidFile={s / 'slurmd.pid'}",
            f"SlurmctldLogFile={s / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={s / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none", "ReturnToService=2", "KillWait=5",
            f"NodeName={self.host} CPUs={os.cpu_count()} State=UNKNOWN",
            f"PartitionName=spin Nodes={self.host} Default=YES MaxTime=INFINITE State=UP "
            f"OverSubscribe=YES", ""]))
        self._daemon(["slurmctld", "-D", "-i"])
        self._daemon(["slurmd", "-D", "-N", self.host])
        self._wait(self._node_ready, f"node {self.host} to be idle", s / "log" / "slurmctld.log")

    def _daemon(self, cmd: list[str]) -> None:
        log = open(self.scratch / "log" / f"{cmd[0]}.out", "wb")
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=log,
                                           stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()

    def _node_ready(self) -> bool:
        r = self.run(["sinfo", "-h", "-n", self.host, "-o", "%T"], check=False)
        state = r.stdout.strip()
        if state.startswith(("down", "drain", "inval")):
            self.run(["scontrol", "update", f"nodename={self.host}", "state=resume"], check=False)
        return state.startswith("idle")

    def _wait(self, ready, what: str, log: Path, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode} before {what}:\n"
                                       f"{self._logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"no {what} within {timeout_s} s:\n{self._logs()}")

    def _logs(self) -> str:
        out = []
        for f in sorted((self.scratch / "log").glob("*")):
            out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(out)

    def run(self, cmd: list[str], check: bool = True, timeout_s: float = 30.0,
            **kw) -> subprocess.CompletedProcess:
        r = subprocess.run(cmd, env=kw.pop("env", self.env), capture_output=True, text=True,
                           timeout=timeout_s, **kw)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
        return r

    def wait_job(self, job_id: str, timeout_s: float) -> str:
        """The job's final state (COMPLETED, FAILED, CANCELLED...), polled every 0.2 s:
        ``sbatch --wait`` polls at growing intervals, up to half a minute late."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            r = self.run(["scontrol", "-o", "show", "job", job_id], check=False)
            state = next((w.split("=", 1)[1] for w in r.stdout.split() if w.startswith("JobState=")),
                         "")
            if state and state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                return state
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not end within {timeout_s} s")

    def jobs(self) -> list[str]:
        return self.run(["squeue", "-h", "-o", "%i"], check=False).stdout.split()

    def stop(self) -> None:
        """Cancel every job, then stop slurmd, slurmctld and munged, and whatever process still
        runs with this cluster's SLURM_CONF (a job step's slurmstepd) - all by pid."""
        if self.procs and self.procs[-1].poll() is None:
            self.run(["scancel", "--full", "--user=root"], check=False)
            deadline = time.monotonic() + 20
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.2)
        for p in reversed(self.procs):
            stop(p)
        mine = f"SLURM_CONF={self.conf}".encode()
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if mine in (entry / "environ").read_bytes().split(b"\0"):
                        left.append(int(entry.name))
                except OSError:
                    pass
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_dead(left, 5.0)


class Namespaces:
    """Network namespaces made by a test: one per rank, each with one veth whose other end is
    on a bridge inside a namespace of its own, so the host's interfaces stay untouched; the
    addresses (a /24 private to these namespaces) exist nowhere else."""

    def __init__(self, n: int, subnet: str = "10.213.77") -> None:
        tag = f"{os.getpid() % 100000}"
        self.switch = f"spin{tag}sw"
        self.names = [f"spin{tag}r{r}" for r in range(n)]
        self.addrs = [f"{subnet}.{r + 1}" for r in range(n)]
        self.made: list[str] = []

    @staticmethod
    def ip(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)

    def create(self) -> None:
        for ns in (self.switch, *self.names):
            r = self.ip("netns", "add", ns)
            if r.returncode != 0:
                unavailable(f"cannot create network namespace {ns}: {r.stderr.strip()}")
            self.made.append(ns)
        steps = [("-n", self.switch, "link", "add", "br0", "type", "bridge"),
                 ("-n", self.switch, "link", "set", "br0", "up")]
        for r, (ns, addr) in enumerate(zip(self.names, self.addrs)):
            steps += [("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{r}",
                       "netns", self.switch),
                      ("-n", self.switch, "link", "set", f"p{r}", "master", "br0"),
                      ("-n", self.switch, "link", "set", f"p{r}", "up"),
                      ("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"),
                      ("-n", ns, "link", "set", "eth0", "up"),
                      ("-n", ns, "link", "set", "lo", "up")]
        for step in steps:
            r = self.ip(*step)
            if r.returncode != 0:
                unavailable(f"cannot build the namespaces' network: ip {' '.join(step)}: "
                            f"{r.stderr.strip()}")

    def exec(self, rank: int) -> list[str]:
        return ["ip", "netns", "exec", self.names[rank]]

    def pids(self) -> list[int]:
        out = []
        for ns in self.made:
            r = self.ip("netns", "pids", ns)
            out += [int(p) for p in r.stdout.split()]
        return out

    def delete(self) -> None:
        """Kill what still runs inside (by pid), then delete every namespace (veths go with them)."""
        left = self.pids()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_dead(left, 5.0)
        for ns in reversed(self.made):
            self.ip("netns", "del", ns)
        self.made = []
