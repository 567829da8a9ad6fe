"""External endpoints: real programs attached to host ports of a running fabric over ZeroMQ.

``EndpointSpec`` declares one (``run_scenario(..., endpoints=[...])``, ``spin run --endpoint
h3=tcp://127.0.0.1:5600`` or ``[[endpoint]]`` in a scenario file); ``Endpoint`` is the client a
program uses to attach, send and receive Ethernet frames (scapy scripts work as well).
"""
from .client import Endpoint
from .spec import MODES, EndpointSpec, parse_endpoint_arg

__all__ = ["MODES", "Endpoint", "EndpointSpec", "parse_endpoint_arg"]
