"""Which listening addresses stay on this machine: loopback needs no keys (CurveZMQ), anything
else does. Apart from the coordinator so that checking an endpoint's address does not import
ZeroMQ."""
from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IPv4/IPv6 address (brackets allowed)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
