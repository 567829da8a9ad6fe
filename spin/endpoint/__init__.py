"""External endpoints: real programs attached to host ports of a running fabric over ZeroMQ.

``EndpointSpec`` declares one (``run_scenario(..., endpoints=[...])``, ``spin run --endpoint
h3=tcp://127.0.0.1:5600`` or ``[[endpoint]]`` in a scenario file); ``Endpoint`` is the client a
program uses to attach, send and receive Ethernet frames (scapy scripts work as well).
"""
from importlib import import_module

from .spec import MODES, EndpointSpec, parse_endpoint_arg

__all__ = ["MODES", "Endpoint", "EndpointSpec", "parse_endpoint_arg"]


def __getattr__(name: str):
    """``Endpoint`` on first use (PEP 562): a run that only checks for endpoints does not start
    ZeroMQ."""
    if name == "Endpoint":
        return import_module(".client", __name__).Endpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
