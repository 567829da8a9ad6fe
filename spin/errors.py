"""The exception hierarchy: every error the emulator raises on purpose derives from SpinError.

Messages name the offending value and, where there is a finite set, the valid choices; a host
is named as ``host_label`` writes it.
"""


def host_label(node: int, name: str = "") -> str:
    """A host as errors name it: the user's name first, then the node id the wire uses."""
    return f"{name!r} (node {node})" if name else f"node {node}"


class SpinError(Exception):
    """Base of every error raised by spin on purpose."""


class ConfigError(SpinError):
    """A configuration or scenario value is invalid (names the field, value and valid choices)."""


class HostMemoryError(ConfigError):
    """Host memory is smaller than a workload's or collective's buffers; ``needed_bytes`` is
    the size that fits, so a caller may grow the memory instead of parsing the message."""

    def __init__(self, message: str, needed_bytes: int):
        super().__init__(message)
        self.needed_bytes = needed_bytes


class TopologyError(ConfigError):
    """The topology cannot be built or routed (unknown device, unreachable destination...)."""


class HandlerError(SpinError):
    """A handler has a wrong signature, or failed while processing a packet."""


class HandlerCompileError(HandlerError):
    """A handler does not compile: names the handler, its file and line, and a hint."""


class RunIncompleteError(SpinError):
    """A run ended with host programs still waiting: names the hosts and what they wait for."""


class WireError(SpinError):
    """A frame could not be built or parsed (used by tools; the engine counts drops instead)."""


class StateLayoutError(SpinError):
    """An engine table declaration is inconsistent (a column declared twice, a bad width)."""


class TransportError(SpinError):
    """ZeroMQ transport failure: a peer timed out, was refused, or sent a foreign batch."""


class WorkerError(SpinError):
    """A worker process of a multi-process run failed; names the worker and its devices."""


class RunStopped(SpinError):
    """A run was stopped from outside (SIGTERM: ``scancel``, a job's time limit, or a launcher
    ending the job after one of its tasks died); names what the run was waiting for."""


class OffloadAssertionError(SpinError, AssertionError):
    """An offload-benefit assertion failed; the message holds the side-by-side table."""


class DeterminismError(SpinError, AssertionError):
    """The same scenario gave different results with different worker counts (a bug in spin)."""


class MissingExtraError(SpinError, ImportError):
    """An optional feature needs a package that is not installed: names the pip extra."""


class EndpointError(SpinError):
    """An external endpoint did not attach or answer in time, went away, or the emulation fell
    behind the wall clock in real-time mode; names the endpoint's host and address."""


class TraceError(ConfigError):
    """A training trace cannot be read or replayed: names the file, the node and the problem."""
