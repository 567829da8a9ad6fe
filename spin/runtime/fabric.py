"""Run a scenario on one or several worker processes, with results identical for any count.

With one worker the engine runs in-process. With N workers the devices are partitioned, each
worker process builds the engine for the whole scenario but owns only its devices, and frames
crossing workers travel as real bytes over ZeroMQ in conservative synchronisation rounds
(``spin.parallel``). Per-device results are merged by owner.
"""
from __future__ import annotations

from pathlib import Path

from ..assembly.built import build
from ..errors import ConfigError
from ..describe.payload_mode import check_payload_mode
from ..handler import ExecutionContext
from ..results import RunResult
from ..describe.scenario import Scenario
from .simulation import Simulation
from ..handler import same_program
from ..topology import Topology


def compile_engine(scenario: Scenario, quiet: bool = True) -> None:
    """Compile the engine and the scenario's handlers here, once, before workers start: they
    load both from the cache instead of compiling them side by side, and a handler that does
    not compile fails with the same error as in a one-process run. A two-host stand-in is
    enough: the engine does not depend on the fabric, and each handler is compiled on its own
    (cached; a second call costs milliseconds)."""
    programs = [p for p in scenario.programs()
                if any(same_program(c.program, p) for c in scenario.contexts)]
    # the scenario's engine settings, its table sizes (those of a large fabric) set back to the
    # defaults: a pair needs no 16 million frame slots
    sizes = ("buffer_slots", "queue_frames", "max_events_pending", "max_rx_messages",
             "max_tx_messages", "log_messages", "capture_frames")
    engine = scenario.engine.model_copy(
        update={f: type(scenario.engine).model_fields[f].default for f in sizes})
    probe = Scenario(Topology.pair(), engine=engine)
    for prog in programs:   # one stand-in context per program: its handlers get compiled
        probe.install(ExecutionContext(0, prog, match_qp=0))
    Simulation(probe, quiet=quiet).compile()


def check_worker_count(workers: int, n_devices: int, where: str = "workers",
                       remote_workers: int = 0) -> None:
    """Refuse a worker count before any process starts: each worker owns at least one device."""
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= n_devices:
        raise ConfigError(f"{where} = {workers!r}: must be 1..{n_devices} (a worker owns at least "
                          f"one of the topology's {n_devices} devices)")
    if not 0 <= remote_workers <= workers:
        raise ConfigError(f"remote_workers = {remote_workers}: must be 0..{workers} (the workers)")


def run_scenario(scenario: Scenario, workers: int = 1, *, pcap_dir: str | Path | None = None,
                 quiet: bool = True, partition: dict[str, int] | None = None,
                 timeout_s: float | None = None, bind: str = "127.0.0.1",
                 remote_workers: int = 0, key_file: str | None = None,
                 port: int = 0, regions: tuple[tuple[int, int, int], ...] = (),
                 endpoints=(), until_ps: int | None = None,
                 silence_timeout_s: float | None = None, launched=None,
                 join_timeout_s: float | None = None) -> RunResult:
    """Run ``scenario`` to completion and return its result.

    ``remote_workers`` of the ``workers`` are not spawned here: they join from other machines
    with ``spin worker --join tcp://HOST:PORT --key-file KEY``. Listening beyond loopback
    (``bind``) requires ``key_file`` (CurveZMQ; see ``spin keys``). Host-memory ``regions``
    (node, addr, nbytes) are returned in ``result.memory_regions`` as bytes, read with
    ``result.read(node, addr, count, dtype)``; handler memory of every execution context with
    ``result.handler_memory(ctx)``. ``endpoints`` (``spin.endpoint.EndpointSpec``) hand hosts
    to external programs, which attach while the run waits for them; ``until_ps`` (one worker
    only) stops the run at that virtual time. A worker that sends no heartbeat for
    ``silence_timeout_s`` (default 15 s; stopped, wedged or lost) ends the run with a
    WorkerError naming it. ``launched`` (``spin.parallel.coordinator.Launched``) is set by
    ``spin run --launcher``: the workers are ranks of a Slurm, MPI or host-file job, which
    wait ``join_timeout_s`` (default 60 s) for each other once the coordinator listens.
    """
    check_worker_count(workers, len(scenario.topology.device_names()),
                       remote_workers=remote_workers)
    check_payload_mode(scenario, regions)   # before any process starts or any event runs
    attached = ()
    if endpoints:   # their checks' module is loaded only when a run has endpoints
        from ..endpoint.spec import attach_endpoints
        attached = attach_endpoints(scenario, endpoints)
    if until_ps is not None and (workers != 1 or remote_workers):
        raise ConfigError(f"until_ps with workers = {workers}: a time limit is only supported "
                          f"with 1 worker")
    if workers == 1 and remote_workers == 0:
        if attached:
            from .fabric_workers import run_in_process
            return run_in_process(scenario, pcap_dir=pcap_dir, regions=tuple(regions),
                                  endpoints=attached, until_ps=until_ps)
        sim = Simulation(build(scenario, quiet=quiet), quiet=quiet)
        result = sim.run(pcap_dir=pcap_dir, quiet=quiet, until_ps=until_ps)
        result.memory_regions = {(n, a, k): sim.host_memory(n)[a:a + k].tobytes()
                                 for n, a, k in regions}
        return result
    if remote_workers == 0 and launched is None:   # every part on this machine: all of it
        from ..describe.limits import check_fits_in_memory
        check_fits_in_memory(scenario)    # here, not in a worker after the others started
    compile_engine(scenario, quiet=quiet)
    from .fabric_workers import run_partitioned
    return run_partitioned(scenario, workers, pcap_dir=pcap_dir, quiet=quiet,
                           partition=partition, timeout_s=timeout_s, bind=bind,
                           remote_workers=remote_workers, key_file=key_file, port=port,
                           regions=regions, endpoints=attached,
                           silence_timeout_s=silence_timeout_s, launched=launched,
                           join_timeout_s=join_timeout_s)
