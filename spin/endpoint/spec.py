"""Which host ports of a fabric external programs attach to, and how: declared, then checked
against the scenario before any process starts.

An endpoint replaces a host's emulated program and NIC: frames the fabric delivers to that
host's port go to the attached program over ZeroMQ, and frames the program sends enter the
fabric at the host's link. ``lockstep`` makes the program a participant of the conservative
synchronisation (deterministic, identical for any worker count); ``realtime`` paces virtual
time to the wall clock for interactive use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlparse

from ..errors import ConfigError
from ..assembly.partition import link_lookahead_ps
from ..parallel.addresses import is_loopback

MODES = ("lockstep", "realtime")
ON_LAG = ("error", "warn")


@dataclass(frozen=True)
class EndpointSpec:
    """One external endpoint: ``host`` (a host name, e.g. "h3") is served at ``url``
    (``tcp://ADDR:PORT``, bound by the fabric; the program connects to it).

    ``realtime_factor`` is wall-clock seconds per virtual second (SimPy's RealtimeEnvironment
    factor): 1e4 runs 1 µs of virtual time in 10 ms. A realtime run stops with an error (or
    warns, ``on_lag = "warn"``) when the emulation falls behind the wall clock by more than
    ``max_lag_ms``. ``key_file`` (CurveZMQ, ``spin keys``) is required beyond loopback.
    """

    host: str
    url: str
    mode: str = "lockstep"
    realtime_factor: float = 1e4
    max_lag_ms: float = 500.0
    on_lag: str = "error"
    attach_timeout_s: float = 120.0    # for the program to connect (and, lockstep, to start)
    reply_timeout_s: float = 300.0     # lockstep: for the program to answer a round's frames
    key_file: str | None = None

    def __post_init__(self) -> None:
        where = f"endpoint {self.host}"
        if self.mode not in MODES:
            raise ConfigError(f"{where}: mode = {self.mode!r}; valid choices: {', '.join(MODES)}")
        if self.on_lag not in ON_LAG:
            raise ConfigError(f"{where}: on_lag = {self.on_lag!r}; valid choices: "
                              f"{', '.join(ON_LAG)}")
        for name in ("realtime_factor", "max_lag_ms", "attach_timeout_s", "reply_timeout_s"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{where}: {name} = {v!r}; must be a finite number > 0")
        bind_address(self.url, where)
        if self.key_file is None and not is_loopback_url(self.url):
            raise ConfigError(f"{where}: url = {self.url!r} listens beyond loopback; give "
                              f"key_file (CurveZMQ, create one with 'spin keys DIR') so only "
                              f"holders of the key can attach, or use tcp://127.0.0.1:PORT")


def bind_address(url: str, where: str = "endpoint") -> str:
    """``url`` checked to be ``tcp://ADDR:PORT`` with a port in 1..65535; returned as is."""
    try:
        parsed = urlparse(url)
        port = parsed.port
    except ValueError:
        port = None
        parsed = None
    if (parsed is None or parsed.scheme != "tcp" or not parsed.hostname or port is None
            or not 1 <= port <= 65535 or parsed.path not in ("", "/")):
        raise ConfigError(f"{where}: url = {url!r}; expected tcp://ADDR:PORT with a port in "
                          f"1..65535, e.g. tcp://127.0.0.1:5600")
    return url


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s address is a loopback address (no key needed there)."""
    return is_loopback(urlparse(url).hostname or "")


def parse_endpoint_arg(text: str, mode: str | None = None,
                       key_file: str | None = None) -> EndpointSpec:
    """``HOST=tcp://ADDR:PORT`` (the ``spin run --endpoint`` form); ``key_file`` (the run's
    ``--key-file``) authenticates programs attaching beyond loopback."""
    host, sep, url = text.partition("=")
    if not sep or not host or not url:
        raise ConfigError(f"--endpoint {text!r}: expected HOST=tcp://ADDR:PORT, e.g. "
                          f"h3=tcp://127.0.0.1:5600")
    url = bind_address(url.strip(), f"--endpoint {text!r}")
    return EndpointSpec(host=host.strip(), url=url, mode=mode or "lockstep",
                        key_file=None if is_loopback_url(url) else key_file)


@dataclass(frozen=True)
class AttachedEndpoint:
    """An endpoint resolved against a scenario: the host's node id, its link, the device at
    the other end (where the program's frames enter the fabric) and that link's lookahead."""

    spec: EndpointSpec
    node: int
    link: int
    peer_device: int
    lookahead_ps: int


def attach_endpoints(scenario, specs) -> tuple[AttachedEndpoint, ...]:
    """Check every endpoint against the scenario (ConfigError naming the host and the valid
    choices) and resolve it."""
    specs = tuple(specs or ())
    if not specs:
        return ()
    topo = scenario.topology
    names = topo.device_names()
    hosts = topo.hosts
    ports = topo.ports()
    look = link_lookahead_ps(scenario)
    out, seen_hosts, seen_urls = [], set(), set()
    for spec in specs:
        if not isinstance(spec, EndpointSpec):
            raise ConfigError(f"endpoints must be spin.endpoint.EndpointSpec, got "
                              f"{type(spec).__name__}")
        where = f"endpoint {spec.host}"
        if spec.host not in hosts:
            shown = ", ".join(hosts[:16]) + (", ..." if len(hosts) > 16 else "")
            raise ConfigError(f"{where}: no such host; hosts: {shown}")
        node = hosts.index(spec.host)
        if spec.host in seen_hosts:
            raise ConfigError(f"{where}: declared twice; one program attaches to a host")
        if spec.url in seen_urls:
            raise ConfigError(f"{where}: url {spec.url} is already used by another endpoint")
        seen_hosts.add(spec.host)
        seen_urls.add(spec.url)
        prog = scenario.host_programs.get(node)
        if prog is not None and len(prog.ops):
            raise ConfigError(f"{where}: host {spec.host} also has a host program; an attached "
                              f"program replaces the host (remove its host program)")
        if any(c.node in (node, spec.host) for c in scenario.contexts):
            raise ConfigError(f"{where}: host {spec.host} has an execution context; an attached "
                              f"program replaces the host's NIC (install handlers elsewhere)")
        links = ports[spec.host]
        if len(links) != 1:
            raise ConfigError(f"{where}: host {spec.host} has {len(links)} links; an endpoint "
                              f"attaches to a host with exactly one")
        link, peer = links[0]
        if any(link in (f.link, f.other) for f in scenario.faults):
            raise ConfigError(f"{where}: link {link} ({spec.host}-{peer}) has a [[fault]]; "
                              f"faults on an endpoint's link are not modelled")
        out.append(AttachedEndpoint(spec, node, link, names.index(peer), int(look[link])))
    return tuple(out)
